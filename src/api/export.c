/*
 * export.c -- act_trace_export(): every spool of a run -> built timeline
 * -> its writers (writers/writer.h: the trace file the output's name
 * picks, and the summary when wanted). A spool that cannot be read is
 * reported in the trace's error list and the result is ACT_E_FORMAT, but
 * the trace of the other processes is still written.
 */
#include "export.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "export_progress.h"
#include "timeline/timeline.h"
#include "writers/writer.h"

typedef struct spool_set {
    act_spool *sp; /* opened spools */
    act_spool **ptr;
    size_t n;
    char **failed; /* one line per unreadable spool */
    size_t n_failed;
    size_t n_unread; /* of which for want of memory (address space): the spool is worth keeping */
} spool_set;

static int add_failure(spool_set *s, const char *line)
{
    char **nf = realloc(s->failed, (s->n_failed + 1) * sizeof(*nf));
    if (!nf)
        return ACT_E_NOMEM;
    s->failed = nf;
    s->failed[s->n_failed] = strdup(line);
    if (!s->failed[s->n_failed])
        return ACT_E_NOMEM;
    s->n_failed++;
    return 0;
}

/* One line on stderr when a process ran out of room for its spool (the
 * trace's errors say which process and how much). Read from the mapped
 * header, as the program left it: the copy of a spool read while the
 * program ran is the one taken when it was opened (its last scan, which
 * refreshes it, comes later), so a spool the reader opened before it
 * filled up said nothing. */
static void note_no_space(const spool_set *s, const char *dir)
{
    uint64_t lost = 0;
    int err = 0;
    for (size_t i = 0; i < s->n; i++) {
        const act_spool_header *h = s->ptr[i]->map
                                        ? (const act_spool_header *)(const void *)s->ptr[i]->map
                                        : &s->ptr[i]->hdr;
        if (!h->space_errno)
            continue;
        err = (int)h->space_errno;
        for (int k = 0; k < ACT_REC_KIND_MAX; k++)
            lost += h->dropped[k];
    }
    if (err)
        act_log("no room for the spool in %s (%s): %llu records dropped, counted per kind in the "
                "trace",
                dir, strerror(err), (unsigned long long)lost);
}

/* The export's writers, fed every batch of events the build makes: each
 * takes the batch, then it is emptied. */
typedef struct export_sink {
    act_writer_pick pick[ACT_WRITERS_MAX]; /* the writers the output asks for */
    size_t n_pick;
    act_writer *w[ACT_WRITERS_MAX]; /* those open, in the order picked */
    size_t n;
    act_writer_found found;              /* what the trace writer found, for the summary */
    volatile const sig_atomic_t *cancel; /* stop early once set */
    act_export_progress *progress;       /* NULL: none */
    uint64_t written;                    /* events handed to the writers */
} export_sink;

/* A sink for the output o asks for (its name; a summary or not). */
static export_sink *sink_new(const act_export_opts *o)
{
    export_sink *x = calloc(1, sizeof(*x));
    if (x)
        x->n_pick = act_writers_pick(o->out_path, o->summary != NULL, x->pick);
    return x;
}

static int export_sink_fn(act_timeline *tl, void *ctx)
{
    export_sink *x = ctx;
    if (x->cancel && *x->cancel)
        return ACT_E_STATE; /* the writers remove their temporary files */
    act_export_progress_events(x->progress, tl->n_ev);
    x->written += tl->n_ev;
    int rc = 0;
    for (size_t i = 0; i < x->n; i++) {
        int wrc = x->w[i]->ops->batch(x->w[i], tl);
        rc = rc ? rc : wrc;
    }
    tl->n_ev = 0;
    tl->n_args = 0;
    return rc;
}

/* Between reads of a live build: each writer starts writing what it has
 * buffered (act_writer_ops.idle). */
static int sink_idle(export_sink *x)
{
    int rc = 0;
    for (size_t i = 0; i < x->n; i++) {
        int wrc = x->w[i]->ops->idle ? x->w[i]->ops->idle(x->w[i]) : 0;
        rc = rc ? rc : wrc;
    }
    return rc;
}

/* Every event written, the exit's facts to come (act_writer_ops.settle). */
static void sink_settle(export_sink *x, act_timeline *tl)
{
    for (size_t i = 0; i < x->n; i++)
        if (x->w[i]->ops->settle)
            x->w[i]->ops->settle(x->w[i], tl);
}

