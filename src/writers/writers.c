/*
 * writers.c -- the table of output formats (see writer.h): which writer a
 * trace gets, chosen by the end of the output's name. A new format is one
 * file that defines its act_writer_ops (declared in writer.h) and a row
 * here.
 */
#include <string.h>

#include "writer.h"

typedef struct writer_row {
    const char *suffix; /* the name ends so; "" matches any name */
    const act_writer_ops *ops;
    unsigned options; /* ACT_WRITER_* handed to it in the facts */
} writer_row;

/* First match wins. A name ending in ".gz" gets a gzip stream, as
 * torch.profiler's export_chrome_trace does for such names (HTA, the
 * TensorBoard plugin and Perfetto read it); ".sqlite" a SQLite database
 * (docs/sqlite.md); ".pftrace" or ".perfetto-trace" Perfetto's protobuf
 * trace (docs/pftrace.md); any other name the JSON. */
static const writer_row writer_table[] = {
    {".sqlite", &act_writer_sqlite, 0},
    {".pftrace", &act_writer_pftrace, 0},
    {".perfetto-trace", &act_writer_pftrace, 0},
    {".gz", &act_writer_chrome_json, ACT_WRITER_GZIP},
    {"", &act_writer_chrome_json, 0},
};

static int name_ends_with(const char *path, const char *suffix)
{
    size_t n = strlen(path), m = strlen(suffix);
    return n > m && !strcmp(path + n - m, suffix);
}

size_t act_writers_pick(const char *path, int report, act_writer_pick *out)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(writer_table) / sizeof(writer_table[0]); i++) {
        if (name_ends_with(path, writer_table[i].suffix) || !writer_table[i].suffix[0]) {
            out[n++] = (act_writer_pick){writer_table[i].ops, writer_table[i].options};
            break;
        }
    }
    if (report)
        out[n++] = (act_writer_pick){&act_writer_summary, 0};
    return n;
}
