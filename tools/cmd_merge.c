/*
 * cmd_merge.c -- `acceltrace merge A.json B.json ... -o ALL.json`: one
 * trace of several (one per rank, as `run -o 'trace.%r.json'` or
 * torch.profiler in each rank writes them), each input a process group of
 * its own, on one time axis.
 *
 * Time: traces of one boot (acceltrace's acceltrace.host.boot_id) align
 * exactly on the timeline clock they share (acceltrace.clock.
 * base_monotonic_ns); otherwise on the wall clock, through each trace's
 * anchor (acceltrace.clock.anchor: a wall-clock reading bracketed by two of
 * the timeline clock) or, for traces without one (torch.profiler's),
 * baseTimeNanoseconds. The merged trace states which, and the bound of the
 * error the anchors allow (acceltrace.merge.alignment).
 *
 * Processes: every pid of an input maps to a pid no other input uses
 * (device pids stay below 64 while they can, as the TensorBoard plugin
 * wants them, with args.device following), named "rank R · ...", device
 * processes sorted input by input below the hosts; flow and async ids are
 * made unique per input.
 *
 * Inputs are read as streams (trace_stream.c, yajl), twice: first their
 * facts (rank, clocks, earliest ts, device properties), then their events,
 * each mapped and written out as it is read. Memory is one event deep plus
 * each input's pid map, whatever the inputs' size; "-" (standard input) is
 * first copied to a temporary file, since it cannot be read twice.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "acceltrace.h"
#include "cmd.h"
#include "core/common.h"
#include "core/config.h"
#include "help.h"
#include "trace_file.h"
#include "trace_import.h"
#include "trace_stream.h"
#include "writers/chrome_json.h"
#include "writers/writer.h"

#define ID_STRIDE   10000000000LL
#define SMALL_PIDS  64
#define DEVICE_SORT 5000000LL

/* Clock values (ns) and ts (us) an input may hold: their sums and
 * differences stay far inside 64 bits (2^62 ns is 146 years; 2^51 us, 71). */
#define NS_MAX (1LL << 62)
#define TS_MAX 2251799813685248.0

typedef struct input {
    const char *path;  /* as given (messages, the report) */
    const char *file;  /* what is read: path, or standard input's copy */
    json_t *dev_props; /* deviceProperties, or NULL */
    char *boot_copy;   /* owns boot */
    int position;
    int wall_base_ts; /* baseTimeNanoseconds seen (the wall clock without an anchor) */
    long long base_wall;
    int first_ts; /* no ts seen yet */
    long long rank;
    const char *boot;     /* acceltrace.host.boot_id or NULL */
    int has_mono;         /* base_monotonic_ns known */
    int has_wall;         /* wall0 known (baseTimeNanoseconds or the anchor) */
    long long mono0;      /* timeline clock of ts 0 */
    long long wall0;      /* wall clock of ts 0 */
    long long anchor_err; /* -1: unknown */
    double min_ts;        /* earliest ts, us */
    json_t *pidmap;       /* old pid (as text) -> new pid */
    json_t *idmap;        /* ids outside [0, ID_STRIDE) -> new id */
} input;

/* Member k of o as an integer in [lo, hi]: 1, 0 when absent or not a
 * number (not used), -1 when a number outside the range (the input is
 * refused: it names a time or rank that cannot be placed). */
static int get_num(json_t *o, const char *k, long long lo, long long hi, long long *out)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < lo || i > hi)
            return -1;
        *out = (long long)i;
        return 1;
    }
    if (!json_is_real(v))
        return 0;
    double d = json_real_value(v);
    if (!(d >= (double)lo && d <= (double)hi))
        return -1;
    *out = (long long)d;
    return 1;
}

/* One line when a value cannot be placed; -1. */
static int refuse(const input *in, const char *what)
{
    fprintf(stderr,
            "acceltrace: merge: %s: %s is out of range (not a time or rank that can be "
            "placed)\n",
            in->path, what);
    return -1;
}

