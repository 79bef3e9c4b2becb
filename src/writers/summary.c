/*
 * summary.c -- the summary's aggregator (see summary.h, summary_impl.h):
 * names, lanes and processes are interned; slices pass through a bounded
 * reorder window and are folded, in start order per lane, into per-name
 * rows (count, total, self, min, max), per-lane busy-time unions and
 * per-process figures. summary_print.c prints the result.
 */
#include "summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "summary_cl.h"
#include "summary_impl.h"

act_summary *act_summary_new(void)
{
    act_summary *s = calloc(1, sizeof(act_summary));
    if (s) {
        s->want_ranges = 1;
        s->window = ACT_SUM_WINDOW;
        act_sum_win_init(&s->win);
    }
    return s;
}

void act_summary_window(act_summary *s, size_t slices)
{
    s->window = slices < 1 ? 1 : slices > ACT_SUM_WINDOW ? ACT_SUM_WINDOW : slices;
}

/* Hold at least `need` slices from now on (a power of two, at most
 * ACT_SUM_WINDOW). */
static void window_grow(act_summary *s, uint64_t need)
{
    size_t w = s->window;
    while (w < need && w < ACT_SUM_WINDOW)
        w *= 2;
    s->window = w < ACT_SUM_WINDOW ? w : ACT_SUM_WINDOW;
}

void act_summary_free(act_summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_nm; i++)
        free(s->nm[i].s);
    for (size_t i = 0; i < s->n_ln; i++)
        free(s->ln[i].stack);
    for (size_t i = 0; i < s->n_gr; i++)
        free(s->gr[i].label);
    for (size_t i = 0; i < s->n_src; i++) {
        free(s->src[i].path);
        json_decref(s->src[i].counters);
    }
    free(s->nm);
    free(s->nm_idx);
    free(s->ln);
    free(s->ln_idx);
    free(s->gr);
    free(s->gr_idx);
    free(s->src);
    act_sum_win_free(&s->win);
    free(s->rg);
    free(s->rg_idx);
    free(s->rr);
    json_decref(s->cl_failed);
    json_decref(s->cl_leaks);
    json_decref(s->cl_undrawn);
    free(s);
}

/* ---- interning -------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return ACT_E_NOMEM;
    *arr = p;
    *cap = nc;
    return 0;
}

/* Open-addressing index of ids (id+1; 0 = empty), rebuilt at 50% load. */
typedef int (*eq_fn)(const act_summary *s, uint32_t id, const void *key);
typedef uint64_t (*hash_fn)(const act_summary *s, uint32_t id);

static uint32_t *idx_find(uint32_t *idx, size_t cap, uint64_t h, const act_summary *s, eq_fn eq,
                          const void *key)
{
    size_t m = cap - 1, i = (size_t)h & m;
    while (idx[i] && !eq(s, idx[i] - 1, key))
        i = (i + 1) & m;
    return &idx[i];
}

