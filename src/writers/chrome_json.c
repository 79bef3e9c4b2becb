/*
 * chrome_json.c -- Chrome trace writer (see chrome_json.h). One pass over
 * the events into a large buffer with hand-formatted numbers; the
 * "acceltrace" object comes after traceEvents so that it can report how
 * many invalid UTF-8 sequences the events contained. The output file's
 * life (temporary file, mode, --force, rename) is outfile.c's.
 */
#include "chrome_json.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/dist.h"
#include "core/internal.h"
#include "core/record.h"
#include "core/vec.h"
#include "json_escape.h"
#include "outfile.h"

#ifndef ACT_VERSION
#define ACT_VERSION ACT_VERSION_STRING
#endif

typedef struct esc_slot esc_slot;

#define KEY_MEMO 16 /* arg positions remembered per category (the rest share the last) */

typedef struct writer {
    act_timeline *tl;
    act_obuf *b;
    size_t invalid;
    int err;       /* sticky ACT_E_NOMEM of the writer's own */
    char **errors; /* the writer's own error lines (bad user metadata) */
    size_t n_errors, cap_errors;
    uint64_t errors_unlisted;
    esc_slot *esc; /* cache of escaped event strings; NULL: none */
    size_t events; /* events written so far */
    /* ',"cat":"name"' of each category, escaped once */
    char cat_txt[ACT_CAT_MAX][48];
    uint8_t cat_len[ACT_CAT_MAX];
    /* ',"pid":P,"tid":T' of the lanes written last (a few alternate);
     * two-way: a lane is in slot h or h ^ 1 (cache_slot) */
    struct lane_txt {
        uint32_t pid, tid;
        uint8_t no_tid, len; /* len 0: empty */
        char txt[48];
    } lanes[64];
    /* ',"key":' of arg keys, by address (see write_key), two-way too */
    struct key_txt {
        const char *p;
        uint32_t n;
        uint8_t len; /* 0: empty */
        uint8_t invalid;
        char txt[58];
    } keys[64];
    /* the keys slot each arg position of a category's events used last:
     * events of one kind list the same keys in the same order */
    uint8_t key_memo[ACT_CAT_MAX][KEY_MEMO];
} writer;

static void writer_init(writer *w, act_timeline *tl, act_obuf *b);

/* An error line of the writer's own, listed after the timeline's (within
 * the same limit of ACT_TL_MAX_ERRORS listed lines). */