/* The clocks of an acceltrace trace: base_monotonic_ns, the anchor. */
static int clock_load(input *in, json_t *tool)
{
    json_t *clock = json_object_get(tool, "clock");
    json_t *anchor = json_object_get(clock, "anchor");
    int m = get_num(clock, "base_monotonic_ns", 0, NS_MAX, &in->mono0);
    if (m < 0)
        return refuse(in, "acceltrace.clock.base_monotonic_ns");
    in->has_mono = m > 0;
    long long am = 0, aw = 0, ae = 0;
    int a1 = get_num(anchor, "monotonic_ns", 0, NS_MAX, &am);
    int a2 = get_num(anchor, "realtime_ns", 0, NS_MAX, &aw);
    int a3 = get_num(anchor, "error_ns", 0, NS_MAX, &ae);
    if (a1 < 0 || a2 < 0 || a3 < 0)
        return refuse(in, "acceltrace.clock.anchor");
    if (a1 > 0 && a2 > 0 && a3 > 0 && in->has_mono) {
        long long w = aw + (in->mono0 - am); /* the wall clock of ts 0, through the anchor */
        if (w < 0 || w > NS_MAX)
            return refuse(in, "acceltrace.clock.anchor");
        in->wall0 = w;
        in->has_wall = 1;
        in->anchor_err = ae;
    }
    return 0;
}

/* First pass, each event: the earliest ts; every ts must be a time that
 * can be placed. */
static int facts_event(void *ctx, size_t i, json_t *ev)
{
    input *in = ctx;
    json_t *ts = json_object_get(ev, "ts");
    if (!json_is_number(ts))
        return 0;
    double t = json_number_value(ts);
    if (!(t >= -TS_MAX && t <= TS_MAX)) {
        fprintf(stderr,
                "acceltrace: merge: %s: event %zu has ts %g us, beyond the +-%.3g us "
                "a trace can place\n",
                in->path, i, t, TS_MAX);
        return -1;
    }
    if (in->first_ts || t < in->min_ts)
        in->min_ts = t;
    in->first_ts = 0;
    return 0;
}

/* First pass, each top-level member: rank, clocks, device properties. */
static int facts_member(void *ctx, const char *key, json_t *v)
{
    input *in = ctx;
    if (!strcmp(key, "distributedInfo")) {
        if (get_num(v, "rank", 0, INT32_MAX, &in->rank) < 0)
            return refuse(in, "distributedInfo.rank");
    } else if (!strcmp(key, "baseTimeNanoseconds")) {
        json_t *o = json_pack("{s:O}", "b", v);
        int w = get_num(o, "b", 0, NS_MAX, &in->base_wall);
        json_decref(o);
        if (w < 0)
            return refuse(in, "baseTimeNanoseconds");
        in->wall_base_ts = w > 0;
    } else if (!strcmp(key, "acceltrace")) {
        const char *boot =
            json_string_value(json_object_get(json_object_get(v, "host"), "boot_id"));
        if (boot && *boot && !(in->boot = in->boot_copy = strdup(boot)))
            return -1;
        if (clock_load(in, v))
            return -1;
    } else if (!strcmp(key, "deviceProperties") && json_is_array(v)) {
        json_decref(in->dev_props);
        in->dev_props = json_incref(v);
    }
    return 0;
}

/* Reads one input's facts (the first pass). */
static int input_load(input *in, const char *file, const char *path, int position)
{
    char err[4352];
    in->path = path;
    in->file = file;
    in->pidmap = json_object();
    in->idmap = json_object();
    in->anchor_err = -1;
    in->rank = in->position = position;
    in->first_ts = 1;
    static const char *const ts_only[] = {"ts", NULL};
    act_trace_stream_cb cb = {facts_member, facts_event, in, 1, ts_only};
    int rc = act_trace_stream(file, &cb, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "acceltrace: merge: %s\n", err);
    if (rc)
        return -1;
    /* The wall clock of ts 0: through the anchor, else baseTimeNanoseconds. */
    if (!in->has_wall && in->wall_base_ts) {
        in->wall0 = in->base_wall;
        in->has_wall = 1;
    }
    return 0;
}

