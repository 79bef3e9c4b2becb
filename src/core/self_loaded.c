/*
 * self_loaded.c -- which vendor runtimes acceltrace loaded itself (the
 * runtime table answering a question: device counts, memory), as opposed
 * to the program. A source deciding whether the program uses a vendor
 * must not count those (core/common.h). Lock-free: a few slots, each
 * claimed once by compare-and-swap; the keys are static strings.
 */
#include <stdatomic.h>
#include <string.h>

#include "core/common.h"

static const char *_Atomic self_loaded[8];

int act_self_loaded(const char *key)
{
    for (size_t i = 0; i < sizeof(self_loaded) / sizeof(self_loaded[0]); i++) {
        const char *v = atomic_load(&self_loaded[i]);
        if (v && !strcmp(v, key))
            return 1;
    }
    return 0;
}

void act_self_loaded_note(const char *key)
{
    for (size_t i = 0; key && i < sizeof(self_loaded) / sizeof(self_loaded[0]); i++) {
        const char *none = NULL;
        if (atomic_compare_exchange_strong(&self_loaded[i], &none, key))
            return;
        if (!strcmp(atomic_load(&self_loaded[i]), key))
            return;
    }
}