static int idx_grow(uint32_t **idx, size_t *cap, size_t n, const act_summary *s, hash_fn hf)
{
    if (*cap && (n + 1) * 2 <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    uint32_t *ni = calloc(nc, sizeof(*ni));
    if (!ni)
        return ACT_E_NOMEM;
    for (uint32_t id = 0; id < n; id++) {
        size_t i = (size_t)hf(s, id) & (nc - 1);
        while (ni[i])
            i = (i + 1) & (nc - 1);
        ni[i] = id + 1;
    }
    free(*idx);
    *idx = ni;
    *cap = nc;
    return 0;
}

typedef struct name_key {
    const char *p;
    size_t n;
    uint64_t h;
    int device;
} name_key;

static int name_eq(const act_summary *s, uint32_t id, const void *key)
{
    const name_key *k = key;
    const act_sum_name *e = &s->nm[id];
    return e->hash == k->h && e->len == k->n && e->device == k->device && !memcmp(e->s, k->p, k->n);
}

static uint64_t name_hash(const act_summary *s, uint32_t id)
{
    return s->nm[id].hash;
}

static int intern_name(act_summary *s, const char *p, size_t n, int device, uint32_t *id)
{
    name_key k = {p, n, hash_bytes(1469598103934665603ull + (unsigned)device, p, n), device};
    if (idx_grow(&s->nm_idx, &s->cap_idx, s->n_nm, s, name_hash))
        return ACT_E_NOMEM;
    uint32_t *slot = idx_find(s->nm_idx, s->cap_idx, k.h, s, name_eq, &k);
    if (*slot) {
        *id = *slot - 1;
        return 0;
    }
    if (grow((void **)&s->nm, &s->cap_nm, s->n_nm + 1, sizeof(*s->nm)))
        return ACT_E_NOMEM;
    char *c = malloc(n + 1);
    if (!c)
        return ACT_E_NOMEM;
    if (n)
        memcpy(c, p, n);
    c[n] = '\0';
    s->nm[s->n_nm] = (act_sum_name){.s = c, .len = n, .hash = k.h, .device = device};
    *id = (uint32_t)s->n_nm++;
    *slot = *id + 1;
    return 0;
}

typedef struct lane_key {
    uint64_t pid, tid;
    uint32_t src;
    int device;
} lane_key;

static uint64_t lane_hash_of(const lane_key *k)
{
    uint64_t v[3] = {k->pid, k->tid, (uint64_t)k->src << 1 | (unsigned)k->device};
    return hash_bytes(1469598103934665603ull, v, sizeof(v));
}

static int lane_eq(const act_summary *s, uint32_t id, const void *key)
{
    const lane_key *k = key;
    const act_sum_lane *l = &s->ln[id];
    return l->key_pid == k->pid && l->key_tid == k->tid && l->src == k->src &&
           l->device == k->device;
}

static uint64_t lane_hash(const act_summary *s, uint32_t id)
{
    const act_sum_lane *l = &s->ln[id];
    lane_key k = {l->key_pid, l->key_tid, l->src, l->device};
    return lane_hash_of(&k);
}

typedef struct group_key {
    uint64_t pid;
    uint32_t src;
} group_key;

static uint64_t group_hash_of(uint64_t pid, uint32_t src)
{
    uint64_t v[2] = {pid, src};
    return hash_bytes(1469598103934665603ull, v, sizeof(v));
}

static int group_eq(const act_summary *s, uint32_t id, const void *key)
{
    const group_key *k = key;
    return s->gr[id].pid == k->pid && s->gr[id].src == k->src;
}

static uint64_t group_hash(const act_summary *s, uint32_t id)
{
    return group_hash_of(s->gr[id].pid, s->gr[id].src);
}

/* A process of the current source, found through a hash index: a trace
 * may hold a million of them (one pid per lane), a scan would be
 * quadratic. */
static int group_of(act_summary *s, uint64_t pid, uint32_t *id)
{
    group_key k = {pid, s->cur_src};
    if (idx_grow(&s->gr_idx, &s->cap_gidx, s->n_gr, s, group_hash))
        return ACT_E_NOMEM;
    uint32_t *slot =
        idx_find(s->gr_idx, s->cap_gidx, group_hash_of(pid, s->cur_src), s, group_eq, &k);
    if (*slot) {
        *id = *slot - 1;
        return 0;
    }
    if (grow((void **)&s->gr, &s->cap_gr, s->n_gr + 1, sizeof(*s->gr)))
        return ACT_E_NOMEM;
    s->gr[s->n_gr] =
        (act_sum_group){.src = s->cur_src, .pid = pid, .first = INFINITY, .last = -INFINITY};
    *id = (uint32_t)s->n_gr++;
    *slot = *id + 1;
    return 0;
}

static int intern_lane_slow(act_summary *s, uint64_t pid, uint64_t tid, int device, uint32_t *id)
{
    lane_key k = {pid, tid, s->cur_src, device};
    if (idx_grow(&s->ln_idx, &s->cap_lidx, s->n_ln, s, lane_hash))
        return ACT_E_NOMEM;
    uint32_t *slot = idx_find(s->ln_idx, s->cap_lidx, lane_hash_of(&k), s, lane_eq, &k);
    if (*slot) {
        *id = *slot - 1;
        return 0;
    }
    uint32_t g;
    if (group_of(s, pid, &g) || grow((void **)&s->ln, &s->cap_ln, s->n_ln + 1, sizeof(*s->ln)))
        return ACT_E_NOMEM;
    s->ln[s->n_ln] = (act_sum_lane){
        .key_pid = pid, .key_tid = tid, .src = s->cur_src, .group = g, .device = (uint8_t)device};
    *id = (uint32_t)s->n_ln++;
    *slot = *id + 1;
    return 0;
}

/* The lane of (pid, tid, device) in the current source, looked up first
 * among the lanes last found at its memo slot (summary_impl.h, ln_memo):
 * a batch's slices take turns among a few lanes, and comparing a lane's
 * key is cheaper than hashing it. */
static int intern_lane(act_summary *s, uint64_t pid, uint64_t tid, int device, uint32_t *id)
{
    uint64_t h = (pid * 0x9E3779B97F4A7C15ull ^ tid) * 0xC2B2AE3D27D4EB4Full;
    uint32_t *memo = &s->ln_memo[(h >> 60 ^ (unsigned)device) % ACT_SUM_LANE_MEMO];
    if (*memo) {
        const act_sum_lane *l = &s->ln[*memo - 1];
        if (l->key_pid == pid && l->key_tid == tid && l->src == s->cur_src && l->device == device) {
            *id = *memo - 1;
            return 0;
        }
    }
    if (intern_lane_slow(s, pid, tid, device, id))
        return ACT_E_NOMEM;
    *memo = *id + 1;
    return 0;
}

/* ---- sources and processes -------------------------------------------- */

static int ensure_src(act_summary *s)
{
    if (s->n_src)
        return 0;
    if (grow((void **)&s->src, &s->cap_src, 1, sizeof(*s->src)))
        return ACT_E_NOMEM;
    s->src[0] = (act_sum_src){.rank = -1};
    s->n_src = 1;
    return 0;
}

int act_summary_begin_source(act_summary *s, const char *path)
{
    if (ensure_src(s))
        return ACT_E_NOMEM;
    act_sum_src *cur = &s->src[s->cur_src];
    if (cur->path || cur->counters || s->n_ln || s->n_gr) {
        if (grow((void **)&s->src, &s->cap_src, s->n_src + 1, sizeof(*s->src)))
            return ACT_E_NOMEM;
        s->src[s->n_src] = (act_sum_src){.rank = -1};
        s->cur_src = (uint32_t)s->n_src++;
    }
    if (path && !(s->src[s->cur_src].path = strdup(path)))
        return ACT_E_NOMEM;
    return 0;
}

void act_summary_source_rank(act_summary *s, long long rank)
{
    if (!ensure_src(s))
        s->src[s->cur_src].rank = rank;
}

void act_summary_source_counters(act_summary *s, json_t *acceltrace)
{
    if (ensure_src(s)) {
        json_decref(acceltrace);
        return;
    }
    json_decref(s->src[s->cur_src].counters);
    s->src[s->cur_src].counters = acceltrace;
}

int act_summary_process_label(act_summary *s, uint64_t pid, const char *label, size_t len)
{
    uint32_t g;
    if (ensure_src(s) || group_of(s, pid, &g))
        return ACT_E_NOMEM;
    char *c = strndup(label, len);
    if (!c)
        return ACT_E_NOMEM;
    free(s->gr[g].label);
    s->gr[g].label = c;
    return 0;
}

void act_summary_add_truncated(act_summary *s, uint64_t n)
{
    s->truncated += n;
}

void act_summary_set_counters(act_summary *s, json_t *acceltrace)
{
    s->counters = acceltrace;
}

void act_summary_want_ranges(act_summary *s, int on)
{
    s->want_ranges = on;
}

void act_summary_want_python_lines(act_summary *s, int on)
{
    s->want_ranges = on;
    s->by_python_line = on;
}

int act_summary_by_python_line(const act_summary *s)
{
    return s->by_python_line;
}

/* ---- ranges (External id -> name) ------------------------------------- */

static int range_eq(const act_summary *s, uint32_t id, const void *key)
{
    return s->rg[id].ext == *(const uint64_t *)key;
}

static uint64_t range_hash(const act_summary *s, uint32_t id)
{
    return hash_bytes(1469598103934665603ull, &s->rg[id].ext, sizeof(uint64_t));
}

static uint32_t *range_slot(act_summary *s, uint64_t ext)
{
    return idx_find(s->rg_idx, s->cap_ridx, hash_bytes(1469598103934665603ull, &ext, sizeof(ext)),
                    s, range_eq, &ext);
}

/* The run holding ext, or NULL. */
static act_sum_rrun *range_run(act_summary *s, uint64_t ext)
{
    size_t lo = 0, hi = s->n_rr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->rr[mid].hi < ext)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n_rr && s->rr[lo].lo <= ext ? &s->rr[lo] : NULL;
}