/* ---- pids ----------------------------------------------------------------- */

typedef struct pids {
    json_t *used; /* new pid (as text) -> true */
    long long next_host;
    long long next_device;
    long long next_id; /* for ids id_map moves: above k * ID_STRIDE of every input */
} pids;

static int pid_used(pids *p, long long v)
{
    char k[32];
    snprintf(k, sizeof(k), "%lld", v);
    return json_object_get(p->used, k) != NULL;
}

static void pid_take(pids *p, long long v)
{
    char k[32];
    snprintf(k, sizeof(k), "%lld", v);
    json_object_set_new(p->used, k, json_true());
}

/* The merged trace's pid for `old` of input `in` (an integer, or a string
 * pid such as kineto's "Spans", which gets the rank appended). */
static json_t *pid_map(pids *p, input *in, json_t *old)
{
    json_t *k = json_is_integer(old)  ? json_sprintf("%lld", (long long)json_integer_value(old))
                : json_is_string(old) ? json_sprintf("s:%s", json_string_value(old))
                                      : NULL;
    const char *key = json_string_value(k);
    if (!key) {
        json_decref(k);
        return json_incref(old);
    }
    json_t *have = json_object_get(in->pidmap, key);
    if (have) {
        json_decref(k);
        return json_incref(have);
    }
    json_t *nv;
    if (json_is_string(old)) {
        nv = json_sprintf("%s (rank %lld)", json_string_value(old), in->rank);
    } else {
        long long v = (long long)json_integer_value(old), n = v;
        if (pid_used(p, v)) {
            if (v < SMALL_PIDS) { /* a device: the lowest free small pid */
                n = -1;
                for (long long c = 0; c < SMALL_PIDS && n < 0; c++)
                    if (!pid_used(p, c))
                        n = c;
                if (n < 0)
                    while (pid_used(p, n = p->next_device++))
                        ;
            } else {
                while (pid_used(p, n = p->next_host++))
                    ;
            }
        }
        pid_take(p, n);
        nv = json_integer(n);
    }
    json_object_set_new(in->pidmap, key, nv);
    json_decref(k);
    return json_incref(nv);
}

/* ---- events --------------------------------------------------------------- */

/* Flow and async ids made unique per input: k * ID_STRIDE + id, ids
 * outside [0, ID_STRIDE) through a map to ids above every input's, a
 * string id with its input appended. */
static json_t *id_map(pids *p, input *in, int k, json_t *id)
{
    if (json_is_string(id))
        return json_sprintf("%s (input %d)", json_string_value(id), k);
    if (!json_is_integer(id))
        return json_incref(id);
    json_int_t v = json_integer_value(id);
    if (v >= 0 && v < ID_STRIDE)
        return json_integer(k * ID_STRIDE + v);
    char key[32];
    snprintf(key, sizeof(key), "%lld", (long long)v);
    json_t *have = json_object_get(in->idmap, key);
    if (!have) {
        have = json_integer(p->next_id++);
        json_object_set_new(in->idmap, key, have);
    }
    return json_incref(have);
}

/* Rewrites one event of input `in` (number k) for the merged trace. */
static void event_map(pids *p, input *in, int k, json_t *ev, double shift_us)
{
    json_t *pid = json_object_get(ev, "pid");
    if (pid) {
        json_t *np = pid_map(p, in, pid);
        json_t *args = json_object_get(ev, "args");
        json_t *dev = json_object_get(args, "device");
        /* kineto's pairing (pid == args.device) survives the new pid */
        if (json_is_integer(dev) && json_is_integer(pid) && json_equal(dev, pid))
            json_object_set(args, "device", np);
        json_object_set_new(ev, "pid", np);
    }
    json_t *ts = json_object_get(ev, "ts");
    if (json_is_number(ts))
        json_object_set_new(ev, "ts", json_real(json_number_value(ts) + shift_us));
    json_t *id = json_object_get(ev, "id");
    if (id)
        json_object_set_new(ev, "id", id_map(p, in, k, id));
    const char *name = json_string_value(json_object_get(ev, "name"));
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    if (!name || !ph || strcmp(ph, "M"))
        return;
    json_t *args = json_object_get(ev, "args");
    if (!strcmp(name, "process_name") && json_is_string(json_object_get(args, "name"))) {
        json_object_set_new(args, "name",
                            json_sprintf("rank %lld \xc2\xb7 %s", in->rank,
                                         json_string_value(json_object_get(args, "name"))));
    } else if (!strcmp(name, "process_sort_index")) {
        long long si = 0;
        /* Devices of input k sort together, after every host, input by
         * input (a sort index of 5000000 or more marks a device process). */
        if (get_num(args, "sort_index", -NS_MAX, NS_MAX, &si) > 0 && si >= DEVICE_SORT)
            json_object_set_new(args, "sort_index",
                                json_integer(DEVICE_SORT + k * 1000 + (si - DEVICE_SORT) % 1000));
    }
}

