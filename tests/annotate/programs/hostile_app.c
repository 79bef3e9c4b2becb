/*
 * hostile_app.c -- annotates with every string of a file (NUL-separated):
 * each one becomes a range name, a mark, a counter name, a metadata key and
 * value, and a JSON-valued metadata member. The strings come from the test
 * (check_hostile.py), which then compares them with the spool and the trace.
 */
#include <acceltrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 2;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    int i = 0;
    for (size_t off = 0; off < n; off += strlen(buf + off) + 1, i++) {
        const char *s = buf + off;
        if (act_range_push(s) != ACT_OK || act_range_pop() != ACT_OK)
            return 3;
        act_mark(s);
        act_counter(s, i);
        if (act_metadata_set(s, s) != ACT_OK)
            return 4;
    }
    /* A JSON value whose strings are hostile too. */
    if (act_metadata_set_json("json-member", "{\"a\\\"b\": [\"\\u2028\", \"\\\\\", 1.5e3]}") !=
        ACT_OK)
        return 5;
    return 0;
}