/* The writers' facts from the export's options (the live trace and the
 * one at the exit must name the same trace). */
static act_writer_facts writer_facts(const act_export_opts *o, int status, act_writer_found *found,
                                     int events_first)
{
    return (act_writer_facts){.path = o->out_path,
                              .force = o->force,
                              .mode = o->trace_mode,
                              .replaced_fd = o->replaced_fd,
                              .trace_name = o->trace_name,
                              .argv = o->argv,
                              .argc = o->argc,
                              .extra_metadata = o->extra_metadata,
                              .child_status = status,
                              .events_first = events_first,
                              .report = o->summary,
                              .by_range = o->summary_by_range,
                              .found = found};
}

/* Open every writer picked, in order; on failure the caller closes those
 * open (sink_close with ok 0). */
static int sink_open(export_sink *x, act_timeline *tl, const act_writer_facts *facts, char *err,
                     size_t errlen)
{
    for (size_t i = 0; i < x->n_pick; i++) {
        act_writer_facts f = *facts;
        f.options = x->pick[i].options;
        act_writer *w = NULL;
        int rc = x->pick[i].ops->open(&w, tl, &f, err, errlen);
        if (w)
            x->w[x->n++] = w;
        if (rc)
            return rc;
    }
    return 0;
}

/* The facts learnt at the end, for writers opened while the program ran. */
static void sink_set_facts(export_sink *x, const act_writer_facts *facts)
{
    for (size_t i = 0; i < x->n; i++) {
        act_writer_facts f = *facts;
        f.options = x->pick[i].options;
        x->w[i]->ops->set_facts(x->w[i], &f);
    }
}

/* Close the writers in order, each with ok while all before it succeeded:
 * the files first, then the reports (the progress line cleared before
 * them, their time in summary_ns). Returns the first error (its reason
 * logged). */
static int sink_close(export_sink *x, act_timeline *tl, int rc, act_export_progress **progress,
                      act_export_times *tm)
{
    uint64_t t = act_clock_now();
    for (size_t i = 0; i < x->n; i++) {
        act_writer *w = x->w[i];
        int report = (w->ops->flags & ACT_WRITER_REPORT) != 0;
        if (report && progress) {
            act_export_progress_stop(*progress); /* its line is cleared before a report */
            *progress = NULL;
        }
        char err[512] = "";
        int crc = w->ops->close(w, tl, !rc, err, sizeof(err));
        if (!rc && crc)
            rc = crc;
        if (rc && err[0])
            act_log("%s", err);
        uint64_t d = act_clock_now() - t;
        t += d;
        if (tm && !report)
            tm->close_ns += d;
        else if (tm && !rc) /* a report's time only when it printed */
            tm->summary_ns += d;
    }
    x->n = 0;
    return rc;
}

struct act_export_live {
    char *dir;  /* the spool directory */
    char *path; /* <dir>/<pid>.acts */
    act_spool sp;
    int opened;
    act_timeline tl;
    act_tl_build *bs;
    int want_out;        /* act_export_live_output was called */
    act_export_opts out; /* its options (borrowed) */
    export_sink *x;      /* the trace written while the program runs; NULL: none */
    int voided;          /* what it wrote early proved void at the end (rewritten) */
    int refused;         /* the spool cannot be read live (act_spool_open_live) */
    /* act_export_live_finish: 1 when the rest was read and every event
     * written at the seal (the builder keeps `fin`, its set), -1 when
     * that failed (the export writes anew), 0 when not tried. */
    int finished;
    act_spool *fin[1];
    uint64_t devops; /* written early, kept when the builder is let go at the seal */
    uint64_t early_ns;
    uint64_t early_records; /* of them, read by it */
};

act_export_live *act_export_live_new(const char *spool_dir, long pid)
{
    act_export_live *l = calloc(1, sizeof(*l));
    size_t n = strlen(spool_dir) + 32;
    if (l && (l->path = malloc(n)))
        snprintf(l->path, n, "%s/%ld.acts", spool_dir, pid);
    if (l && (!l->path || !(l->dir = strdup(spool_dir)))) {
        free(l->path);
        free(l);
        l = NULL;
    }
    return l;
}

