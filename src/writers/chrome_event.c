/*
 * chrome_event.c -- the Chrome writer's event encoding: one pass over the
 * events into a large buffer with hand-formatted numbers, and caches of
 * what recurs (escaped names and keys, lanes, categories) so that an
 * event is mostly fixed-size copies.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "chrome_int.h"
#include "core/internal.h"
#include "core/record.h"

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

static inline esc_slot *esc_slot_of(act_chrome_enc *w, const char *s, size_t n)
{
    uint64_t h = ((uint64_t)(uintptr_t)s ^ n) * 0x9e3779b97f4a7c15ull;
    return &w->esc[(h >> 40) & (ESC_SLOTS - 1)];
}

/* The cached escape of an event string, or NULL. */
static inline const esc_slot *esc_hit(act_chrome_enc *w, const char *s, size_t n)
{
    if (!w->esc)
        return NULL;
    const esc_slot *e = esc_slot_of(w, s, n);
    return e->p == s && e->n == n && e->len ? e : NULL;
}

static void wstr_event(act_chrome_enc *w, const char *s, size_t n)
{
    if (!w->esc || n > ESC_MAX_SRC) {
        act_chrome_str_put(w, s, n);
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
static void write_arg_value(act_chrome_enc *w, const act_tl_arg *a)
{
    act_obuf *b = w->b;
    if (a->type == ACT_ARG_STR) {
        wstr_event(w, a->v.s.p, a->v.s.n);
        return;
    }
    if (a->type == ACT_ARG_JSON) { /* valid JSON text, made by the importer */
        act_obuf_put(b, a->v.s.p, a->v.s.n);
        return;
    }
    if (a->type == ACT_ARG_U64V) {
        act_obuf_putc(b, '[');
        for (uint32_t i = 0; i < a->v.vec.n; i++) {
            if (i)
                act_obuf_putc(b, ',');
            act_obuf_u64(b, act_tl_arg_vec_at(a, i));
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
 * the whole piece is cached, under wstr_event's rule (event strings
 * only: they do not move while the writer runs). The slot comes from the
 * key's bytes, not its address, so where the linker or the arena puts a
 * literal does not change which keys share a slot (by address, unrelated
 * changes moved the export's instruction count). */
static inline int key_in(const struct key_txt *k, act_str key)
{
    return k->len && k->n == key.n && (k->p == key.p || memcmp(k->p, key.p, key.n) == 0);
}

/* The hash of a key's bytes (FNV-1a) for cache_index. */
static inline uint64_t key_hash(act_str key)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < key.n; i++)
        h = (h ^ (unsigned char)key.p[i]) * 0x100000001b3ull;
    return h;
}

/* The cached piece of `key`: first the slot this arg position used last
 * (*memo), then the key's two ways; NULL when it is not cached. */
static inline const struct key_txt *key_cached(act_chrome_enc *w, act_str key, uint8_t *memo)
{
    const struct key_txt *k = &w->keys[*memo];
    if (key_in(k, key))
        return k;
    size_t i = cache_index(key_hash(key), 64);
    if (!key_in(&w->keys[i], key) && !key_in(&w->keys[i ^= 1], key))
        return NULL;
    *memo = (uint8_t)i;
    return &w->keys[i];
}

/* A key that is not cached: escaped and written, and cached in one of its
 * two ways (an empty one first) when it is an event string (w->esc). */
static void write_key_slow(act_chrome_enc *w, act_str key, int first)
{
    act_obuf *b = w->b;
    struct key_txt *k = NULL;
    if (w->esc) {
        size_t i = cache_index(key_hash(key), 64);
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
static void write_args(act_chrome_enc *w, const act_tl_event *e)
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
static char *put_lane(act_chrome_enc *w, char *p, uint32_t pid, uint32_t tid, int no_tid)
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
static void write_event(act_chrome_enc *w, const act_tl_event *e, int sep)
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
        const char *cat = act_tl_cat_name(w->tl, e->cat);
        wstr_event(w, cat, strlen(cat));
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
    case 'i':
        p = e->flags & ACT_EVF_SCOPE_G   ? CUR_LIT(p, ",\"s\":\"g\"")
            : e->flags & ACT_EVF_SCOPE_P ? CUR_LIT(p, ",\"s\":\"p\"")
                                         : CUR_LIT(p, ",\"s\":\"t\"");
        break;
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

void act_chrome_enc_init(act_chrome_enc *w, act_timeline *tl, act_obuf *b)
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

/* The events the timeline holds now (all of them, or the next batch of a
 * streamed build). */
void act_chrome_events_write(act_chrome_enc *w)
{
    act_timeline *tl = w->tl;
    for (size_t i = 0; i < tl->n_ev; i++) {
        write_event(w, &tl->ev[i], w->events++ != 0);
    }
}
