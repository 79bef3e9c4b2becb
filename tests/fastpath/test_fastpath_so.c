/*
 * test_fastpath_so.c -- through the shared library, with no tool attached:
 * the first annotation asks start-up once, which clears the hint that the
 * inline wrappers of acceltrace.h read, so later annotations return
 * ACT_E_DISABLED without entering the library. Fails if the program reads a
 * copy of the hint that the library never writes (what an exported int
 * gives a PIE program with copy relocations and a -Bsymbolic library).
 */
#include <stdio.h>
#include <stdlib.h>

#include "acceltrace.h"

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "test_fastpath_so: %s:%d: %s\n", __FILE__, __LINE__, #c);              \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    unsetenv("ACCELTRACE_SPOOL_DIR");
    CHECK(*act__idle_ptr == 0); /* nothing asked yet: enter the library */
    CHECK(act_range_push("first") == ACT_E_DISABLED);
    CHECK(*act__idle_ptr == 1); /* start-up found no tool */
    CHECK(act_range_pop() == ACT_E_DISABLED);
    CHECK((act_range_push)("exported") == ACT_E_DISABLED);
    CHECK(!act_is_enabled());
    return 0;
}