/* An id past every run's extends the last run (the next id, the same
 * name) or starts one; any other goes to the hash index, which a lookup
 * reads first (a later range of the same id renames it). */
int act_summary_add_range(act_summary *s, uint64_t ext, const char *name, size_t len)
{
    if (!s->want_ranges || !ext)
        return 0;
    uint32_t nid;
    if (intern_name(s, name, len, 0, &nid))
        return ACT_E_NOMEM;
    return act_summary_add_range_id(s, ext, nid);
}

int act_summary_add_range_id(act_summary *s, uint64_t ext, uint32_t nid)
{
    if (!s->want_ranges || !ext)
        return 0;
    act_sum_rrun *last = s->n_rr ? &s->rr[s->n_rr - 1] : NULL;
    if ((!last || ext > last->hi) && (!s->n_rg || !*range_slot(s, ext))) {
        if (last && ext == last->hi + 1 && last->name == nid) {
            last->hi = ext;
            return 0;
        }
        if (grow((void **)&s->rr, &s->cap_rr, s->n_rr + 1, sizeof(*s->rr)))
            return ACT_E_NOMEM;
        s->rr[s->n_rr++] = (act_sum_rrun){ext, ext, nid};
        return 0;
    }
    act_sum_rrun *in = range_run(s, ext);
    if (in && in->name == nid && (!s->n_rg || !*range_slot(s, ext)))
        return 0;
    if (idx_grow(&s->rg_idx, &s->cap_ridx, s->n_rg, s, range_hash))
        return ACT_E_NOMEM;
    uint32_t *slot = range_slot(s, ext);
    if (*slot) {
        s->rg[*slot - 1].name = nid;
        return 0;
    }
    if (grow((void **)&s->rg, &s->cap_rg, s->n_rg + 1, sizeof(*s->rg)))
        return ACT_E_NOMEM;
    s->rg[s->n_rg] = (act_sum_range){ext, nid};
    *slot = (uint32_t)++s->n_rg;
    return 0;
}