static void writer_error(writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void writer_error(writer *w, const char *fmt, ...)
{
    if (w->tl->n_errors + w->n_errors >= ACT_TL_MAX_ERRORS) {
        w->errors_unlisted++;
        return;
    }
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    char *line = strdup(tmp);
    if (!line || act_vec_reserve(w->errors, w->cap_errors, w->n_errors + 1, 4)) {
        free(line);
        w->err = ACT_E_NOMEM;
        return;
    }
    w->errors[w->n_errors++] = line;
}

static void writer_free_errors(writer *w)
{
    for (size_t i = 0; i < w->n_errors; i++)
        free(w->errors[i]);
    free(w->errors);
    w->errors = NULL;
    w->n_errors = w->cap_errors = 0;
}

static void wstr(writer *w, const char *s, size_t n)
{
    w->invalid += act_json_string(w->b, s, n);
}

static void wcstr(writer *w, const char *s)
{
    wstr(w, s, strlen(s));
}

/* ---- events ----------------------------------------------------------- */

/* The event loop formats into the buffer through a cursor: one reserve
 * per event (and per string) instead of one per field, and numbers are
 * written straight into place. EV_ROOM covers an event's fixed members
 * (the separator before it and the args' opening included)
 * and each arg's fixed part (at most three 20-digit numbers and their
 * punctuation) plus the fixed-size copies of cached pieces; strings
 * reserve their own room, but for the event's name when it is cached (an
 * ESC_MAX copy, reserved with EV_ROOM). */
#define EV_ROOM  224
#define ARG_ROOM 128

static const char digits2[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                 "31323334353637383940414243444546474849505152535455565758596061"
                                 "62636465666768697071727374757677787980818283848586878889909192"
                                 "93949596979899";

static const uint64_t pow10_u64[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};

/* The number of digits first (from the bit length: 1233/4096 ~ log10 2),
 * then the digits straight into place from the end, four per division:
 * no scratch copy. */
static inline __attribute__((always_inline)) char *cur_u64(char *p, uint64_t v)
{
    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    unsigned t = (unsigned)(64 - __builtin_clzll(v)) * 1233 >> 12;
    unsigned nd = t + 1 - (v < pow10_u64[t]);
    char *end = p + nd, *q = end;
    while (v >= 10000) {
        unsigned r = (unsigned)(v % 10000);
        v /= 10000;
        q -= 4;
        memcpy(q, digits2 + r / 100 * 2, 2);
        memcpy(q + 2, digits2 + r % 100 * 2, 2);
    }
    if (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        q -= 2;
        memcpy(q, digits2 + d, 2);
    }
    if (v >= 10) {
        q -= 2;
        memcpy(q, digits2 + v * 2, 2);
    } else {
        *--q = (char)('0' + v);
    }
    return end;
}

/* ".ddd" for each nanosecond remainder 1..999, trailing zeros cut, and
 * its length in the fifth byte: the fraction of a time is one fixed copy. */
#define FRAC_C(a, b, c)                                                                            \
    {                                                                                              \
        '.', '0' + (a), '0' + (b), '0' + (c), (c) ? 4 : (b) ? 3 : 2                                \
    }
#define FRAC_B(a, b)                                                                               \
    FRAC_C(a, b, 0), FRAC_C(a, b, 1), FRAC_C(a, b, 2), FRAC_C(a, b, 3), FRAC_C(a, b, 4),           \
        FRAC_C(a, b, 5), FRAC_C(a, b, 6), FRAC_C(a, b, 7), FRAC_C(a, b, 8), FRAC_C(a, b, 9)
#define FRAC_A(a)                                                                                  \
    FRAC_B(a, 0), FRAC_B(a, 1), FRAC_B(a, 2), FRAC_B(a, 3), FRAC_B(a, 4), FRAC_B(a, 5),            \
        FRAC_B(a, 6), FRAC_B(a, 7), FRAC_B(a, 8), FRAC_B(a, 9)
static const char frac_txt[1000][5] = {FRAC_A(0), FRAC_A(1), FRAC_A(2), FRAC_A(3), FRAC_A(4),
                                       FRAC_A(5), FRAC_A(6), FRAC_A(7), FRAC_A(8), FRAC_A(9)};

/* Nanoseconds as microseconds with the fewest decimals that keep every
 * nanosecond: "12.345", "12.34", "12.3", "12" (no trailing zeros: JSON
 * readers take a number, and a fraction of whole microseconds is most
 * often zeros on device clocks and round durations). */
static inline char *cur_us(char *p, int64_t ns)
{
    uint64_t u = (uint64_t)ns;
    if (ns < 0) {
        *p++ = '-';
        u = (uint64_t)0 - (uint64_t)ns;
    }
    uint64_t whole = u / 1000;
    unsigned f = (unsigned)(u - whole * 1000);
    p = cur_u64(p, whole);
    if (!f)
        return p;
    memcpy(p, frac_txt[f], 4);
    return p + frac_txt[f][4];
}

#define CUR_LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* JSON has no integer limit, but common readers (jansson, JavaScript)
 * stop at 2^63 - 1: larger arg values are written as decimal strings so
 * that nothing is lost and every reader still parses the trace. */
static inline __attribute__((always_inline)) char *cur_u64_arg(char *p, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        return cur_u64(p, v);
    *p++ = '"';
    p = cur_u64(p, v);
    *p++ = '"';
    return p;
}

static inline char *cur_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return cur_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return cur_u64(p, (uint64_t)v);
}

/* Escaped strings of events, cached by address: the names, keys and
 * string values of events are timeline strings (the mapped spool, the
 * timeline's arena, literals) that do not change or move while the
 * writer runs, so one address and length always escape to the same bytes
 * and the same count of invalid sequences. Only event strings go through
 * the cache (never stack buffers or lines added while writing). */
#define ESC_SLOTS   512
#define ESC_MAX_SRC 40 /* escaping at most sextuples a byte: fits ESC_MAX */
#define ESC_MAX     52

typedef struct esc_slot {
    const char *p;
    uint32_t n;
    uint8_t len; /* escaped bytes, quotes included */
    uint8_t invalid;
    char esc[ESC_MAX - 2];
} esc_slot;

static inline esc_slot *esc_slot_of(writer *w, const char *s, size_t n)
{
    uint64_t h = ((uint64_t)(uintptr_t)s ^ n) * 0x9e3779b97f4a7c15ull;
    return &w->esc[(h >> 40) & (ESC_SLOTS - 1)];
}

/* The cached escape of an event string, or NULL. */
static inline const esc_slot *esc_hit(writer *w, const char *s, size_t n)
{
    if (!w->esc)
        return NULL;
    const esc_slot *e = esc_slot_of(w, s, n);
    return e->p == s && e->n == n && e->len ? e : NULL;
}

static void wstr_event(writer *w, const char *s, size_t n)
{
    if (!w->esc || n > ESC_MAX_SRC) {
        wstr(w, s, n);
        return;
    }
    esc_slot *e = esc_slot_of(w, s, n);
    act_obuf *b = w->b;
    if (e->p == s && e->n == n && e->len) {
        /* a fixed-size copy (no call); the bytes past len are scratch */
        if (act_obuf_reserve(b, sizeof(e->esc)))
            return;
        memcpy(b->buf + b->len, e->esc, sizeof(e->esc));
        b->len += e->len;
        w->invalid += e->invalid;
        return;
    }
    /* Room for the worst case first, so that no flush happens between
     * writing the string and copying it into the slot. */
    if (act_obuf_reserve(b, n * 6 + 2))
        return;
    size_t at = b->len;
    size_t inv = act_json_string(b, s, n);
    w->invalid += inv;
    size_t len = b->len - at;
    if (b->err || len > sizeof(e->esc) || inv > 255)
        return;
    e->p = s;
    e->n = (uint32_t)n;
    e->len = (uint8_t)len;
    e->invalid = (uint8_t)inv;
    memcpy(e->esc, b->buf + at, len);
}

/* Arg value through the cursor; strings go through wstr_event. */
static void write_arg_value(writer *w, const act_tl_arg *a)
{
    act_obuf *b = w->b;
    if (a->type == ACT_ARG_STR) {
        wstr_event(w, a->v.s.p, a->v.s.n);
        return;
    }
    if (a->type == ACT_ARG_U64V) {
        act_obuf_putc(b, '[');
        for (uint32_t i = 0; i < a->v.vec.n; i++) {
            uint64_t v;
            memcpy(&v, a->v.vec.p + i, sizeof v);
            if (i)
                act_obuf_putc(b, ',');
            act_obuf_u64(b, v);
        }
        act_obuf_putc(b, ']');
        return;
    }
    if (act_obuf_reserve(b, ARG_ROOM))
        return;
    char *p = b->buf + b->len;
    switch (a->type) {
    case ACT_ARG_U64: p = cur_u64_arg(p, a->v.u); break;
    case ACT_ARG_I64: p = cur_i64(p, a->v.i); break;
    case ACT_ARG_F64: act_obuf_f64(b, a->v.d); return;
    case ACT_ARG_HEX:
        *p++ = '"';
        b->len = (size_t)(p - b->buf);
        act_obuf_hex(b, a->v.u);
        act_obuf_putc(b, '"');
        return;
    case ACT_ARG_U64X3:
        *p++ = '[';
        p = cur_u64_arg(p, a->v.v3[0]);
        *p++ = ',';
        p = cur_u64_arg(p, a->v.v3[1]);
        *p++ = ',';
        p = cur_u64_arg(p, a->v.v3[2]);
        *p++ = ']';
        break;
    case ACT_ARG_BOOL: p = a->v.u ? CUR_LIT(p, "true") : CUR_LIT(p, "false"); break;
    default: p = CUR_LIT(p, "null"); break;
    }
    b->len = (size_t)(p - b->buf);
}

/* The slot of `key` in a cache of `n` slots (a power of two): the high
 * bits of a multiplicative hash. The caches are two-way, slot i or i ^ 1,
 * so that two hot keys that share a slot do not evict each other on every
 * event (the keys of one device op did, 80 000 misses in 200 000 events). */
static inline size_t cache_index(uint64_t key, size_t n)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (n - 1);
}