/* A trace not to be finished: its temporary file goes. */
static void sink_discard(export_sink *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->n; i++) {
        char err[8];
        x->w[i]->ops->close(x->w[i], NULL, 0, err, sizeof(err));
    }
    free(x);
}

/* The trace begun while the program ran is void. */
static void live_drop_output(act_export_live *l)
{
    sink_discard(l->x);
    l->x = NULL;
    l->tl.sink = NULL;
    l->tl.sink_ctx = NULL;
}

/* Drop what was read: the export reads the spool itself. */
static void live_reset(act_export_live *l)
{
    live_drop_output(l);
    act_timeline_build_finish(l->bs);
    l->bs = NULL;
    act_timeline_free(&l->tl);
    act_spool_close(&l->sp);
    l->opened = 0;
    l->finished = 0;
}

int act_export_live_output(act_export_live *l, const act_export_opts *o)
{
    if (!l || !o || !o->out_path || o->window_start_ns || o->window_end_ns || o->only_spool)
        return ACT_E_INVAL;
    l->out = *o;
    l->want_out = 1;
    return 0;
}

/* The sink while the program runs: the trace file is created with the
 * first events written early (a run that writes none gets the batch
 * layout, byte for byte), events first (the header's facts are known at
 * the end). A file that cannot be created fails the live build: the
 * export reads the spool itself and reports it. */
static int live_sink_fn(act_timeline *tl, void *ctx)
{
    act_export_live *l = ctx;
    export_sink *x = l->x;
    if (!x->n) {
        act_writer_facts f = writer_facts(&l->out, -1, &x->found, 1);
        char err[512];
        int rc = sink_open(x, tl, &f, err, sizeof(err));
        if (rc) {
            sink_close(x, tl, rc, NULL, NULL);
            return rc;
        }
    }
    return export_sink_fn(tl, x);
}

/* The builder makes the live process's settled host events as it feeds,
 * when every writer of the output can take them early. */
static void live_want_output(act_export_live *l)
{
    export_sink *x = sink_new(&l->out);
    for (size_t i = 0; x && i < x->n_pick; i++) {
        if (!(x->pick[i].ops->flags & ACT_WRITER_EARLY)) {
            free(x);
            return;
        }
    }
    if (!x)
        return;
    l->x = x;
    l->tl.sink = live_sink_fn;
    l->tl.sink_ctx = l;
    act_timeline_build_online(l->bs);
}

int act_export_live_poll(act_export_live *l, volatile const int *stop)
{
    if (!l)
        return ACT_E_INVAL;
    if (l->refused)
        return ACT_E_UNSUPPORTED;
    if (l->finished) /* read to its end */
        return 0;
    if (!l->opened) {
        char err[256];
        int rc = act_spool_open_live(&l->sp, l->path, err, sizeof(err));
        if (rc) {
            act_spool_close(&l->sp);
            /* Not there, or its header not written yet: the next poll tries
             * again; a spool refused for good (a ring, TSC times) is read
             * by the export alone. */
            l->refused = rc == ACT_E_UNSUPPORTED;
            return l->refused ? rc : 0;
        }
        l->opened = 1;
        if (act_timeline_build_live(&l->tl, &l->sp, NULL, &l->bs))
            return l->tl.err;
        if (l->want_out)
            live_want_output(l);
    }
    int rc = act_timeline_build_feed(l->bs, stop);
    /* The reading thread sleeps now: what this read wrote goes to the file
     * meanwhile, not at the exit. */
    if (!rc && l->x && l->x->n)
        rc = sink_idle(l->x);
    return rc;
}

uint64_t act_export_live_drops(const act_export_live *l)
{
    (void)l; /* one live export per launcher: the process's count is its */
    return act_spool_drop_count();
}

/* Records of one spool, all kinds. */
static uint64_t spool_records(const act_spool *sp)
{
    uint64_t n = 0;
    for (int k = 0; k < ACT_REC_KIND_MAX; k++)
        n += sp->records[k];
    return n;
}

/* Whether the live spool is the only one in its directory (the program
 * has no traced process of its own left, nor a later image). */
static int live_alone(const act_export_live *l)
{
    char err[256], **paths;
    size_t n;
    if (act_spool_dir_list(l->dir, &paths, &n, err, sizeof(err)))
        return 0;
    int alone = n == 1 && !strcmp(paths[0], l->path);
    act_spool_dir_free(paths, n);
    return alone;
}

