/*
 * reader_decode.c -- what the spool reader's inline decoder (reader_int.h)
 * calls out of line: the smallest size of each record kind, a problem
 * kept for the report, a string defined or looked up past the cache, a
 * thread noted. Apart from reader.c so that the decoder's header and the
 * files that include it call one way.
 */
#include "reader_types.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/vec.h"

/* Smallest size of a record of each kind (larger is accepted: fields
 * appended by a later writer are ignored). */
const uint32_t act_rd_min_size[ACT_REC_KIND_MAX] = {
    [ACT_REC_PAD] = sizeof(act_rec_hdr),
    [ACT_REC_SEGMENT] = sizeof(act_rec_segment),
    [ACT_REC_THREAD] = sizeof(act_rec_thread),
    [ACT_REC_STRING] = sizeof(act_rec_string),
    [ACT_REC_RANGE_PUSH] = sizeof(act_rec_ts),
    [ACT_REC_RANGE_POP] = sizeof(act_rec_ts),
    [ACT_REC_RANGE_START] = sizeof(act_rec_range_id),
    [ACT_REC_RANGE_END] = sizeof(act_rec_range_id),
    [ACT_REC_MARK] = sizeof(act_rec_ts),
    [ACT_REC_COUNTER] = sizeof(act_rec_counter),
    [ACT_REC_API] = sizeof(act_rec_api),
    [ACT_REC_DEVICE_OP] = sizeof(act_rec_device_op),
    [ACT_REC_DEVICE] = sizeof(act_rec_device),
    [ACT_REC_QUEUE] = sizeof(act_rec_queue),
    [ACT_REC_METADATA] = sizeof(act_rec_metadata),
    [ACT_REC_CLOCK] = sizeof(act_rec_clock),
    [ACT_REC_ERROR] = sizeof(act_rec_ts),
    [ACT_REC_CAPTURE] = sizeof(act_rec_ts),
    [ACT_REC_EXTCORR] = sizeof(act_rec_extcorr),
    [ACT_REC_ARG] = sizeof(act_rec_arg),
};

void act_rd_problem(act_spool *sp, const char *fmt, ...)
{
    sp->n_problems++;
    if (sp->n_errors >= ACT_SPOOL_MAX_ERRORS)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t len = strlen(sp->path) + strlen(msg) + 3;
    char *line = malloc(len);
    char **ne = realloc(sp->errors, (sp->n_errors + 1) * sizeof(*ne));
    if (!line || !ne) {
        free(line);
        if (ne)
            sp->errors = ne;
        return;
    }
    snprintf(line, len, "%s: %s", sp->path, msg);
    sp->errors = ne;
    sp->errors[sp->n_errors++] = line;
}

int act_rd_str_define(reader *rd, uint32_t serial, uint32_t id, const char *p, uint32_t n)
{
    if (act_vec_reserve(rd->strs, rd->cap_strs, rd->n_strs + 1, 256))
        return ACT_E_NOMEM;
    rd->strs[rd->n_strs] = (act_str){p, n};
    rd->n_strs++;
    rd->hits[id & (STR_HITS - 1)].key = 0; /* a redefinition replaces the old one */
    return act_u64map_put(&rd->strings, (uint64_t)serial << 32 | id, rd->n_strs);
}

act_str act_rd_str_get_slow(reader *rd, uint32_t serial, uint32_t id, uint64_t key,
                            struct str_hit *c)
{
    uint64_t v;
    if (act_u64map_get(&rd->strings, key, &v)) {
        *c = (struct str_hit){key, (size_t)v - 1};
        return rd->strs[v - 1];
    }
    rd->unknown_strings++;
    if (rd->unknown_strings <= 3)
        rd_problem(rd, "thread serial %u: string id %u used before it was defined", serial, id);
    static const char unknown[] = "(unknown string)";
    return (act_str){unknown, sizeof(unknown) - 1};
}

/* Threads stay sorted by serial: a live walk (act_spool_live_next) looks
 * them up while it is still adding them. */
int act_rd_thread_set(act_spool *sp, uint32_t serial, uint32_t tid, act_str name)
{
    size_t i = 0;
    while (i < sp->n_threads && sp->threads[i].serial < serial)
        i++;
    if (i < sp->n_threads && sp->threads[i].serial == serial) {
        sp->threads[i].tid = tid;
        sp->threads[i].name = name;
        return 0;
    }
    act_sp_thread *nt = realloc(sp->threads, (sp->n_threads + 1) * sizeof(*nt));
    if (!nt)
        return ACT_E_NOMEM;
    sp->threads = nt;
    memmove(&nt[i + 1], &nt[i], (sp->n_threads - i) * sizeof(*nt));
    nt[i] = (act_sp_thread){serial, tid, name};
    sp->n_threads++;
    return 0;
}