/* An arg's key with its separators, ',"key":' (no comma for the first):
 * a few keys (mostly literals of the builder) recur on every event, so
 * the whole piece is cached by the key's address, like wstr_event's
 * strings and under the same rule (event strings only). */
static inline int key_in(const struct key_txt *k, act_str key)
{
    return k->p == key.p && k->n == key.n && k->len;
}

/* The cached piece of `key`: first the slot this arg position used last
 * (*memo), then the key's two ways; NULL when it is not cached. */
static inline const struct key_txt *key_cached(writer *w, act_str key, uint8_t *memo)
{
    const struct key_txt *k = &w->keys[*memo];
    if (key_in(k, key))
        return k;
    size_t i = cache_index((uintptr_t)key.p ^ key.n, 64);
    if (!key_in(&w->keys[i], key) && !key_in(&w->keys[i ^= 1], key))
        return NULL;
    *memo = (uint8_t)i;
    return &w->keys[i];
}

/* A key that is not cached: escaped and written, and cached in one of its
 * two ways (an empty one first) when it is an event string (w->esc). */
static void write_key_slow(writer *w, act_str key, int first)
{
    act_obuf *b = w->b;
    struct key_txt *k = NULL;
    if (w->esc) {
        size_t i = cache_index((uintptr_t)key.p ^ key.n, 64);
        k = &w->keys[i];
        if (k->len && !w->keys[i ^ 1].len)
            k = &w->keys[i ^ 1];
    }
    /* Room for all of it first: no flush may move the bytes before they
     * are copied into the slot (wstr_event reserves at most this). */
    size_t room = (size_t)key.n * 6 + 2 > 64 ? (size_t)key.n * 6 + 2 : 64;
    if (act_obuf_reserve(b, room + 2))
        return;
    if (!first)
        act_obuf_putc(b, ',');
    size_t at = b->len, inv = w->invalid;
    wstr_event(w, key.p, key.n);
    size_t len = b->len - at;
    act_obuf_putc(b, ':');
    inv = w->invalid - inv;
    if (!k || b->err || len + 2 > sizeof(k->txt) || inv > 255)
        return;
    k->txt[0] = ',';
    memcpy(k->txt + 1, b->buf + at, len);
    k->txt[len + 1] = ':';
    k->p = key.p;
    k->n = key.n;
    k->len = (uint8_t)(len + 2);
    k->invalid = (uint8_t)inv;
}

/* The args object's members (write_event writes the braces). A cached
 * key and an integer value, the common case, go through the cursor with
 * one reserve; anything else takes the general path. */
static void write_args(writer *w, const act_tl_event *e)
{
    act_obuf *b = w->b;
    const act_tl_arg *a = &w->tl->args[e->arg0];
    const uint32_t n = e->nargs;
    uint8_t *memo = w->key_memo[e->cat < ACT_CAT_MAX ? e->cat : 0];
    for (uint32_t i = 0; i < n; i++, a++) {
        const struct key_txt *k =
            w->esc ? key_cached(w, a->key, &memo[i < KEY_MEMO ? i : KEY_MEMO - 1]) : NULL;
        if (!k) {
            write_key_slow(w, a->key, i == 0);
        } else {
            if (act_obuf_reserve(b, sizeof(k->txt) + ARG_ROOM))
                return;
            char *p = b->buf + b->len;
            memcpy(p, k->txt + (i == 0), sizeof(k->txt) - 1);
            p += k->len - (i == 0);
            w->invalid += k->invalid;
            if (a->type == ACT_ARG_U64) {
                b->len = (size_t)(cur_u64_arg(p, a->v.u) - b->buf);
                continue;
            }
            b->len = (size_t)(p - b->buf);
        }
        write_arg_value(w, a);
    }
}

/* ',"pid":P' and, unless no_tid, ',"tid":T', from the small cache of
 * lanes written last; copies a fixed 48 bytes (scratch past the end). */
