/*
 * dist.c -- rank detection from launcher variables and output name
 * templates (see dist.h).
 */
#include "dist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acceltrace.h"
#include "internal.h"
#include "record.h"

/* A non-negative decimal integer, or -1. */
static long env_long(act_env_fn get, const char *name)
{
    const char *v = name ? get(name) : NULL;
    if (!v || !*v)
        return -1;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < 0)
        return -1;
    return x;
}

void act_dist_detect(act_dist_info *d, act_env_fn get)
{
    /* rank, size, local rank variables of each launcher, in order */
    static const struct {
        const char *launcher, *rank, *size, *local;
    } kinds[] = {
        {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
        {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
        {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
        {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    };
    *d = (act_dist_info){0, -1, -1, -1, NULL};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        long rank = env_long(get, kinds[i].rank);
        if (rank < 0)
            continue;
        d->known = 1;
        d->rank = rank;
        d->world_size = env_long(get, kinds[i].size);
        d->local_rank = env_long(get, kinds[i].local);
        d->launcher = kinds[i].launcher;
        return;
    }
}

int act_dist_json(const act_dist_info *d, char *buf, size_t n)
{
    int len = snprintf(buf, n, "{\"rank\":%ld", d->rank);
    if (d->local_rank >= 0 && len >= 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, ",\"local_rank\":%ld", d->local_rank);
    if (d->world_size >= 0 && len >= 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, ",\"world_size\":%ld", d->world_size);
    if (d->launcher && len >= 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, ",\"launcher\":\"%s\"", d->launcher);
    if (len >= 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, "}");
    return len;
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

static void record_meta(const char *key, const char *value, uint32_t flags)
{
    uint32_t k = act_str_intern_cstr(key);
    uint32_t v = act_str_intern_cstr(value);
    if (!k || !v)
        return;
    act_rec_metadata *r = act_rec_reserve(ACT_REC_METADATA, sizeof(*r));
    if (!r)
        return;
    r->h.aux = k;
    r->value = v;
    r->is_json = flags;
    act_rec_commit();
}

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One wall-clock reading between two of the timeline clock
 * (CLOCK_MONOTONIC_RAW), the tightest of a few; error: half the bracket.
 * `acceltrace merge` aligns traces of different hosts through it. */
static void record_anchor(void)
{
    int64_t best = INT64_MAX, mono = 0, wall = 0;
    for (int i = 0; i < 5; i++) {
        int64_t a = clock_ns(CLOCK_MONOTONIC_RAW), r = clock_ns(CLOCK_REALTIME),
                c = clock_ns(CLOCK_MONOTONIC_RAW);
        if (c - a < best) {
            best = c - a;
            mono = a + (c - a) / 2;
            wall = r;
        }
    }
    char json[160];
    snprintf(json, sizeof(json), "{\"monotonic_ns\":%lld,\"realtime_ns\":%lld,\"error_ns\":%lld}",
             (long long)mono, (long long)wall, (long long)((best + 1) / 2));
    record_meta(ACT_ANCHOR_META_KEY, json, ACT_META_INTERNAL | ACT_META_JSON);
}

void act_dist_record(void)
{
    record_anchor();
    act_dist_info d;
    act_dist_detect(&d, env_get);
    char json[256];
    if (d.known && act_dist_json(&d, json, sizeof(json)) < (int)sizeof(json))
        record_meta("distributedInfo", json, ACT_META_JSON | ACT_META_AUTO);
    const char *tmpl = getenv("ACCELTRACE_OUTPUT_TEMPLATE");
    char name[4096], err[128];
    if (tmpl && *tmpl &&
        act_outname_expand(tmpl, (unsigned)getpid(), NULL, &d, env_get, name, sizeof(name), err,
                           sizeof(err)) == 0)
        record_meta(ACT_OUTNAME_META_KEY, name, ACT_META_INTERNAL);
}

int act_outname_is_template(const char *s)
{
    return s && strchr(s, '%') != NULL;
}

/* Appends s[0..len) at *at; -1 when it does not fit. */
static int put(char *out, size_t n, size_t *at, const char *s, size_t len)
{
    if (*at + len >= n)
        return -1;
    memcpy(out + *at, s, len);
    *at += len;
    out[*at] = '\0';
    return 0;
}

int act_outname_expand(const char *tmpl, unsigned pid, const char *host, const act_dist_info *d,
                       act_env_fn get, char *out, size_t n, char *err, size_t errlen)
{
    size_t at = 0;
    char tmp[256];
    if (n)
        out[0] = '\0';
    for (const char *p = tmpl; *p; p++) {
        int rc;
        if (*p != '%') {
            rc = put(out, n, &at, p, 1);
        } else if (p[1] == '%') {
            rc = put(out, n, &at, "%", 1);
            p++;
        } else if (p[1] == 'p') {
            snprintf(tmp, sizeof(tmp), "%u", pid);
            rc = put(out, n, &at, tmp, strlen(tmp));
            p++;
        } else if (p[1] == 'h') {
            if (!host) {
                if (gethostname(tmp, sizeof(tmp) - 1) != 0)
                    snprintf(tmp, sizeof(tmp), "localhost");
                tmp[sizeof(tmp) - 1] = '\0';
            } else {
                snprintf(tmp, sizeof(tmp), "%s", host);
            }
            rc = put(out, n, &at, tmp, strlen(tmp));
            p++;
        } else if (p[1] == 'r') {
            if (d && d->known)
                snprintf(tmp, sizeof(tmp), "%ld", d->rank);
            else
                snprintf(tmp, sizeof(tmp), "pid%u", pid);
            rc = put(out, n, &at, tmp, strlen(tmp));
            p++;
        } else if (p[1] == 'q' && p[2] == '{') {
            const char *close = strchr(p + 3, '}');
            if (!close || close == p + 3 || (size_t)(close - p - 3) >= sizeof(tmp)) {
                snprintf(err, errlen, "'%%q{' wants a variable name and a closing '}'");
                return -1;
            }
            snprintf(tmp, sizeof(tmp), "%.*s", (int)(close - p - 3), p + 3);
            const char *v = get(tmp);
            rc = put(out, n, &at, v ? v : "", v ? strlen(v) : 0);
            p = close;
        } else {
            snprintf(err, errlen, "unknown '%%%c' (allowed: %%p %%h %%r %%q{VAR} %%%%)",
                     p[1] ? p[1] : ' ');
            return -1;
        }
        if (rc) {
            snprintf(err, errlen, "the expanded name is too long");
            return -1;
        }
    }
    if (!at) {
        snprintf(err, errlen, "the expanded name is empty");
        return -1;
    }
    return 0;
}
