/*
 * cmd_summary.c -- `acceltrace summary [--by-range] TRACE.json`: the
 * summary table of an existing Chrome trace, acceltrace's own or one
 * exported by torch.profiler (object or bare-array form). Any unreadable
 * input is one line on stderr and exit status 2.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "writers/summary.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace summary [--by-range] TRACE.json\n"
               "\n"
               "Print, per name, for device ops and for host calls: count, total, mean,\n"
               "min and max time and share of busy time, sorted by total; then the\n"
               "trace's drop, skew and outstanding-callback counters.\n"
               "\n"
               "  --by-range   also attribute device time to the range (External id)\n"
               "               that launched it\n"
               "  -h, --help   show this help\n"
               "\n"
               "Reads acceltrace traces and traces exported by torch.profiler.\n"
               "Exit status: 0, or 2 when the file is missing or not a trace.\n");
}

int act_cmd_summary(int argc, char **argv)
{
    int by_range = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--by-range")) {
            by_range = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--") && i + 1 < argc && !path) {
            path = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "acceltrace summary: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "acceltrace summary: one trace file expected, got '%s' too\n", argv[i]);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "acceltrace summary: missing TRACE.json (see --help)\n");
        return 2;
    }
    act_summary *s = act_summary_new();
    if (!s) {
        fprintf(stderr, "acceltrace summary: out of memory\n");
        return 2;
    }
    char err[1024];
    json_t *root = NULL;
    if (act_summary_load_json(s, path, &root, err, sizeof(err))) {
        fprintf(stderr, "acceltrace summary: %s\n", err);
        act_summary_free(s);
        return 2;
    }
    act_summary_print(s, stdout, by_range);
    act_summary_free(s);
    json_decref(root);
    return 0;
}