static char *put_lane(writer *w, char *p, uint32_t pid, uint32_t tid, int no_tid)
{
    size_t i = cache_index((uint64_t)pid << 32 | tid, 64);
    struct lane_txt *l = &w->lanes[i];
    if (!(l->len && l->pid == pid && l->tid == tid && l->no_tid == no_tid)) {
        struct lane_txt *o = &w->lanes[i ^ 1];
        if (!o->len || (o->pid == pid && o->tid == tid && o->no_tid == no_tid))
            l = o; /* the other way: its lane, or empty */
    }
    if (!l->len || l->pid != pid || l->tid != tid || l->no_tid != no_tid) {
        char tmp[96];
        char *q = CUR_LIT(tmp, ",\"pid\":");
        q = cur_u64(q, pid);
        if (!no_tid) {
            q = CUR_LIT(q, ",\"tid\":");
            q = cur_u64(q, tid);
        }
        *l = (struct lane_txt){pid, tid, (uint8_t)no_tid, (uint8_t)(q - tmp), {0}};
        memcpy(l->txt, tmp, l->len);
    }
    memcpy(p, l->txt, sizeof(l->txt));
    return p + l->len;
}

/* One event; `sep`: the ",\n" that follows the one before. */
static void write_event(writer *w, const act_tl_event *e, int sep)
{
    act_obuf *b = w->b;
    if (act_obuf_reserve(b, EV_ROOM + ESC_MAX))
        return;
    char *p = b->buf + b->len;
    if (sep)
        p = CUR_LIT(p, ",\n");
    p = CUR_LIT(p, "{\"ph\":\"X\"");
    p[-2] = e->ph;
    if (e->cat && e->cat < ACT_CAT_MAX && w->cat_len[e->cat]) {
        memcpy(p, w->cat_txt[e->cat], sizeof(w->cat_txt[0]));
        p += w->cat_len[e->cat];
    } else if (e->cat) {
        p = CUR_LIT(p, ",\"cat\":");
        b->len = (size_t)(p - b->buf);
        wstr_event(w, act_cat_name(e->cat), strlen(act_cat_name(e->cat)));
        if (act_obuf_reserve(b, EV_ROOM + ESC_MAX))
            return;
        p = b->buf + b->len;
    }
    p = CUR_LIT(p, ",\"name\":");
    const esc_slot *nm = esc_hit(w, e->name.p, e->name.n);
    if (nm) { /* the common case: a fixed-size copy, room reserved above */
        memcpy(p, nm->esc, sizeof(nm->esc));
        p += nm->len;
        w->invalid += nm->invalid;
    } else {
        b->len = (size_t)(p - b->buf);
        wstr_event(w, e->name.p, e->name.n);
        if (act_obuf_reserve(b, EV_ROOM))
            return;
        p = b->buf + b->len;
    }
    p = put_lane(w, p, e->pid, e->tid, (e->flags & ACT_EVF_NO_TID) != 0);
    if (e->ph != 'M') {
        p = CUR_LIT(p, ",\"ts\":");
        p = cur_us(p, (int64_t)(e->ts - w->tl->base_ns));
    }
    switch (e->ph) {
    case 'X':
        p = CUR_LIT(p, ",\"dur\":");
        p = cur_us(p, (int64_t)e->dur);
        break;
    case 's':
    case 'f':
    case 'b':
    case 'e':
        p = CUR_LIT(p, ",\"id\":");
        p = cur_u64(p, e->id);
        if (e->flags & ACT_EVF_BP_E)
            p = CUR_LIT(p, ",\"bp\":\"e\"");
        break;
    case 'i': p = CUR_LIT(p, ",\"s\":\"t\""); break;
    default: break;
    }
    /* Chrome's reserved colour for failures (Perfetto keeps the arg). */
    if (e->flags & ACT_EVF_ERROR)
        p = CUR_LIT(p, ",\"cname\":\"terrible\"");
    if (!e->nargs) {
        *p++ = '}';
        b->len = (size_t)(p - b->buf);
        return;
    }
    p = CUR_LIT(p, ",\"args\":{");
    b->len = (size_t)(p - b->buf);
    write_args(w, e);
    act_obuf_lit(b, "}}");
}

/* ---- top-level members ------------------------------------------------ */

static const char *const reserved[] = {"schemaVersion",       "traceName",        "displayTimeUnit",
                                       "baseTimeNanoseconds", "deviceProperties", "traceEvents",
                                       "acceltrace"};

static int is_reserved(const char *k, size_t n)
{
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strlen(reserved[i]) == n && !memcmp(reserved[i], k, n))
            return 1;
    return 0;
}

typedef struct kv {
    const char *k, *v;
    size_t kn, vn;
    int is_json;
    int replaced; /* a later entry has the same key */
} kv;

static void write_member_value(writer *w, const kv *m)
{
    if (m->is_json) {
        json_error_t jerr;
        json_t *doc = json_loadb(m->v, m->vn, JSON_DECODE_ANY, &jerr);
        /* distributedInfo as kineto spaces it ("rank": 1): HTA finds a
         * trace's rank with a regular expression that wants the space. */
        char *spaced =
            doc && m->kn == 15 && !memcmp(m->k, "distributedInfo", 15)
                ? json_dumps(doc, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY)
                : NULL;
        if (spaced) {
            act_obuf_puts(w->b, spaced);
            free(spaced);
            json_decref(doc);
            return;
        }
        if (doc) {
            json_decref(doc);
            act_obuf_put(w->b, m->v, m->vn); /* validated: emitted raw */
            return;
        }
        /* Valid JSON with an integer beyond 64 bits (the API accepts it):
         * many readers (jansson, `acceltrace summary`) refuse such a
         * number, so it is written as a real number, and said. */
        doc = json_loadb(m->v, m->vn, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &jerr);
        char *real = doc ? json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER |
                                               JSON_REAL_PRECISION(17))
                         : NULL;
        json_decref(doc);
        if (real) {
            act_obuf_puts(w->b, real);
            free(real);
            writer_error(w,
                         "metadata '%.*s': an integer beyond 64 bits was written as a real number",
                         (int)(m->kn > 200 ? 200 : m->kn), m->k);
            return;
        }
        writer_error(w, "metadata '%.*s': value is not valid JSON (%s); written as a string",
                     (int)(m->kn > 200 ? 200 : m->kn), m->k, jerr.text);
    }
    wstr(w, m->v, m->vn);
}

