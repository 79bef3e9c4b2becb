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
 * Inputs are read with jansson (whole documents: a merge holds them all).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "core/config.h"
#include "help.h"
#include "trace_file.h"
#include "writers/chrome_json.h"

#define ID_STRIDE   10000000000LL
#define SMALL_PIDS  64
#define DEVICE_SORT 5000000LL

/* Clock values (ns) and ts (us) an input may hold: their sums and
 * differences stay far inside 64 bits (2^62 ns is 146 years; 2^51 us, 71). */
#define NS_MAX (1LL << 62)
#define TS_MAX 2251799813685248.0

typedef struct input {
    const char *path;
    json_t *doc;
    json_t *events;
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

/* The earliest ts; every ts must be a time that can be placed. */
static int ts_scan(input *in)
{
    int first = 1;
    size_t i;
    json_t *ev;
    json_array_foreach(in->events, i, ev)
    {
        json_t *ts = json_object_get(ev, "ts");
        if (!json_is_number(ts))
            continue;
        double t = json_number_value(ts);
        if (!(t >= -TS_MAX && t <= TS_MAX)) {
            fprintf(stderr,
                    "acceltrace: merge: %s: event %zu has ts %g us, beyond the +-%.3g us "
                    "a trace can place\n",
                    in->path, i, t, TS_MAX);
            return -1;
        }
        if (first || t < in->min_ts)
            in->min_ts = t;
        first = 0;
    }
    return 0;
}

/* Reads one input and its clock facts. */
static int input_load(input *in, const char *path, int position)
{
    char err[4352];
    in->path = path;
    in->doc = act_trace_load(path, JSON_DECODE_ANY, err, sizeof(err));
    if (!in->doc) {
        fprintf(stderr, "acceltrace: merge: %s\n", err);
        return -1;
    }
    if (json_is_array(in->doc)) { /* the bare-array form */
        json_t *obj = json_object();
        json_object_set_new(obj, "traceEvents", in->doc);
        in->doc = obj;
    }
    in->events = json_object_get(in->doc, "traceEvents");
    if (!json_is_object(in->doc) || !json_is_array(in->events)) {
        fprintf(stderr, "acceltrace: merge: %s: not a Chrome trace (no traceEvents)\n", path);
        return -1;
    }
    in->pidmap = json_object();
    in->idmap = json_object();
    in->anchor_err = -1;
    in->rank = position;
    json_t *dist = json_object_get(in->doc, "distributedInfo");
    if (get_num(dist, "rank", 0, INT32_MAX, &in->rank) < 0)
        return refuse(in, "distributedInfo.rank");
    int w = get_num(in->doc, "baseTimeNanoseconds", 0, NS_MAX, &in->wall0);
    if (w < 0)
        return refuse(in, "baseTimeNanoseconds");
    in->has_wall = w > 0;
    json_t *tool = json_object_get(in->doc, "acceltrace");
    in->boot = json_string_value(json_object_get(json_object_get(tool, "host"), "boot_id"));
    if (in->boot && !*in->boot)
        in->boot = NULL;
    return clock_load(in, tool) || ts_scan(in) ? -1 : 0;
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

/* Pids whose process sorts among devices (sort index >= 5000000). */
static json_t *device_pids_of(input *in)
{
    json_t *out = json_object();
    size_t i;
    json_t *ev;
    json_array_foreach(in->events, i, ev)
    {
        const char *name = json_string_value(json_object_get(ev, "name"));
        json_t *pid = json_object_get(ev, "pid");
        long long si = 0;
        if (name && !strcmp(name, "process_sort_index") && json_is_integer(pid) &&
            get_num(json_object_get(ev, "args"), "sort_index", -NS_MAX, NS_MAX, &si) > 0 &&
            si >= DEVICE_SORT) {
            char k[32];
            snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(pid));
            json_object_set_new(out, k, json_true());
        }
    }
    return out;
}

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
static void event_map(pids *p, input *in, int k, json_t *ev, double shift_us, json_t *device_pids)
{
    json_t *pid = json_object_get(ev, "pid");
    (void)device_pids;
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

static json_t *merge_doc(input *in, int n, const alignment *a)
{
    /* The earliest event of all, on the chosen clock, becomes ts 0. */
    long long base = 0;
    for (int i = 0; i < n; i++) {
        long long t = zero_of(&in[i], a) + (long long)(in[i].min_ts * 1000.0);
        if (!i || t < base)
            base = t;
    }
    pids p = {json_object(), 4194304 + 1, DEVICE_SORT, (n + 1LL) * ID_STRIDE};
    json_t *events = json_array(), *props = json_array(), *report = json_array();
    long long wall_base = 0;
    for (int k = 0; k < n; k++) {
        double shift = (double)(zero_of(&in[k], a) - base) / 1000.0;
        if (!a->as_written && (!k || in[k].anchor_err >= 0))
            wall_base = in[k].wall0 + (base - zero_of(&in[k], a));
        json_t *dpids = device_pids_of(&in[k]);
        size_t i;
        json_t *ev;
        json_array_foreach(in[k].events, i, ev)
        {
            if (!json_is_object(ev))
                continue;
            event_map(&p, &in[k], k, ev, shift, dpids);
            json_array_append(events, ev);
        }
        json_decref(dpids);
        json_t *dp = json_object_get(in[k].doc, "deviceProperties");
        json_array_foreach(dp, i, ev)
        {
            json_t *c = json_deep_copy(ev);
            json_t *pid = json_object_get(c, "pid");
            if (json_is_integer(pid)) {
                char key[32];
                snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(pid));
                json_t *np = json_object_get(in[k].pidmap, key);
                if (np)
                    json_object_set(c, "pid", np);
            }
            json_object_set_new(c, "rank", json_integer(in[k].rank));
            json_array_append_new(props, c);
        }
        json_array_append_new(report, json_pack("{s:s,s:I,s:f,s:o}", "file", in[k].path, "rank",
                                                (json_int_t)in[k].rank, "shift_us", shift, "pids",
                                                json_incref(in[k].pidmap)));
    }
    json_decref(p.used);
    json_t *al = json_pack("{s:s}", "method", method_name(a));
    json_object_set_new(al, "error_bound_ns",
                        a->bound_ns >= 0 ? json_integer(a->bound_ns) : json_null());
    if (a->assumes)
        json_object_set_new(al, "assumes", json_string(a->assumes));
    json_t *doc = json_object();
    json_object_set_new(doc, "schemaVersion", json_integer(1));
    json_object_set_new(doc, "traceName", json_string("acceltrace merge"));
    json_object_set_new(doc, "displayTimeUnit", json_string("ms"));
    json_object_set_new(doc, "baseTimeNanoseconds", json_integer(wall_base));
    json_object_set_new(doc, "deviceProperties", props);
    json_object_set_new(doc, "traceEvents", events);
    /* The clock every acceltrace trace states: here the merge's alignment. */
    char method[96];
    snprintf(method, sizeof(method), "merged on the %s", method_name(a));
    json_t *clock =
        json_pack("{s:s,s:O}", "method", method, "error_ns", json_object_get(al, "error_bound_ns"));
    json_object_set_new(
        doc, "acceltrace",
        json_pack("{s:o,s:{s:o,s:o}}", "clock", clock, "merge", "inputs", report, "alignment", al));
    return doc;
}

/* The merged trace to a temporary name beside out, then in place; 0, or
 * -1 after saying why (ENOSPC, EFBIG: SIGXFSZ is ignored). */
static int merge_write(json_t *doc, const char *out)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= sizeof(tmp)) {
        fprintf(stderr, "acceltrace: merge: cannot write %s: %s\n", out, strerror(ENAMETOOLONG));
        return -1;
    }
    signal(SIGXFSZ, SIG_IGN);
    if (act_trace_dump(doc, tmp, act_path_is_gzip(out), JSON_COMPACT) || rename(tmp, out)) {
        fprintf(stderr, "acceltrace: merge: cannot write %s: %s\n", out, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
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
    int rc = in ? 0 : 2;
    for (int i = 0; !rc && i < n; i++)
        if (input_load(&in[i], argv[optind + i], i))
            rc = 2;
    alignment a;
    if (!rc && align_inputs(in, n, &a))
        rc = 2;
    if (!rc) {
        json_t *doc = merge_doc(in, n, &a);
        rc = merge_write(doc, out) ? 2 : 0;
        if (!rc)
            fprintf(stderr, "acceltrace: merged %d traces into %s (aligned on the %s)\n", n, out,
                    a.monotonic ? "monotonic clock of one boot" : method_name(&a));
        json_decref(doc);
    }
    for (int i = 0; in && i < n; i++) {
        json_decref(in[i].doc);
        json_decref(in[i].pidmap);
        json_decref(in[i].idmap);
    }
    free(in);
    return rc;
}