uint32_t act_summary_range_name(act_summary *s, uint64_t ext)
{
    if (!ext)
        return UINT32_MAX;
    if (s->n_rg) {
        uint32_t *slot = range_slot(s, ext);
        if (*slot)
            return s->rg[*slot - 1].name;
    }
    act_sum_rrun *in = s->n_rr ? range_run(s, ext) : NULL;
    return in ? in->name : UINT32_MAX;
}

/* ---- folding a slice in start order ----------------------------------- */

/* Open slice i of a lane (0 = outermost): the outermost lives in the
 * lane, so a lane whose slices do not nest allocates no stack. */
static act_sum_open *lane_open(act_sum_lane *l, uint32_t i)
{
    return i ? &l->stack[i - 1] : &l->base;
}

static void close_top(act_summary *s, act_sum_lane *l)
{
    act_sum_open *o = lane_open(l, --l->depth);
    double self = o->dur - o->child;
    s->nm[o->name].self += self > 0 ? self : 0;
}

/* Room for open slice number `depth` (stack entry depth-1 from 2 on). */
static int lane_stack_room(act_sum_lane *l)
{
    if (l->depth == 0 || l->depth <= l->cap)
        return 0;
    if (l->cap >= UINT32_MAX / 2)
        return ACT_E_NOMEM;
    uint32_t nc = l->cap ? l->cap * 2 : 4;
    void *p = realloc(l->stack, (size_t)nc * sizeof(*l->stack));
    if (!p)
        return ACT_E_NOMEM;
    l->stack = p;
    l->cap = nc;
    return 0;
}

static void fold_nesting(act_summary *s, act_sum_lane *l, const act_sum_pend *p)
{
    double e = p->ts + p->dur;
    while (l->depth && lane_open(l, l->depth - 1)->end <= p->ts)
        close_top(s, l);
    if (l->depth) {
        act_sum_open *par = lane_open(l, l->depth - 1);
        par->child += (e < par->end ? e : par->end) - p->ts;
    }
    if (lane_stack_room(l)) {
        s->nomem = 1;
        s->nm[p->name].self += p->dur;
        return;
    }
    *lane_open(l, l->depth++) = (act_sum_open){e, p->dur, 0, p->name};
}

static void fold_busy(act_sum_lane *l, const act_sum_pend *p)
{
    double e = p->ts + p->dur;
    if (!l->open || p->ts > l->cur_e) {
        if (l->open)
            l->busy += l->cur_e - l->cur_s;
        l->cur_s = p->ts;
        l->cur_e = e;
        l->open = 1;
    } else if (e > l->cur_e) {
        l->cur_e = e;
    }
}

