/*
 * chrome_members.c -- the Chrome writer's top-level members: the head
 * (schemaVersion, traceName, baseTimeNanoseconds, deviceProperties, user
 * metadata) and, after traceEvents, the tool's "acceltrace" object whose
 * counters are final only then (invalid UTF-8 among them: it comes after
 * the events so that it can count theirs).
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acceltrace.h"
#include "chrome_int.h"
#include "core/dist.h"
#include "core/internal.h"
#include "core/record.h"
#include "core/vec.h"

#ifndef ACT_VERSION
#define ACT_VERSION ACT_VERSION_STRING
#endif

/* An error line of the writer's own, listed after the timeline's (within
 * the same limit of ACT_TL_MAX_ERRORS listed lines). */
static void writer_error(act_chrome_enc *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void writer_error(act_chrome_enc *w, const char *fmt, ...)
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

void act_chrome_enc_free_errors(act_chrome_enc *w)
{
    for (size_t i = 0; i < w->n_errors; i++)
        free(w->errors[i]);
    free(w->errors);
    w->errors = NULL;
    w->n_errors = w->cap_errors = 0;
}

static void wcstr(act_chrome_enc *w, const char *s)
{
    act_chrome_str_put(w, s, strlen(s));
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

static void write_member_value(act_chrome_enc *w, const kv *m)
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
    act_chrome_str_put(w, m->v, m->vn);
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
static int auto_kept(act_chrome_enc *w, const act_chrome_opts *o, size_t i)
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
static void write_user_metadata(act_chrome_enc *w, const act_chrome_opts *o)
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
        act_chrome_str_put(w, all[i].k, all[i].kn);
        act_obuf_putc(w->b, ':');
        write_member_value(w, &all[i]);
    }
    free(all);
}

static void write_device_props(act_chrome_enc *w)
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
        act_chrome_str_put(w, d->model.p, d->model.n);
        act_obuf_lit(w->b, ",\"vendor\":");
        act_chrome_str_put(w, d->vendor.p, d->vendor.n);
        act_obuf_lit(w->b, ",\"pid\":");
        act_obuf_u64(w->b, d->pid);
        act_obuf_putc(w->b, '}');
    }
    act_obuf_putc(w->b, ']');
}

static void write_str_array(act_chrome_enc *w, const char *const *v, int n)
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

static void write_kind_counts(act_chrome_enc *w, const char *key, const uint64_t *c)
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

static void write_num(act_chrome_enc *w, const char *key, uint64_t v)
{
    act_obuf_lit(w->b, ",\"");
    act_obuf_puts(w->b, key);
    act_obuf_lit(w->b, "\":");
    write_count(w->b, v);
}

static void write_processes(act_chrome_enc *w)
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
static void write_anchor(act_chrome_enc *w)
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
static void write_host(act_chrome_enc *w)
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
static void write_errors(act_chrome_enc *w)
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

static void write_tool_metadata(act_chrome_enc *w, const act_chrome_opts *o)
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

/* The members before traceEvents in a batch trace (after it when the
 * events come first): what they say is known only once every spool was
 * read. */
static void write_props(act_chrome_enc *w, const act_chrome_opts *o)
{
    act_obuf *b = w->b;
    act_obuf_lit(b, "\"schemaVersion\":1,\"traceName\":");
    wcstr(w, trace_name(o));
    act_obuf_lit(b, ",\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":");
    write_count(b, w->tl->base_wall_ns);
    write_device_props(w);
    write_user_metadata(w, o);
}

/* An imported trace's members (tl->imported), as its file had them, after
 * its events: each a member of its own, a JSON value kept as it was. */
static void write_imported(act_chrome_enc *w, const act_chrome_opts *o)
{
    const act_timeline *tl = w->tl;
    for (size_t i = 0; i < tl->n_meta; i++) {
        const act_tl_meta *m = &tl->meta[i];
        act_obuf_lit(w->b, ",\n");
        act_chrome_str_put(w, m->key.p, m->key.n);
        act_obuf_putc(w->b, ':');
        if (m->is_json & ACT_META_JSON)
            act_obuf_put(w->b, m->value.p, m->value.n);
        else
            act_chrome_str_put(w, m->value.p, m->value.n);
    }
    if (o->stats)
        *o->stats = (act_chrome_stats){w->invalid, 0};
}

void act_chrome_head_write(act_chrome_enc *w, const act_chrome_opts *o)
{
    act_obuf *b = w->b;
    act_obuf_putc(b, '{');
    if (o->events_first || w->tl->imported) {
        act_obuf_lit(b, "\"traceEvents\":[\n");
        return;
    }
    write_props(w, o);
    act_obuf_lit(b, ",\n\"traceEvents\":[\n");
}

void act_chrome_tail_write(act_chrome_enc *w, const act_chrome_opts *o)
{
    act_obuf_lit(w->b, "\n]");
    free(w->esc); /* only event strings are cached */
    w->esc = NULL;
    if (w->tl->imported) {
        write_imported(w, o);
        act_obuf_lit(w->b, "}\n");
        return;
    }
    if (o->events_first) {
        act_obuf_lit(w->b, ",\n");
        write_props(w, o);
    }
    write_tool_metadata(w, o);
    act_obuf_lit(w->b, "}\n");
    act_chrome_enc_free_errors(w);
}