/* ---- the whole merge ------------------------------------------------------ */

typedef struct alignment {
    int monotonic;       /* one boot: the shared clock */
    int as_written;      /* no input states a clock: ts as written */
    long long bound_ns;  /* -1: unknown */
    const char *assumes; /* NULL: nothing */
} alignment;

static const char *method_name(const alignment *a)
{
    return a->monotonic    ? "monotonic clock (one boot)"
           : a->as_written ? "ts as written"
                           : "wall clock";
}

/* Whether every input is of one boot (their shared clock); any input
 * may lack a boot id (a foreign trace). */
static int one_boot(const input *in, int n)
{
    for (int i = 0; i < n; i++)
        if (!in[i].has_mono || !in[i].boot || !in[0].boot || strcmp(in[i].boot, in[0].boot))
            return 0;
    return 1;
}

/* Inputs none of which states a clock are placed as written; one without
 * a clock among inputs with one cannot be placed: refused. */
static int align_unclocked(const input *in, int n, alignment *a)
{
    int walls = 0;
    for (int i = 0; i < n; i++)
        walls += in[i].has_wall;
    if (!walls) {
        a->as_written = 1;
        a->bound_ns = -1;
        a->assumes = "no input states a clock (baseTimeNanoseconds, acceltrace.clock): events "
                     "are placed by their ts as written, as if of one clock";
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (!in[i].has_wall) {
            fprintf(stderr,
                    "acceltrace: merge: %s: no clock to place it beside the others (no "
                    "baseTimeNanoseconds, no acceltrace.clock)\n",
                    in[i].path);
            return -1;
        }
    return 0;
}

/* 0 and the alignment in *a, or -1 after saying why the inputs cannot
 * be placed on one axis. */
static int align_inputs(input *in, int n, alignment *out)
{
    alignment a = {1, 0, 0, NULL};
    a.monotonic = one_boot(in, n);
    int u = a.monotonic ? 0 : align_unclocked(in, n, &a);
    *out = a;
    if (a.monotonic || u)
        return u < 0 ? -1 : 0;
    /* Through the wall clock: two inputs disagree by at most the sum of
     * their anchors' errors; across hosts, plus their clocks' offset. */
    long long e1 = 0, e2 = 0;
    for (int i = 0; i < n; i++) {
        if (in[i].anchor_err < 0) {
            a.bound_ns = -1;
            break;
        }
        if (in[i].anchor_err > e1) {
            e2 = e1;
            e1 = in[i].anchor_err;
        } else if (in[i].anchor_err > e2) {
            e2 = in[i].anchor_err;
        }
    }
    if (a.bound_ns >= 0)
        a.bound_ns = e1 + e2;
    if (a.bound_ns < 0)
        a.assumes = "traces without a clock anchor (torch.profiler's) are placed by their "
                    "baseTimeNanoseconds, whose error they do not state; traces of several hosts "
                    "also assume the hosts' wall clocks agree (NTP/PTP)";
    else
        a.assumes = "the hosts' wall clocks agree (NTP/PTP); their offset is not measured and "
                    "adds to the bound";
    *out = a;
    return 0;
}

static long long zero_of(const input *in, const alignment *a)
{
    return a->monotonic ? in->mono0 : a->as_written ? 0 : in->wall0;
}

/* ---- writing as it goes ---------------------------------------------------- */

/* The merged trace being written: plain or gzip, through a buffer (jansson
 * hands its output over a few bytes at a time); the first error kept. */
#define SINK_BUF (1u << 16)

typedef struct sink {
    FILE *f;
    gzFile gz;
    int err; /* errno of the first failure */
    size_t n;
    char buf[SINK_BUF];
} sink;

static void sink_flush(sink *o)
{
    if (o->err || !o->n)
        return;
    if (o->gz) {
        if (gzwrite(o->gz, o->buf, (unsigned)o->n) != (int)o->n) {
            int zerr;
            gzerror(o->gz, &zerr);
            o->err = zerr == Z_ERRNO && errno ? errno : EIO;
        }
    } else if (fwrite(o->buf, 1, o->n, o->f) != o->n) {
        o->err = errno ? errno : EIO;
    }
    o->n = 0;
}

static int sink_write(const char *buf, size_t n, void *data)
{
    sink *o = data;
    if (o->n + n > SINK_BUF)
        sink_flush(o);
    if (n > SINK_BUF) {
        if (!o->err &&
            (o->gz ? gzwrite(o->gz, buf, (unsigned)n) != (int)n : fwrite(buf, 1, n, o->f) != n))
            o->err = errno ? errno : EIO;
    } else {
        memcpy(o->buf + o->n, buf, n);
        o->n += n;
    }
    return o->err ? -1 : 0;
}

static void sink_str(sink *o, const char *s)
{
    sink_write(s, strlen(s), o);
}

static void sink_json(sink *o, const json_t *v)
{
    if (json_dump_callback(v, sink_write, o, JSON_COMPACT | JSON_ENCODE_ANY) && !o->err)
        o->err = ENOMEM;
}

/* ---- an event written by hand (what json_dump_callback writes, parsed
 * back the same, at a fraction of its cost: BENCHMARKS.md "Streaming
 * merge") ---- */

/* Room for n more bytes in the buffer (flushing it first if need be);
 * NULL after a write error. n is at most SINK_BUF. */
static char *sink_room(sink *o, size_t n)
{
    if (o->n + n > SINK_BUF)
        sink_flush(o);
    return o->err ? NULL : o->buf + o->n;
}

static void put_u64(sink *o, uint64_t v, int neg)
{
    char t[24], *p = t + sizeof(t), *d;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (neg)
        *--p = '-';
    size_t n = (size_t)(t + sizeof(t) - p);
    if ((d = sink_room(o, n))) {
        memcpy(d, p, n);
        o->n += n;
    }
}

static void put_int(sink *o, json_int_t i)
{
    put_u64(o, i < 0 ? 0 - (uint64_t)i : (uint64_t)i, i < 0);
}

/* A real: with at most three decimals when that reads back as the same
 * double (the times of a trace: microseconds to the ns), else as jansson
 * writes it (%.17g, with ".0" when it looks like an integer). */
static void put_real(sink *o, double d)
{
    double a = d < 0 ? -d : d;
    if (a < 1e12) {
        uint64_t k = (uint64_t)(a * 1000.0 + 0.5);
        if ((double)k / 1000.0 == a) {
            put_u64(o, k / 1000, d < 0);
            char *p = sink_room(o, 4);
            if (!p)
                return;
            unsigned f = (unsigned)(k % 1000);
            p[0] = '.';
            p[1] = (char)('0' + f / 100);
            size_t n = 2;
            if (f % 100) {
                p[2] = (char)('0' + f / 10 % 10);
                n = 3;
                if (f % 10)
                    p[3] = (char)('0' + f % 10), n = 4;
            }
            o->n += n;
            return;
        }
    }
    char t[40];
    int n = snprintf(t, sizeof(t), "%.17g", d);
    if (n > 0 && (size_t)n < sizeof(t) - 2 && !strpbrk(t, ".eEin"))
        memcpy(t + n, ".0", 3), n += 2;
    sink_write(t, n > 0 ? (size_t)n : 0, o);
}

/* A string, escaped as JSON wants: '"', '\\' and control characters. */
static void put_string(sink *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    sink_write("\"", 1, o);
    size_t i = 0;
    while (i < n && !o->err) {
        size_t j = i;
        while (j < n && (unsigned char)s[j] >= 0x20 && s[j] != '"' && s[j] != '\\')
            j++;
        if (j > i)
            sink_write(s + i, j - i, o);
        if (j == n)
            break;
        char e[6] = {'\\', 'u', '0', '0', hex[(unsigned char)s[j] >> 4], hex[s[j] & 15]};
        int len = 6;
        switch (s[j]) {
        case '"': e[1] = '"', len = 2; break;
        case '\\': e[1] = '\\', len = 2; break;
        case '\n': e[1] = 'n', len = 2; break;
        case '\t': e[1] = 't', len = 2; break;
        case '\r': e[1] = 'r', len = 2; break;
        default: break;
        }
        sink_write(e, (size_t)len, o);
        i = j + 1;
    }
    sink_write("\"", 1, o);
}

static void put_value(sink *o, json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *x;
        int first = 1;
        sink_write("{", 1, o);
        json_object_foreach(v, key, x)
        {
            if (!first)
                sink_write(",", 1, o);
            first = 0;
            put_string(o, key, strlen(key));
            sink_write(":", 1, o);
            put_value(o, x);
        }
        sink_write("}", 1, o);
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        sink_write("[", 1, o);
        json_array_foreach(v, i, x)
        {
            if (i)
                sink_write(",", 1, o);
            put_value(o, x);
        }
        sink_write("]", 1, o);
        break;
    }
    case JSON_STRING: put_string(o, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: put_int(o, json_integer_value(v)); break;
    case JSON_REAL: put_real(o, json_real_value(v)); break;
    case JSON_TRUE: sink_write("true", 4, o); break;
    case JSON_FALSE: sink_write("false", 5, o); break;
    default: sink_write("null", 4, o); break;
    }
}