/* --metadata KEY=VALUE: a VALUE that is a JSON object or array (first
 * non-blank byte '{' or '[') and parses is stored as JSON, so that
 * distributedInfo={"rank": 1} is the object kineto's readers expect; any
 * other value, numbers and true/false included, stays a string (a version
 * "1.10" must not become 1.1). */
static int cli_value_is_json(const char *v)
{
    while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
        v++;
    if (*v != '{' && *v != '[')
        return 0;
    json_error_t jerr;
    json_t *doc = json_loads(v, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc)
        return 0;
    json_decref(doc);
    return 1;
}

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = *(kv *const *)a, *y = *(kv *const *)b;
    size_t n = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->k, y->k, n);
    if (c || x->kn != y->kn)
        return c ? c : (x->kn < y->kn ? -1 : 1);
    return x < y ? -1 : x > y; /* by position: the last one wins */
}

/* Mark every entry that a later one with the same key replaces; sorting
 * keeps this O(n log n) however many records a spool holds. */
static int mark_replaced(kv *all, size_t m)
{
    kv **order = malloc((m ? m : 1) * sizeof(*order));
    if (!order)
        return ACT_E_NOMEM;
    for (size_t i = 0; i < m; i++)
        order[i] = &all[i];
    if (m)
        qsort(order, m, sizeof(*order), kv_cmp);
    for (size_t i = 0; i + 1 < m; i++)
        if (order[i]->kn == order[i + 1]->kn && !memcmp(order[i]->k, order[i + 1]->k, order[i]->kn))
            order[i]->replaced = 1;
    free(order);
    return 0;
}

static int key_is(const act_str *k, const char *key, size_t kn)
{
    return k->n == kn && !memcmp(k->p, key, kn);
}

/* Whether the auto-detected entry i (distributedInfo from launcher
 * variables) is written: not when the user set the key, and not when the
 * processes of this trace detected different values (several ranks in one
 * trace: each keeps its own only in a trace of its own, run -o '...%r...'). */
static int auto_kept(writer *w, const act_chrome_opts *o, size_t i)
{
    const act_timeline *tl = w->tl;
    const act_tl_meta *a = &tl->meta[i];
    for (size_t e = 0; o->extra_metadata && o->extra_metadata[e]; e++) {
        const char *eq = strchr(o->extra_metadata[e], '=');
        if (eq && key_is(&a->key, o->extra_metadata[e], (size_t)(eq - o->extra_metadata[e])))
            return 0;
    }
    for (size_t j = 0; j < tl->n_meta; j++) {
        const act_tl_meta *b = &tl->meta[j];
        if (j == i || !key_is(&b->key, a->key.p, a->key.n))
            continue;
        if (!(b->is_json & ACT_META_AUTO))
            return 0;
        if (b->value.n != a->value.n || memcmp(b->value.p, a->value.p, a->value.n)) {
            if (j > i)
                writer_error(w,
                             "%.*s: the processes of this trace are different ranks; not written "
                             "(run -o with %%r or %%p writes one trace per process)",
                             (int)a->key.n, a->key.p);
            return 0;
        }
    }
    return 1;
}

/* User metadata: records first, then --metadata; a later value for the
 * same key replaces an earlier one; reserved keys are refused. Internal
 * records are the tool's own; auto-detected ones yield to the user's. */
static void write_user_metadata(writer *w, const act_chrome_opts *o)
{
    act_timeline *tl = w->tl;
    size_t n_extra = 0;
    while (o->extra_metadata && o->extra_metadata[n_extra])
        n_extra++;
    size_t n = tl->n_meta + n_extra;
    kv *all = calloc(n ? n : 1, sizeof(*all));
    if (!all) {
        w->err = ACT_E_NOMEM;
        return;
    }
    /* One auto-detected record per process: checking each against all is
     * quadratic, so a spool with implausibly many (a damaged or hostile
     * one) gets none written. */
    size_t n_auto = 0;
    for (size_t i = 0; i < tl->n_meta; i++)
        n_auto += (tl->meta[i].is_json & ACT_META_AUTO) != 0;
    int autos = n_auto <= 4096;
    if (!autos)
        writer_error(w, "%zu auto-detected metadata records: none written", n_auto);
    size_t m = 0;
    for (size_t i = 0; i < tl->n_meta; i++) {
        const act_tl_meta *t = &tl->meta[i];
        if ((t->is_json & ACT_META_INTERNAL) ||
            ((t->is_json & ACT_META_AUTO) && (!autos || !auto_kept(w, o, i))))
            continue;
        all[m++] = (kv){t->key.p, t->value.p, t->key.n, t->value.n, t->is_json & ACT_META_JSON, 0};
    }
    for (size_t i = 0; i < n_extra; i++) {
        const char *s = o->extra_metadata[i];
        const char *eq = strchr(s, '=');
        if (!eq || eq == s) {
            writer_error(w, "--metadata '%s': expected KEY=VALUE; ignored", s);
            continue;
        }
        all[m++] = (kv){s, eq + 1, (size_t)(eq - s), strlen(eq + 1), cli_value_is_json(eq + 1), 0};
    }
    if (mark_replaced(all, m)) {
        w->err = ACT_E_NOMEM;
        free(all);
        return;
    }
    for (size_t i = 0; i < m; i++) {
        if (all[i].replaced)
            continue;
        if (is_reserved(all[i].k, all[i].kn)) {
            writer_error(w, "metadata key '%.*s' is reserved by the trace format; ignored",
                         (int)all[i].kn, all[i].k);
            continue;
        }
        act_obuf_putc(w->b, ',');
        wstr(w, all[i].k, all[i].kn);
        act_obuf_putc(w->b, ':');
        write_member_value(w, &all[i]);
    }
    free(all);
}