static void fold_range(act_summary *s, const act_sum_pend *p)
{
    uint32_t r = act_summary_range_name(s, p->ext);
    act_sum_name *n = r == UINT32_MAX ? NULL : &s->nm[r];
    act_sum_rrow *rr = n ? &n->by_range : &s->no_range;
    if (!rr->count || p->dur < rr->min)
        rr->min = p->dur;
    if (!rr->count || p->dur > rr->max)
        rr->max = p->dur;
    rr->count++;
    rr->total += p->dur;
}

static void fold(act_summary *s, const act_sum_pend *p)
{
    act_sum_name *n = &s->nm[p->name];
    act_sum_lane *l = &s->ln[p->lane];
    act_sum_group *g = &s->gr[l->group];
    if (!n->count || p->dur < n->min)
        n->min = p->dur;
    if (!n->count || p->dur > n->max)
        n->max = p->dur;
    n->count++;
    n->total += p->dur;
    if (l->device) {
        g->dev_slices++;
        g->dev_total += p->dur;
        if (s->want_ranges)
            fold_range(s, p);
    } else {
        g->host_slices++;
    }
    if (p->ts < g->first)
        g->first = p->ts;
    if (p->ts + p->dur > g->last)
        g->last = p->ts + p->dur;
    if (l->popped && p->ts < l->last_ts) {
        s->late++; /* its lane has moved on: counted, busy/self approximate */
        window_grow(s, (uint64_t)s->window * 2);
        n->self += p->dur;
        return;
    }
    l->popped = 1;
    l->last_ts = p->ts;
    fold_busy(l, p);
    fold_nesting(s, l, p);
}

int act_summary_add_delay(act_summary *s, const char *name, size_t len, double delay_us)
{
    uint32_t id;
    if (!isfinite(delay_us) || delay_us < 0)
        return 0; /* not a delay the trace can show */
    if (intern_name(s, name, len, 1, &id))
        return ACT_E_NOMEM;
    return act_summary_add_delay_id(s, id, delay_us);
}

int act_summary_add_delay_id(act_summary *s, uint32_t id, double delay_us)
{
    if (!isfinite(delay_us) || delay_us < 0)
        return 0; /* not a delay the trace can show */
    if (ensure_src(s))
        return ACT_E_NOMEM;
    act_sum_rrow *d = &s->nm[id].delay;
    if (!d->count || delay_us < d->min)
        d->min = delay_us;
    if (!d->count || delay_us > d->max)
        d->max = delay_us;
    d->count++;
    d->total += delay_us;
    return 0;
}

/* A slice that sorts before one its lane sent earlier: exact only if the
 * window still holds the first of the lane's slices it precedes, at most
 * every arrival since the lane's slices last came in order (its run). */
static void arrival_order(act_summary *s, act_sum_lane *l, const act_sum_pend *p)
{
    if (l->arr_seq && (p->ts < l->arr_ts || (p->ts == l->arr_ts && p->dur > l->arr_dur))) {
        uint64_t since = p->seq + 1 - l->run_seq;
        if (since * 2 > s->window)
            window_grow(s, since * 2);
        l->run_seq = p->seq + 1; /* a new run from here */
        return;
    }
    if (!l->arr_seq)
        l->run_seq = p->seq + 1;
    l->arr_ts = p->ts;
    l->arr_dur = p->dur;
    l->arr_seq = p->seq + 1;
}

int act_summary_name_id(act_summary *s, const char *name, size_t len, int device, uint32_t *id)
{
    return intern_name(s, name, len, device != 0, id);
}

int act_summary_add_slice(act_summary *s, const char *name, size_t len, int device, uint64_t pid,
                          uint64_t tid, double ts_us, double dur_us, uint64_t ext)
{
    uint32_t id;
    if (intern_name(s, name, len, device != 0, &id))
        return ACT_E_NOMEM;
    return act_summary_add_slice_id(s, id, device, pid, tid, ts_us, dur_us, ext);
}