/* Second pass: each event of input k mapped and written. */
typedef struct writing {
    sink *out;
    pids *p;
    input *in;
    int k;
    double shift;
    unsigned long long written;
} writing;

static int write_event(void *ctx, size_t i, json_t *ev)
{
    writing *w = ctx;
    (void)i;
    if (!json_is_object(ev))
        return 0;
    event_map(w->p, w->in, w->k, ev, w->shift);
    if (w->written++)
        sink_write(",", 1, w->out);
    put_value(w->out, ev);
    return w->out->err ? -1 : 0;
}

/* deviceProperties of input k, on the merged pids, with its rank. */
static void props_add(json_t *props, const input *in)
{
    size_t i;
    json_t *ev;
    json_array_foreach(in->dev_props, i, ev)
    {
        json_t *c = json_deep_copy(ev);
        json_t *pid = json_object_get(c, "pid");
        if (json_is_integer(pid)) {
            char key[32];
            snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(pid));
            json_t *np = json_object_get(in->pidmap, key);
            if (np)
                json_object_set(c, "pid", np);
        }
        json_object_set_new(c, "rank", json_integer(in->rank));
        json_array_append_new(props, c);
    }
}

/* The merge's own report (acceltrace.merge) and clock. */
static json_t *merge_report(json_t *inputs, const alignment *a)
{
    json_t *al = json_pack("{s:s}", "method", method_name(a));
    json_object_set_new(al, "error_bound_ns",
                        a->bound_ns >= 0 ? json_integer(a->bound_ns) : json_null());
    if (a->assumes)
        json_object_set_new(al, "assumes", json_string(a->assumes));
    char method[96];
    snprintf(method, sizeof(method), "merged on the %s", method_name(a));
    json_t *clock =
        json_pack("{s:s,s:O}", "method", method, "error_ns", json_object_get(al, "error_bound_ns"));
    return json_pack("{s:o,s:{s:o,s:o}}", "clock", clock, "merge", "inputs", inputs, "alignment",
                     al);
}