int act_export_live_finish(act_export_live *l)
{
    /* Only a trace already begun: one with nothing written early keeps the
     * batch layout, which the export writes (act_export_live_output). */
    if (!l || l->finished || !l->opened || !l->bs || l->tl.err || !l->x || !l->x->n ||
        !act_spool_live_sealed(&l->sp) || !live_alone(l))
        return 0;
    uint64_t t0 = act_clock_now(), before = spool_records(&l->sp);
    l->fin[0] = &l->sp;
    int rc = act_timeline_build_continue(l->bs, l->fin, 1);
    if (!rc)
        rc = act_timeline_build_events(l->bs);
    if (!rc) /* the bytes go to the file now, not at its close */
        rc = sink_idle(l->x);
    if (!rc) {
        sink_settle(l->x, &l->tl);
        /* Its work done: let go now, not after the exit. */
        l->devops = act_timeline_build_devops_early(l->bs);
        act_timeline_build_finish(l->bs);
        l->bs = NULL;
    }
    l->finished = rc ? -1 : 1;
    l->early_ns = act_clock_now() - t0;
    l->early_records = spool_records(&l->sp) - before;
    return 1;
}

uint64_t act_export_live_records(const act_export_live *l)
{
    return l && l->opened ? spool_records(&l->sp) : 0;
}

uint64_t act_export_live_written(const act_export_live *l)
{
    return l && l->x ? l->x->written : 0;
}

int act_export_live_voided(const act_export_live *l)
{
    return l && l->voided;
}

uint64_t act_export_live_devops(const act_export_live *l)
{
    return !l || !l->x ? 0 : l->bs ? act_timeline_build_devops_early(l->bs) : l->devops;
}

void act_export_live_free(act_export_live *l)
{
    if (!l)
        return;
    live_reset(l);
    free(l->path);
    free(l->dir);
    free(l);
}

/* The live spool stands in for its file when it is the run's first: the
 * builder has read it up to here, in the order the export reads it. */
static act_export_live *live_usable(act_export_live *l, const act_export_opts *o, char **paths,
                                    size_t n)
{
    if (!l || !l->opened || (!l->bs && l->finished <= 0) || l->tl.err || o->window_start_ns ||
        o->window_end_ns || !n || strcmp(paths[0], l->path))
        return NULL;
    if (l->x && !l->x->n)
        live_drop_output(l); /* nothing was written early */
    /* A trace begun while it ran is this export's only when written to
     * the same file the same way, with the summary fed from the start. */
    if (l->x && (strcmp(o->out_path, l->out.out_path) || o->force != l->out.force ||
                 o->trace_mode != l->out.trace_mode || !o->summary != !l->out.summary))
        return NULL;
    return l;
}

static int open_spools(const char *dir, const char *only, spool_set *s, act_export_live **live,
                       const act_export_opts *o)
{
    char err[512];
    char **paths;
    size_t n;
    int rc = 0;
    if (only) { /* one traced process (run -o with a name template) */
        paths = malloc(sizeof(*paths));
        n = paths ? 1 : 0;
        if (!paths || !(paths[0] = strdup(only))) {
            free(paths);
            return ACT_E_NOMEM;
        }
    } else {
        rc = act_spool_dir_list(dir, &paths, &n, err, sizeof(err));
    }
    if (rc) {
        act_log("%s", err);
        return add_failure(s, err) ? ACT_E_NOMEM : 0;
    }
    s->sp = calloc(n ? n : 1, sizeof(*s->sp));
    s->ptr = calloc(n ? n : 1, sizeof(*s->ptr));
    if (!s->sp || !s->ptr) {
        act_spool_dir_free(paths, n);
        return ACT_E_NOMEM;
    }
    act_export_live *l = only ? NULL : live_usable(*live, o, paths, n);
    if (*live && !l)
        live_reset(*live);
    *live = l;
    for (size_t i = 0; i < n && !rc; i++) {
        act_spool *sp = &s->sp[s->n];
        if (i == 0 && l) { /* s->sp[0] stays empty: the live object owns it */
            s->ptr[s->n++] = &l->sp;
            continue;
        }
        int orc = act_spool_open(sp, paths[i], err, sizeof(err));
        if (orc) { /* a named loss; the other processes are still read */
            act_log("%s", err);
            s->n_unread += orc == ACT_E_NOMEM;
            rc = add_failure(s, err);
        } else {
            s->ptr[s->n++] = sp;
            continue;
        }
        act_spool_close(sp);
    }
    act_spool_dir_free(paths, n);
    act_spool_link_execs(s->ptr, s->n);
    note_no_space(s, dir);
    return rc;
}