int act_summary_add_slice_id(act_summary *s, uint32_t name, int device, uint64_t pid, uint64_t tid,
                             double ts_us, double dur_us, uint64_t ext)
{
    if (!isfinite(dur_us) || dur_us < 0) {
        s->bad_dur++; /* said under the tables: nothing is dropped silently */
        dur_us = 0;
    }
    if (!isfinite(ts_us)) {
        s->bad_ts++;
        ts_us = 0;
    }
    device = device != 0;
    act_sum_pend p = {ts_us, dur_us, s->seq++, ext, name, 0};
    if (ensure_src(s) || intern_lane(s, pid, tid, device, &p.lane))
        return ACT_E_NOMEM;
    arrival_order(s, &s->ln[p.lane], &p);
    while (s->win.n >= s->window) {
        act_sum_pend out = act_sum_win_pop(&s->win);
        fold(s, &out);
    }
    if (act_sum_win_push(&s->win, &p))
        return ACT_E_NOMEM;
    s->slices++;
    return s->nomem ? ACT_E_NOMEM : 0;
}

#define OP_KEY_SEP '\x1f' /* between a device op's name and its program */

size_t act_summary_op_key(char *buf, size_t cap, const char *name, size_t len, const char *program,
                          size_t plen)
{
    if (!program || !plen || len + 1 + plen > cap)
        return len;
    memcpy(buf, name, len);
    buf[len] = OP_KEY_SEP;
    memcpy(buf + len + 1, program, plen);
    return len + 1 + plen;
}

/* The length of a name's part before its program (all of it when none). */
static size_t op_base_len(const act_sum_name *n)
{
    const char *sep = n->device ? memchr(n->s, OP_KEY_SEP, n->len) : NULL;
    return sep ? (size_t)(sep - n->s) : n->len;
}

/* Another device name with the same base: the base alone is ambiguous. */
static int op_base_shared(const act_summary *s, size_t i, size_t base)
{
    for (size_t j = 0; j < s->n_nm; j++)
        if (j != i && s->nm[j].device && op_base_len(&s->nm[j]) == base &&
            !memcmp(s->nm[j].s, s->nm[i].s, base))
            return 1;
    return 0;
}

/* "name US program" keys into what is printed (act_summary_op_key): all
 * are judged first, then renamed. Out of memory, the bare name. */
static void op_names_show(act_summary *s)
{
    uint8_t *shared = calloc(s->n_nm ? s->n_nm : 1, 1);
    for (size_t i = 0; i < s->n_nm && shared; i++) {
        size_t base = op_base_len(&s->nm[i]);
        shared[i] = base != s->nm[i].len && op_base_shared(s, i, base);
    }
    for (size_t i = 0; i < s->n_nm; i++) {
        act_sum_name *n = &s->nm[i];
        size_t base = op_base_len(n);
        if (base == n->len)
            continue;
        size_t plen = n->len - base - 1;
        char *c = shared && shared[i] ? malloc(base + plen + 4) : NULL;
        if (c) {
            memcpy(c, n->s, base);
            memcpy(c + base, " (", 2);
            memcpy(c + base + 2, n->s + base + 1, plen);
            memcpy(c + base + 2 + plen, ")", 2);
            free(n->s);
            n->s = c;
            n->len = base + plen + 3;
        } else {
            n->s[base] = '\0';
            n->len = base;
        }
    }
    free(shared);
}

void act_summary_finish(act_summary *s)
{
    if (s->finished)
        return;
    s->finished = 1;
    op_names_show(s);
    ensure_src(s);
    while (s->win.n) {
        act_sum_pend out = act_sum_win_pop(&s->win);
        fold(s, &out);
    }
    for (size_t i = 0; i < s->n_ln; i++) {
        act_sum_lane *l = &s->ln[i];
        while (l->depth)
            close_top(s, l);
        if (l->open)
            l->busy += l->cur_e - l->cur_s;
        l->open = 0;
        act_sum_group *g = &s->gr[l->group];
        if (l->device)
            g->dev_busy += l->busy;
        else
            g->host_busy += l->busy;
    }
}

void act_summary_add_failure(act_summary *s, const char *name, size_t len, const char *err,
                             size_t errlen)
{
    act_summary_cl_failure(&s->cl_failed, name, len, err, errlen);
}

void act_summary_source_cl_leaks(act_summary *s, json_t *leaks)
{
    if (!s->cl_leaks && json_is_object(leaks))
        s->cl_leaks = json_incref(leaks);
}

void act_summary_source_cl_undrawn(act_summary *s, json_t *undrawn)
{
    if (!s->cl_undrawn && json_is_object(undrawn))
        s->cl_undrawn = json_incref(undrawn);
}
