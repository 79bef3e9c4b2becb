/*
 * fuzz_config.c -- libFuzzer target for configuration parsing: the input is
 * "NAME=VALUE" (or a bare value tried against every known variable). Each
 * check must accept, or refuse with one line that names the variable; the
 * size parser must never accept what it cannot represent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/config.h"

static const char *const names[] = {
    "ACCELTRACE_SPOOL_DIR",     "ACCELTRACE_BUFFER_SIZE", "ACCELTRACE_CHUNK_SIZE",
    "ACCELTRACE_DRAIN_TIMEOUT", "ACCELTRACE_HOOKS",       "ACCELTRACE_CAPTURE_RANGE",
    "ACCELTRACE_DELAY",         "ACCELTRACE_DURATION",    "ACCELTRACE_LOG",
    "ACCELTRACE_LIBRARY_DIR",   "ACCELTRACE_TRACE_MODE",  "ACCELTRACE_SOURCES",
    "ACCELTRACE_NOT_A_SETTING",
};

static void check(const char *name, const char *value)
{
    char err[1024] = "";
    int rc = act_config_check_var(name, value, err, sizeof(err));
    if (rc == ACT_E_CONFIG && (!strstr(err, name) || strchr(err, '\n')))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0'; /* an embedded NUL just ends the string, as in environ */
    char *eq = strchr(s, '=');
    if (eq && eq != s) {
        *eq = '\0';
        check(s, eq + 1);
    } else {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            check(names[i], s);
    }
    uint64_t v;
    if (act_config_parse_size(s, &v) == 0 && strlen(s) == 0)
        abort();
    free(s);
    return 0;
}