/* The live spool's place in the set taken by the file itself (the live
 * object's reading is dropped); the other spools stay open as they are:
 * their problems were reported once. */
static int reopen_live(spool_set *s, act_export_live *l)
{
    char err[512];
    live_reset(l);
    int rc = act_spool_open(&s->sp[0], l->path, err, sizeof(err));
    if (rc) { /* as open_spools: reported, the others exported */
        act_log("%s", err);
        act_spool_close(&s->sp[0]);
        memmove(s->sp, s->sp + 1, (s->n - 1) * sizeof(*s->sp));
        memset(&s->sp[--s->n], 0, sizeof(*s->sp));
        for (size_t i = 0; i < s->n; i++)
            s->ptr[i] = &s->sp[i];
        return rc == ACT_E_NOMEM ? rc : add_failure(s, err);
    }
    s->ptr[0] = &s->sp[0];
    act_spool_link_execs(s->ptr, s->n);
    return 0;
}

static void close_spools(spool_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        act_spool_close(&s->sp[i]);
    free(s->sp);
    free(s->ptr);
    for (size_t i = 0; i < s->n_failed; i++)
        free(s->failed[i]);
    free(s->failed);
}

/* "SIGSEGV" for 11 (the number when the signal has no name). */
static const char *signal_name(int sig, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else
        snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* A crash must be visible among the errors, not only in exit_status and
 * truncated_processes: the program's own death by a signal (the launcher
 * knows its wait status), and every other process that did not finish
 * (nobody tells us how it ended). */
static void note_deaths(act_timeline *tl, const act_export_opts *o)
{
    int st = o->child_status;
    if (o->child_pid > 0 && st >= 0 && WIFSIGNALED(st)) {
        char name[32];
        act_tl_error(tl, "process %d died of %s%s", o->child_pid,
                     signal_name(WTERMSIG(st), name, sizeof(name)),
                     WCOREDUMP(st) ? " (core dumped)" : "");
    }
    for (size_t i = 0; !tl->err && i < tl->n_truncated; i++) {
        if (o->child_pid > 0 && tl->truncated_pids[i] == (uint64_t)o->child_pid)
            continue;
        act_tl_error(tl,
                     "process %llu did not finish (it was killed, died of a signal or "
                     "called _exit); its trace ends at its last record",
                     (unsigned long long)tl->truncated_pids[i]);
    }
}

/* Lines the export adds to the trace's error list once the spools are
 * read, and the wall-clock origin when no spool gave one. */
static void add_export_notes(act_timeline *tl, const spool_set *set, const act_export_opts *o)
{
    const char *dir = o->spool_dir;
    note_deaths(tl, o);
    for (size_t i = 0; !tl->err && i < set->n_failed; i++)
        act_tl_error(tl, "%s", set->failed[i]);
    if (!tl->err && !set->n && !set->n_failed)
        act_tl_error(tl, "%s: no spool files (the program recorded nothing)", dir);
    if (!tl->base_wall_ns) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        tl->base_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
}

/* Records of every spool of the set (the live one included), all kinds. */
static uint64_t set_records(const spool_set *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += spool_records(s->ptr[i]);
    return n;
}

/* The trace is written while the events are made, a batch at a time
 * (timeline.h, writer.h): the events never all sit in memory. The
 * summary keeps only its slices (summary.h), fed from the same batches,
 * and is printed once the file is in place (the trace writer's counters,
 * such as invalid UTF-8, are final then): the same output as
 * act_summary_from_timeline on the whole timeline. */