static void write_device_props(writer *w)
{
    act_timeline *tl = w->tl;
    act_obuf_lit(w->b, ",\"deviceProperties\":[");
    for (size_t i = 0; i < tl->n_devices; i++) {
        const act_tl_device *d = &tl->devices[i];
        if (i)
            act_obuf_putc(w->b, ',');
        act_obuf_lit(w->b, "{\"id\":");
        act_obuf_u64(w->b, d->index);
        act_obuf_lit(w->b, ",\"name\":");
        wstr(w, d->model.p, d->model.n);
        act_obuf_lit(w->b, ",\"vendor\":");
        wstr(w, d->vendor.p, d->vendor.n);
        act_obuf_lit(w->b, ",\"pid\":");
        act_obuf_u64(w->b, d->pid);
        act_obuf_putc(w->b, '}');
    }
    act_obuf_putc(w->b, ']');
}

static void write_str_array(writer *w, const char *const *v, int n)
{
    act_obuf_putc(w->b, '[');
    for (int i = 0; i < n; i++) {
        if (i)
            act_obuf_putc(w->b, ',');
        wcstr(w, v[i]);
    }
    act_obuf_putc(w->b, ']');
}

/* Counters saturate at 2^63 - 1 (only a corrupt spool gets there). */
static void write_count(act_obuf *b, uint64_t v)
{
    act_obuf_u64(b, v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v);
}

static void write_kind_counts(writer *w, const char *key, const uint64_t *c)
{
    act_obuf_lit(w->b, ",\"");
    act_obuf_puts(w->b, key);
    act_obuf_lit(w->b, "\":{");
    for (int k = 1; k < ACT_REC_KIND_MAX; k++) {
        if (k > 1)
            act_obuf_putc(w->b, ',');
        act_obuf_putc(w->b, '"');
        act_obuf_puts(w->b, act_rec_kind_name(k));
        act_obuf_lit(w->b, "\":");
        write_count(w->b, c[k]);
    }
    act_obuf_putc(w->b, '}');
}

static void write_num(writer *w, const char *key, uint64_t v)
{
    act_obuf_lit(w->b, ",\"");
    act_obuf_puts(w->b, key);
    act_obuf_lit(w->b, "\":");
    write_count(w->b, v);
}

static void write_processes(writer *w)
{
    act_timeline *tl = w->tl;
    act_obuf_lit(w->b, ",\"processes\":[");
    for (size_t i = 0; i < tl->n_procs; i++) {
        const act_tl_process *p = &tl->procs[i];
        if (i)
            act_obuf_putc(w->b, ',');
        act_obuf_lit(w->b, "{\"pid\":");
        act_obuf_u64(w->b, p->pid);
        act_obuf_lit(w->b, ",\"ppid\":");
        act_obuf_u64(w->b, p->ppid);
        act_obuf_lit(w->b, ",\"sealed\":");
        act_obuf_puts(w->b, p->sealed ? "true" : "false");
        act_obuf_lit(w->b, ",\"command\":");
        write_str_array(w, (const char *const *)p->argv, p->argc);
        act_obuf_putc(w->b, '}');
    }
    act_obuf_lit(w->b, "],\"truncated_processes\":[");
    for (size_t i = 0; i < tl->n_truncated; i++) {
        if (i)
            act_obuf_putc(w->b, ',');
        act_obuf_u64(w->b, tl->truncated_pids[i]);
    }
    act_obuf_putc(w->b, ']');
}

/*
 * The clocks' anchor, for `acceltrace merge`: the timeline clock
 * (CLOCK_MONOTONIC_RAW) of the trace's ts 0 (base_monotonic_ns), and a
 * wall-clock reading between two of the timeline clock that a process
 * recorded when its spool opened (the tightest one of the trace's
 * processes; error_ns: half its bracket). Traces of one boot align exactly
 * on the monotonic clock; of several hosts, on the wall clock through it.
 */
static void write_anchor(writer *w)
{
    act_timeline *tl = w->tl;
    act_obuf_lit(w->b, ",\"base_monotonic_ns\":");
    act_obuf_u64(w->b, tl->base_ns);
    json_t *best = NULL;
    for (size_t i = 0; i < tl->n_meta; i++) {
        const act_tl_meta *m = &tl->meta[i];
        if (!(m->is_json & ACT_META_INTERNAL) || !act_str_is(m->key, ACT_ANCHOR_META_KEY))
            continue;
        json_t *a = json_loadb(m->value.p, m->value.n, 0, NULL);
        if (!json_is_integer(json_object_get(a, "monotonic_ns")) ||
            !json_is_integer(json_object_get(a, "realtime_ns")) ||
            !json_is_integer(json_object_get(a, "error_ns"))) {
            json_decref(a);
            continue;
        }
        if (!best || json_integer_value(json_object_get(a, "error_ns")) <
                         json_integer_value(json_object_get(best, "error_ns"))) {
            json_decref(best);
            best = a;
        } else {
            json_decref(a);
        }
    }
    if (!best)
        return;
    act_obuf_lit(w->b, ",\"anchor\":{\"monotonic_ns\":");
    act_obuf_i64(w->b, json_integer_value(json_object_get(best, "monotonic_ns")));
    act_obuf_lit(w->b, ",\"realtime_ns\":");
    act_obuf_i64(w->b, json_integer_value(json_object_get(best, "realtime_ns")));
    act_obuf_lit(w->b, ",\"error_ns\":");
    act_obuf_i64(w->b, json_integer_value(json_object_get(best, "error_ns")));
    act_obuf_putc(w->b, '}');
    json_decref(best);
}

