/*
 * emit.c -- correlation ids and the convenience writers sources use (API
 * calls, arguments, error lines).
 */
#include <stdarg.h>
#include <stdio.h>

#include <string.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

static _Atomic uint64_t next_corr = 1;

/* ---- ids -------------------------------------------------------------- */

uint64_t act_corr_next(void)
{
    return atomic_fetch_add_explicit(&next_corr, 1, memory_order_relaxed);
}

/* ---- convenience writers ---------------------------------------------- */

int act_rec_api_emit(const char *name, uint64_t start, uint64_t end, uint64_t corr, uint64_t ext,
                     int32_t result, uint32_t source)
{
    uint32_t id = act_str_intern_literal(name);
    act_rec_api *r = act_rec_reserve(ACT_REC_API, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = id;
    r->start = start;
    r->end = end;
    r->corr = corr;
    r->ext = ext;
    r->result = result;
    r->source = source;
    act_rec_commit();
    return 0;
}

int act_rec_arg_emit(const char *key, uint32_t type, uint64_t bits, const char *str)
{
    uint32_t k = act_str_intern_literal(key);
    if (type == ACT_RECARG_STR) {
        bits = act_str_intern_cstr(str);
        if (!bits)
            return -1;
    }
    act_rec_arg *r = act_rec_reserve(ACT_REC_ARG, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = k;
    r->type = type;
    r->pad = 0;
    r->v.u = bits;
    act_rec_commit();
    return 0;
}

int act_rec_arg_emit_vec(const char *key, uint32_t type, const uint64_t *v, uint32_t n)
{
    if (n > ACT_RECARG_U64V_MAX)
        n = ACT_RECARG_U64V_MAX;
    uint32_t k = key ? act_str_intern_literal(key) : 0; /* LAUNCH needs none */
    act_rec_arg *r = act_rec_reserve(ACT_REC_ARG, sizeof(*r) + n * sizeof(uint64_t));
    if (!r)
        return -1;
    r->h.aux = k;
    r->type = type;
    r->pad = 0;
    r->v.u = n;
    if (n)
        memcpy(r + 1, v, n * sizeof(uint64_t));
    act_rec_commit();
    return 0;
}

int act_rec_error_emit(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof(buf)) /* cut: on a character boundary */
        buf[act_rec_utf8_cut(buf, sizeof(buf) - 1, sizeof(buf) - 1)] = '\0';
    uint32_t id = act_str_intern_cstr(buf);
    act_rec_ts *r = act_rec_reserve(ACT_REC_ERROR, sizeof(*r));
    if (!r)
        return -1;
    r->h.aux = id;
    r->ts = act_clock_now();
    act_rec_commit();
    return 0;
}