static int write_trace(act_timeline *tl, act_tl_build *bs, const act_export_opts *o,
                       act_export_progress *progress, export_sink *begun, int built)
{
    char err[512] = "";
    /* On the heap: tl keeps a pointer to it while the events are built. */
    export_sink *x = begun ? begun : sink_new(o);
    if (!x) {
        act_export_progress_stop(progress);
        return ACT_E_NOMEM;
    }
    x->cancel = o->cancel;
    act_writer_facts facts = writer_facts(o, o->child_status, &x->found, 0);
    int rc = 0;
    if (begun) /* written while the program ran: the rest, then the header's facts
                * (each writer keeps the layout it was opened with) */
        sink_set_facts(x, &facts);
    else
        rc = sink_open(x, tl, &facts, err, sizeof(err));
    if (rc && err[0])
        act_log("%s", err);
    x->progress = progress;
    act_export_progress_phase(progress, "writing events");
    act_export_times unused = {0}, *tm = o->times ? o->times : &unused;
    uint64_t t = act_clock_now();
    if (!rc && !built) { /* built: every event was written at the seal */
        tl->sink = export_sink_fn;
        tl->sink_ctx = x;
        rc = act_timeline_build_events(bs);
        tl->sink = NULL;
        tl->sink_ctx = NULL;
    }
    tm->events_ns = act_clock_now() - t;
    act_export_progress_phase(progress, "closing the file");
    rc = sink_close(x, tl, rc, &progress, tm);
    act_export_progress_stop(progress);
    free(x);
    return rc;
}

int act_trace_export(const act_export_opts *o)
{
    if (!o || !o->spool_dir || !o->out_path || !o->out_path[0])
        return ACT_E_INVAL;
    struct stat st;
    if (!o->force && lstat(o->out_path, &st) == 0) {
        act_log("%s: already exists (use --force to overwrite)", o->out_path);
        return ACT_E_IO;
    }
    uint64_t t0 = act_clock_now();
    if (o->times)
        *o->times = (act_export_times){0};
    act_export_progress *progress = act_export_progress_start(o->progress);
    spool_set set = {0};
    act_timeline own, *tlp = &own;
    act_tl_build *bs = NULL;
    act_export_live *live = o->live;
    int rc = open_spools(o->spool_dir, o->only_spool, &set, &live, o);
    act_build_opts bo = {o->window_start_ns, o->window_end_ns};
    export_sink *begun = NULL;
    int built = 0;
    if (!rc && live) { /* the builder goes on from what it read while the program ran */
        tlp = &live->tl;
        bs = live->bs;
        live->bs = NULL;
        /* Read to the end at the seal: still all there is, now that the
         * program is gone? (A thread may have published as it was sealed,
         * a process of its own may have made a spool since.) */
        built = live->finished > 0 && set.n == 1 && act_spool_live_settled(&live->sp);
        rc = built            ? 0
             : live->finished ? ACT_E_STATE
                              : act_timeline_build_continue(bs, set.ptr, set.n);
        if (rc == ACT_E_STATE) { /* events made while it ran are void: anew */
            live->voided = 1;
            act_timeline_build_finish(bs);
            bs = NULL;
            tlp = &own;
            rc = reopen_live(&set, live);
            live = NULL;
        }
        if (live) {
            begun = live->x;
            live->x = NULL; /* write_trace's from here */
        }
    }
    if (!rc && !live)
        rc = act_timeline_build_start(&own, set.ptr, set.n, &bo, &bs);
    else if (tlp == &own)
        memset(&own, 0, sizeof(own));
    act_timeline *const tl = tlp;
    if (!rc) {
        add_export_notes(tl, &set, o);
        rc = tl->err;
    }
    if (!rc && o->cancel && *o->cancel)
        rc = ACT_E_STATE;
    if (o->times) {
        o->times->read_ns = act_clock_now() - t0;
        o->times->records = set_records(&set);
        o->times->events = act_tl_counts_events(&tl->counts);
        o->times->unread = set.n_unread;
        o->times->early_ns = built ? live->early_ns : 0;
        o->times->early_records = built ? live->early_records : 0;
    }
    if (!rc) {
        rc = write_trace(tl, bs, o, progress, begun, built);
        progress = NULL; /* stopped there */
    } else {
        sink_discard(begun);
    }
    act_export_progress_stop(progress);
    if (!rc && set.n_failed)
        rc = ACT_E_FORMAT;
    act_timeline_build_finish(bs);
    if (live) /* its timeline and spool too */
        live_reset(live);
    else
        act_timeline_free(tl);
    close_spools(&set);
    return rc;
}

int act_export_spools_shrink(const char *spool_dir, char *err, size_t errlen)
{
    return act_spool_dir_shrink(spool_dir, err, errlen);
}
