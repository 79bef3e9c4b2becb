/*
 * spool_dump.c -- test helper: print every record of the spool files in a
 * directory as JSON lines (strings as hex, so Python compares bytes), plus
 * one line per file with the header's counters. Built on the independent
 * walker of the unit tests, not on the timeline reader, so the annotation
 * tests can check the spool until (and besides) the trace builder.
 */
#include <dirent.h>

#include "annotate_collect.h"

static void hex(const char *key, cstring s)
{
    printf(",\"%s\":\"", key);
    for (uint32_t i = 0; s.p && i < s.len; i++)
        printf("%02x", (unsigned char)s.p[i]);
    printf("\"");
}

static const char *kind_name(uint16_t k)
{
    static const char *names[] = {"pad",   "segment",   "thread",  "string",  "push",
                                  "pop",   "start",     "end",     "mark",    "counter",
                                  "api",   "device_op", "device",  "queue",   "metadata",
                                  "clock", "error",     "capture", "extcorr", "arg"};
    return k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

static int dump(const char *path)
{
    collect *c = collect_spool(path);
    if (!c)
        return -1;
    const act_spool_header *h = c->ws.hdr;
    printf("{\"kind\":\"header\",\"pid\":%u,\"flags\":%u,\"torn\":%llu,\"unbalanced_pops\":%llu",
           h->pid, h->flags, (unsigned long long)c->ws.torn,
           (unsigned long long)h->unbalanced_pops);
    printf(",\"outside\":{");
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        printf("%s\"%s\":%llu", k ? "," : "", kind_name((uint16_t)k),
               (unsigned long long)h->outside_window[k]);
    printf("},\"dropped\":{");
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        printf("%s\"%s\":%llu", k ? "," : "", kind_name((uint16_t)k),
               (unsigned long long)h->dropped[k]);
    printf("}}\n");
    for (size_t i = 0; i < c->n; i++) {
        const cevent *e = &c->ev[i];
        printf("{\"kind\":\"%s\",\"serial\":%u,\"aux\":%u,\"ts\":%llu,\"id\":%llu,\"value\":%.17g,"
               "\"type\":%u",
               kind_name(e->kind), e->serial, e->aux, (unsigned long long)e->ts,
               (unsigned long long)e->id, e->value, e->is_json);
        hex("name", e->name);
        hex("str", e->value_s);
        printf("}\n");
    }
    collect_free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: spool_dump DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d)
        return 1;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".acts"))
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
        if (dump(path) != 0)
            rc = 1;
    }
    closedir(d);
    return rc;
}