/* Writes the merged trace into `out` as the inputs are read again; 0, or
 * -1 after saying why. */
static int merge_stream(input *in, int n, const alignment *a, sink *out)
{
    /* The earliest event of all, on the chosen clock, becomes ts 0. */
    long long base = 0, wall_base = 0;
    for (int i = 0; i < n; i++) {
        long long t = zero_of(&in[i], a) + (long long)(in[i].min_ts * 1000.0);
        if (!i || t < base)
            base = t;
    }
    for (int k = 0; k < n; k++)
        if (!a->as_written && (!k || in[k].anchor_err >= 0))
            wall_base = in[k].wall0 + (base - zero_of(&in[k], a));
    char head[256];
    snprintf(head, sizeof(head),
             "{\"schemaVersion\":1,\"traceName\":\"acceltrace merge\",\"displayTimeUnit\":"
             "\"ms\",\"baseTimeNanoseconds\":%lld,\"traceEvents\":[",
             wall_base);
    sink_str(out, head);
    pids p = {json_object(), 4194304 + 1, DEVICE_SORT, (n + 1LL) * ID_STRIDE};
    json_t *props = json_array(), *report = json_array();
    writing w = {out, &p, NULL, 0, 0, 0};
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        w.in = &in[k];
        w.k = k;
        w.shift = (double)(zero_of(&in[k], a) - base) / 1000.0;
        char err[4352];
        int s = act_trace_stream(in[k].file, &(act_trace_stream_cb){NULL, write_event, &w, 0, NULL},
                                 err, sizeof(err));
        if (s < 0) /* it changed since the first pass */
            fprintf(stderr, "acceltrace: merge: %s\n", err);
        rc = s ? -1 : 0;
        props_add(props, &in[k]);
        json_array_append_new(report, json_pack("{s:s,s:I,s:f,s:O}", "file", in[k].path, "rank",
                                                (json_int_t)in[k].rank, "shift_us", w.shift, "pids",
                                                in[k].pidmap));
    }
    json_t *rep = merge_report(report, a);
    sink_str(out, "],\"deviceProperties\":");
    sink_json(out, props);
    sink_str(out, ",\"acceltrace\":");
    sink_json(out, rep);
    sink_str(out, "}\n");
    json_decref(rep);
    json_decref(props);
    json_decref(p.used);
    return rc;
}

