/*
 * fuzz_summary.c -- libFuzzer target: any bytes as the trace file given to
 * `acceltrace summary`. Loading must succeed or fail with a one-line
 * reason (the command then exits 2), never crash or leak; what loads is
 * printed as the command would.
 */
#include <string.h>
#include <unistd.h>

#include "../fuzz_input.h"
#include "summary_load.h"
#include "writers/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024] = "";
    fuzz_file(data, size, path, sizeof(path));
    act_summary *s = act_summary_new();
    if (!s)
        abort();
    if (act_summary_load_json(s, path, err, sizeof(err), NULL, NULL) == 0) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            act_summary_print(s, null, 1);
            fclose(null);
        }
    } else if (!err[0] || strchr(err, '\n')) {
        abort();
    }
    act_summary_free(s);
    return 0;
}