/* The host: its name and boot id (one boot, one monotonic clock). */
static void write_host(writer *w)
{
    char name[256] = "", boot[64] = "";
    if (gethostname(name, sizeof(name) - 1) != 0)
        name[0] = '\0';
    name[sizeof(name) - 1] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    act_obuf_lit(w->b, ",\"host\":{\"name\":");
    wcstr(w, name);
    act_obuf_lit(w->b, ",\"boot_id\":");
    wcstr(w, boot);
    act_obuf_putc(w->b, '}');
}

/* The timeline's error lines, then the writer's own. */
static void write_errors(writer *w)
{
    const act_timeline *tl = w->tl;
    act_obuf *b = w->b;
    act_obuf_lit(b, ",\"errors\":[");
    for (size_t i = 0; i < tl->n_errors + w->n_errors; i++) {
        if (i)
            act_obuf_putc(b, ',');
        wcstr(w, i < tl->n_errors ? tl->errors[i] : w->errors[i - tl->n_errors]);
    }
    uint64_t unlisted = tl->errors_unlisted + w->errors_unlisted;
    if (unlisted) {
        char more[96];
        snprintf(more, sizeof(more), "%llu more error lines not listed",
                 (unsigned long long)unlisted);
        if (tl->n_errors + w->n_errors)
            act_obuf_putc(b, ',');
        wcstr(w, more);
    }
    act_obuf_putc(b, ']');
}

static void write_tool_metadata(writer *w, const act_chrome_opts *o)
{
    act_timeline *tl = w->tl;
    const act_tl_counts *c = &tl->counts;
    act_obuf *b = w->b;
    act_obuf_lit(b, ",\n\"acceltrace\":{\"version\":");
    wcstr(w, ACT_VERSION);
    act_obuf_lit(b, ",\"command\":");
    write_str_array(w, o->argv, o->argv ? o->argc : 0);
    if (o->child_status >= 0) {
        int st = o->child_status;
        write_num(w, "exit_status",
                  (uint64_t)(WIFEXITED(st)     ? WEXITSTATUS(st)
                             : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                                               : 255));
    }
    act_obuf_lit(b, ",\"clock\":{\"method\":");
    wcstr(w, tl->clock_method);
    act_obuf_lit(b, ",\"error_ns\":");
    act_obuf_i64(b, tl->clock_error_ns);
    write_anchor(w);
    act_obuf_putc(b, '}');
    write_host(w);
    write_kind_counts(w, "records", c->records);
    write_kind_counts(w, "dropped", c->dropped);
    write_kind_counts(w, "outside_window", c->outside_window);
    act_obuf_lit(b, ",\"callbacks\":{\"pending\":");
    write_count(b, c->callbacks_pending);
    act_obuf_lit(b, ",\"lost\":");
    write_count(b, c->callbacks_lost);
    act_obuf_lit(b, "},\"skew\":{\"device_before_launch\":");
    write_count(b, c->skew);
    act_obuf_lit(b, ",\"max_ns\":");
    write_count(b, c->skew_max_ns);
    act_obuf_putc(b, '}');
    for (size_t i = 0; i < act_tl_n_counters; i++)
        write_num(w, act_tl_counters[i].key, act_tl_counter_value(c, &act_tl_counters[i]));
    write_processes(w);
    write_errors(w);
    /* Last, so it counts every string written before it. */
    write_num(w, "invalid_utf8", w->invalid);
    act_obuf_putc(b, '}');
    if (o->stats)
        *o->stats = (act_chrome_stats){w->invalid, tl->n_errors + w->n_errors};
}

static const char *trace_name(const act_chrome_opts *o)
{
    if (o->trace_name && o->trace_name[0])
        return o->trace_name;
    if (o->argv && o->argc > 0 && o->argv[0]) {
        const char *s = strrchr(o->argv[0], '/');
        return s ? s + 1 : o->argv[0];
    }
    return "acceltrace";
}

static void writer_init(writer *w, act_timeline *tl, act_obuf *b)
{
    memset(w, 0, sizeof(*w));
    w->tl = tl;
    w->b = b;
    w->esc = calloc(ESC_SLOTS, sizeof(esc_slot));
    for (int c = 1; c < ACT_CAT_MAX; c++) {
        act_obuf t;
        if (act_obuf_init(&t, -1, 64))
            continue;
        act_obuf_lit(&t, ",\"cat\":");
        size_t inv = act_json_string(&t, act_cat_name(c), strlen(act_cat_name(c)));
        /* Category names are ASCII literals; anything else takes the
         * general path, which counts what it replaces. */
        if (!t.err && !inv && t.len <= sizeof(w->cat_txt[0])) {
            memcpy(w->cat_txt[c], t.buf, t.len);
            w->cat_len[c] = (uint8_t)t.len;
        }
        act_obuf_free(&t);
    }
}

/* The members before traceEvents in a batch trace (after it when the
 * events come first): what they say is known only once every spool was
 * read. */