/* Whether out names a Perfetto trace (the writers' table: .pftrace). */
static int out_is_pftrace(const char *out)
{
    act_writer_pick pick[ACT_WRITERS_MAX];
    return act_writers_pick(out, 0, pick) && pick[0].ops == &act_writer_pftrace;
}

static int merge_write(input *in, int n, const alignment *a, const char *out);

/* The merged trace as a Perfetto protobuf trace (docs/pftrace.md, "Merged
 * traces"): the merged JSON, written beside out under a temporary name,
 * then imported as `export -o out.pftrace merged.json` imports a trace
 * (trace_import.c), and removed. 0, or -1 after saying why. */
static int merge_write_pftrace(input *in, int n, const alignment *a, const char *out)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.merge.json", out) >= sizeof(tmp)) {
        fprintf(stderr, "acceltrace: merge: cannot write %s: %s\n", out, strerror(ENAMETOOLONG));
        return -1;
    }
    struct stat st;
    if (stat(tmp, &st) == 0) { /* not ours to replace */
        fprintf(stderr, "acceltrace: merge: cannot write %s: %s is in the way\n", out, tmp);
        return -1;
    }
    if (merge_write(in, n, a, tmp))
        return -1;
    act_import_opts o = {.in_path = tmp, .out_path = out, .force = 1, .who = "merge"};
    uint64_t events = 0;
    int rc = act_trace_import(&o, &events);
    remove(tmp);
    return rc ? -1 : 0;
}

/* The merged trace to a temporary name beside out, then in place; 0, or
 * -1 after saying why (ENOSPC, EFBIG: SIGXFSZ is ignored). */