static void write_props(writer *w, const act_chrome_opts *o)
{
    act_obuf *b = w->b;
    act_obuf_lit(b, "\"schemaVersion\":1,\"traceName\":");
    wcstr(w, trace_name(o));
    act_obuf_lit(b, ",\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":");
    write_count(b, w->tl->base_wall_ns);
    write_device_props(w);
    write_user_metadata(w, o);
}

static void write_head(writer *w, const act_chrome_opts *o)
{
    act_obuf *b = w->b;
    act_obuf_putc(b, '{');
    if (o->events_first) {
        act_obuf_lit(b, "\"traceEvents\":[\n");
        return;
    }
    write_props(w, o);
    act_obuf_lit(b, ",\n\"traceEvents\":[\n");
}

/* The events the timeline holds now (all of them, or the next batch of a
 * streamed build). */
static void write_events(writer *w)
{
    act_timeline *tl = w->tl;
    for (size_t i = 0; i < tl->n_ev; i++) {
        write_event(w, &tl->ev[i], w->events++ != 0);
    }
}

static void write_tail(writer *w, const act_chrome_opts *o)
{
    act_obuf_lit(w->b, "\n]");
    free(w->esc); /* only event strings are cached */
    w->esc = NULL;
    if (o->events_first) {
        act_obuf_lit(w->b, ",\n");
        write_props(w, o);
    }
    write_tool_metadata(w, o);
    act_obuf_lit(w->b, "}\n");
    writer_free_errors(w);
}

/* ---- file ------------------------------------------------------------- */

int act_path_is_gzip(const char *path)
{
    size_t n = strlen(path);
    return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

struct act_chrome_stream {
    writer w;
    act_obuf b;
    act_chrome_opts o;
    act_outfile *file; /* NULL: in memory */
};

void act_chrome_stream_keep_replaced(act_chrome_stream *s, int *fd)
{
    act_outfile_keep_replaced(s ? s->file : NULL, fd);
}

int act_chrome_stream_open(act_chrome_stream **out, act_timeline *tl, const act_chrome_opts *o,
                           const char *path, int force, unsigned mode, char *err, size_t errlen)
{
    *out = NULL;
    act_outfile *file;
    int rc = act_outfile_open(&file, path, force, mode, 0, err, errlen);
    if (rc)
        return rc;
    act_chrome_stream *s = calloc(1, sizeof(*s));
    if (!s) {
        act_outfile_close(file, 0, 0, 0, err, errlen);
        snprintf(err, errlen, "%s: out of memory", path);
        return ACT_E_NOMEM;
    }
    s->file = file;
    s->o = *o;
    *out = s;
    /* 1 MiB: large enough that write(2) calls cost nothing, small enough
     * to stay in cache between formatting and the copy into the page
     * cache (4 MiB measured no faster and cost 3 MB more). Written by a
     * thread of the buffer's: the copy into the page cache was a quarter
     * to a half of the export's time, and overlaps the formatting. */
    act_obuf_init_bg(&s->b, act_outfile_fd(file), 1u << 20);
    if (act_path_is_gzip(path))
        act_obuf_gzip(&s->b, ACT_GZIP_LEVEL);
    writer_init(&s->w, tl, &s->b);
    write_head(&s->w, &s->o);
    return s->b.err;
}

int act_chrome_stream_write(act_chrome_stream *s, act_timeline *tl)
{
    s->w.tl = tl;
    write_events(&s->w);
    return s->b.err;
}

void act_chrome_stream_set_opts(act_chrome_stream *s, const act_chrome_opts *o)
{
    int first = s->o.events_first;
    s->o = *o;
    s->o.events_first = first; /* the head is written */
}

int act_chrome_stream_sink(act_timeline *tl, void *ctx)
{
    int rc = act_chrome_stream_write(ctx, tl);
    tl->n_ev = 0;
    tl->n_args = 0;
    return rc;
}

int act_chrome_stream_close(act_chrome_stream *s, int ok, char *err, size_t errlen)
{
    if (!s)
        return ok ? 0 : ACT_E_INVAL;
    int rc = ok ? 0 : ACT_E_INVAL;
    if (!rc) {
        write_tail(&s->w, &s->o);
        rc = s->b.err ? s->b.err : s->w.err ? s->w.err : s->w.tl->err;
    }
    writer_free_errors(&s->w);
    if (!rc)
        rc = act_obuf_flush(&s->b);
    int saved = errno;
    free(s->w.esc);
    act_obuf_free(&s->b);
    rc = act_outfile_close(s->file, ok, rc, saved, err, errlen);
    free(s);
    return rc;
}

/* ---- memory ----------------------------------------------------------- */

int act_chrome_stream_open_mem(act_chrome_stream **out, act_timeline *tl, const act_chrome_opts *o)
{
    act_chrome_stream *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s)
        return ACT_E_NOMEM;
    s->o = *o;
    act_obuf_init(&s->b, -1, 1u << 16);
    writer_init(&s->w, tl, &s->b);
    write_head(&s->w, &s->o);
    return s->b.err;
}

int act_chrome_stream_close_mem(act_chrome_stream *s, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    if (!s)
        return ACT_E_INVAL;
    write_tail(&s->w, &s->o);
    act_obuf_putc(&s->b, '\0');
    int rc = s->b.err ? s->b.err : s->w.err ? s->w.err : s->w.tl->err;
    if (!rc) {
        *text = s->b.buf; /* handed over */
        *len = s->b.len - 1;
        s->b.buf = NULL;
    }
    free(s->w.esc);
    writer_free_errors(&s->w);
    act_obuf_free(&s->b);
    free(s);
    return rc;
}