static int merge_write(input *in, int n, const alignment *a, const char *out)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= sizeof(tmp)) {
        fprintf(stderr, "acceltrace: merge: cannot write %s: %s\n", out, strerror(ENAMETOOLONG));
        return -1;
    }
    signal(SIGXFSZ, SIG_IGN);
    sink *o = calloc(1, sizeof(*o));
    if (o && act_path_is_gzip(out))
        o->gz = gzopen(tmp, "wb6");
    else if (o)
        o->f = fopen(tmp, "wb");
    if (!o || (!o->gz && !o->f)) {
        fprintf(stderr, "acceltrace: merge: cannot write %s: %s\n", out, strerror(errno));
        free(o);
        return -1;
    }
    int rc = merge_stream(in, n, a, o);
    sink_flush(o);
    int cerr = o->gz ? gzclose(o->gz) != Z_OK : fclose(o->f) != 0;
    if (!o->err && cerr)
        o->err = errno ? errno : EIO;
    int err = o->err;
    free(o);
    if (rc || err || rename(tmp, out)) {
        if (!rc)
            fprintf(stderr, "acceltrace: merge: cannot write %s: %s\n", out,
                    strerror(err ? err : errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

/* "-": standard input copied to a temporary file (read twice). */
static const char *stdin_spill(char *path, size_t len)
{
    act_temp_template(path, len, "acceltrace-merge");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    char buf[1 << 16];
    ssize_t r;
    int ok = 1;
    while (ok && (r = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
        if (r < 0) {
            ok = errno == EINTR;
            continue;
        }
        ok = write(fd, buf, (size_t)r) == r;
    }
    if (close(fd) != 0 || !ok) {
        unlink(path);
        return NULL;
    }
    return path;
}

int act_cmd_merge(int argc, char **argv)
{
    static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                          {"force", no_argument, NULL, 'f'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    const char *out = NULL;
    int force = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:fh", longs, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'f': force = 1; break;
        case 'h': act_help_print("merge", stdout); return 0;
        default: return act_help_usage_error("merge", "unknown option '%s'", argv[optind - 1]);
        }
    }
    int n = argc - optind;
    if (!out || n < 1)
        return act_help_usage_error("merge", "%s",
                                    !out ? "-o OUT.json is required" : "no input traces given");
    char err[512];
    if (act_config_check_env(err, sizeof(err)) != 0) { /* as run and summary do: exit 2 */
        fprintf(stderr, "acceltrace: merge: %s\n", err);
        return 2;
    }
    struct stat st;
    if (!force && stat(out, &st) == 0) {
        fprintf(stderr, "acceltrace: merge: '%s' exists; use --force to overwrite it\n", out);
        return 2;
    }
    input *in = calloc((size_t)n, sizeof(*in));
    char spill[PATH_MAX] = "";
    int rc = in ? 0 : 2;
    for (int i = 0; !rc && i < n; i++) {
        const char *path = argv[optind + i];
        if (!strcmp(path, "-")) {
            if (spill[0]) {
                fprintf(stderr, "acceltrace: merge: standard input given twice\n");
                rc = 2;
                break;
            }
            if (!stdin_spill(spill, sizeof(spill))) {
                fprintf(stderr, "acceltrace: merge: cannot keep standard input: %s\n",
                        strerror(errno));
                rc = 2;
                break;
            }
            path = spill;
        }
        if (input_load(&in[i], path, argv[optind + i], i))
            rc = 2;
    }
    alignment a;
    if (!rc && align_inputs(in, n, &a))
        rc = 2;
    if (!rc) {
        rc = (out_is_pftrace(out) ? merge_write_pftrace(in, n, &a, out)
                                  : merge_write(in, n, &a, out))
                 ? 2
                 : 0;
        if (!rc)
            fprintf(stderr, "acceltrace: merged %d traces into %s (aligned on the %s)\n", n, out,
                    a.monotonic ? "monotonic clock of one boot" : method_name(&a));
    }
    for (int i = 0; in && i < n; i++) {
        json_decref(in[i].dev_props);
        json_decref(in[i].pidmap);
        json_decref(in[i].idmap);
        free(in[i].boot_copy);
    }
    if (spill[0])
        unlink(spill);
    free(in);
    return rc;
}
