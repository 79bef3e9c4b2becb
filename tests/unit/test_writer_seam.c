/*
 * test_writer_seam.c -- the writer seam (writers/writer.h) and the output
 * file's life (writers/outfile.h): which writers an output name picks;
 * the temporary file (named when asked, as SQLite needs), its mode, the
 * refusal to replace without --force, the replaced file held, the reason
 * of a failed write, nothing left behind on failure; and a binary,
 * non-streaming writer defined here (a string table and fixed-size event
 * records, written at the close) fed through the seam beside the Chrome
 * writer, as the export feeds its list: both see every event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "acceltrace.h"
#include "timeline_util.h"
#include "writers/outfile.h"
#include "writers/writer.h"

static void test_pick_by_name(void **state)
{
    (void)state;
    act_writer_pick p[ACT_WRITERS_MAX];
    assert_int_equal(act_writers_pick("t.json", 0, p), 1);
    assert_ptr_equal(p[0].ops, &act_writer_chrome_json);
    assert_int_equal(p[0].options, 0);
    assert_int_equal(act_writers_pick("dir/t.json.gz", 1, p), 2);
    assert_ptr_equal(p[0].ops, &act_writer_chrome_json);
    assert_int_equal(p[0].options, ACT_WRITER_GZIP);
    assert_ptr_equal(p[1].ops, &act_writer_summary); /* the report comes last */
    assert_true(p[1].ops->flags & ACT_WRITER_REPORT);
    assert_int_equal(act_writers_pick("trace", 0, p), 1); /* any name: the JSON */
    assert_ptr_equal(p[0].ops, &act_writer_chrome_json);
    assert_int_equal(act_writers_pick(".gz", 0, p), 1); /* a bare suffix is a name */
    assert_int_equal(p[0].options, 0);
    assert_int_equal(act_writers_pick("dir/t.pftrace", 1, p), 2); /* docs/pftrace.md */
    assert_ptr_equal(p[0].ops, &act_writer_pftrace);
    assert_true(p[0].ops->flags & ACT_WRITER_EARLY); /* streams, as the JSON does */
    assert_int_equal(act_writers_pick("t.perfetto-trace", 0, p), 1);
    assert_ptr_equal(p[0].ops, &act_writer_pftrace);
}

static size_t dir_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void put(act_outfile *f, const char *s)
{
    assert_int_equal(write(act_outfile_fd(f), s, strlen(s)), (ssize_t)strlen(s));
}

/* Named from the open, mode as asked, in place at the close. */
static void test_outfile_named(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_outfile_XXXXXX", path[128], err[256] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.db", dir);
    act_outfile *f;
    assert_int_equal(act_outfile_open(&f, path, 0, 0640, ACT_OUTFILE_NAMED, err, sizeof(err)), 0);
    const char *tmp = act_outfile_temp(f);
    assert_true(tmp[0]);
    assert_ptr_equal(strstr(tmp, dir), tmp); /* beside the path */
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(access(path, F_OK), -1); /* not there before the close */
    assert_string_equal(act_outfile_path(f), path);
    put(f, "x");
    assert_int_equal(act_outfile_close(f, 1, 0, 0, err, sizeof(err)), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 1);
    assert_int_equal(dir_entries(dir), 1);
    /* Without force an existing file is kept, with a clear reason. */
    assert_int_equal(act_outfile_open(&f, path, 0, 0, 0, err, sizeof(err)), ACT_E_IO);
    assert_null(f);
    assert_non_null(strstr(err, "already exists (use --force to overwrite)"));
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* Discarded, or failed (the writer's errno said why): nothing is left. */
static void test_outfile_failures(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_outfile_XXXXXX", path[128], err[256] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.json", dir);
    for (int flags = 0; flags <= ACT_OUTFILE_NAMED; flags++) {
        act_outfile *f;
        assert_int_equal(act_outfile_open(&f, path, 0, 0, flags, err, sizeof(err)), 0);
        put(f, "half");
        err[0] = '\0';
        assert_int_equal(act_outfile_close(f, 0, 0, 0, err, sizeof(err)), ACT_E_INVAL);
        assert_string_equal(err, "");
        assert_int_equal(dir_entries(dir), 0);
        assert_int_equal(act_outfile_open(&f, path, 0, 0, flags, err, sizeof(err)), 0);
        assert_int_equal(act_outfile_close(f, 1, ACT_E_IO, ENOSPC, err, sizeof(err)), ACT_E_IO);
        char want[256];
        snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOSPC));
        assert_string_equal(err, want);
        assert_int_equal(dir_entries(dir), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* --force replaces a regular file, which is held open for the caller;
 * a directory at the path is refused. */
static void test_outfile_force(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_outfile_XXXXXX", path[128], err[256] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.json", dir);
    FILE *old = fopen(path, "w");
    assert_non_null(old);
    fputs("old trace", old);
    fclose(old);
    act_outfile *f;
    assert_int_equal(act_outfile_open(&f, path, 1, 0, 0, err, sizeof(err)), 0);
    put(f, "new");
    int held = 7;
    act_outfile_keep_replaced(f, &held);
    assert_int_equal(held, -1);
    assert_int_equal(act_outfile_close(f, 1, 0, 0, err, sizeof(err)), 0);
    assert_true(held >= 0);
    struct stat st;
    assert_int_equal(fstat(held, &st), 0);
    assert_int_equal(st.st_nlink, 0); /* the old trace, unlinked, not yet freed */
    close(held);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 3);
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(act_outfile_open(&f, path, 1, 0, 0, err, sizeof(err)), ACT_E_IO);
    assert_null(f);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* ---- a binary writer on the seam -------------------------------------- */

/* "ACTB", the device and metadata counts, the events as (name index, ts,
 * dur, ph) records, then the names: written at the close, so it is no
 * streaming text; it reopens its file by name, as SQLite would. */
typedef struct bin_event {
    uint32_t name;
    uint32_t ph;
    uint64_t ts, dur;
} bin_event;

typedef struct bin_writer {
    act_writer base;
    act_outfile *file;
    uint32_t devices, meta;
    bin_event *ev;
    size_t n, cap;
    char **names;
    size_t n_names;
} bin_writer;

static const act_writer_ops bin_ops;

static int bin_open(act_writer **out, act_timeline *tl, const act_writer_facts *f, char *err,
                    size_t errlen)
{
    bin_writer *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->base.ops = &bin_ops;
    w->devices = (uint32_t)tl->n_devices; /* the header is built at the open */
    w->meta = (uint32_t)tl->n_meta;
    *out = &w->base;
    return act_outfile_open(&w->file, f->path, f->force, f->mode, ACT_OUTFILE_NAMED, err, errlen);
}

static uint32_t bin_name(bin_writer *w, act_str s)
{
    for (size_t i = 0; i < w->n_names; i++)
        if (strlen(w->names[i]) == s.n && !memcmp(w->names[i], s.p, s.n))
            return (uint32_t)i;
    w->names = realloc(w->names, (w->n_names + 1) * sizeof(*w->names));
    assert_non_null(w->names);
    w->names[w->n_names] = strndup(s.p, s.n);
    return (uint32_t)w->n_names++;
}

static int bin_batch(act_writer *aw, act_timeline *tl)
{
    bin_writer *w = (bin_writer *)aw;
    for (size_t i = 0; i < tl->n_ev; i++) {
        const act_tl_event *e = &tl->ev[i];
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 256;
            w->ev = realloc(w->ev, w->cap * sizeof(*w->ev));
            assert_non_null(w->ev);
        }
        w->ev[w->n++] = (bin_event){bin_name(w, e->name), (uint32_t)e->ph, e->ts, e->dur};
    }
    return 0;
}

static void bin_set_facts(act_writer *w, const act_writer_facts *f)
{
    (void)w;
    (void)f;
}

static int bin_close(act_writer *aw, act_timeline *tl, int ok, char *err, size_t errlen)
{
    (void)tl;
    bin_writer *w = (bin_writer *)aw;
    int rc = 0;
    if (ok) { /* by name, as a library that opens its own file does */
        FILE *f = fopen(act_outfile_temp(w->file), "wb");
        assert_non_null(f);
        uint32_t head[4] = {0x42544341u, w->devices, w->meta, (uint32_t)w->n};
        fwrite(head, sizeof(head), 1, f);
        fwrite(w->ev, sizeof(*w->ev), w->n, f);
        for (size_t i = 0; i < w->n_names; i++)
            fwrite(w->names[i], strlen(w->names[i]) + 1, 1, f);
        rc = fclose(f) ? ACT_E_IO : 0;
    }
    rc = act_outfile_close(w->file, ok, rc, ok ? errno : 0, err, errlen);
    for (size_t i = 0; i < w->n_names; i++)
        free(w->names[i]);
    free(w->names);
    free(w->ev);
    free(w);
    return rc;
}

static const act_writer_ops bin_ops = {
    .name = "test-binary",
    .flags = 0, /* not early: it needs the whole run */
    .open = bin_open,
    .batch = bin_batch,
    .set_facts = bin_set_facts,
    .close = bin_close,
};

typedef struct fan {
    act_writer *w[2];
} fan;

/* The export's sink, reduced: every writer takes the batch, then it goes. */
static int fan_sink(act_timeline *tl, void *ctx)
{
    fan *x = ctx;
    for (int i = 0; i < 2; i++)
        assert_int_equal(x->w[i]->ops->batch(x->w[i], tl), 0);
    tl->n_ev = 0;
    tl->n_args = 0;
    return 0;
}

static void demo_spool(const char *path)
{
    sb s;
    sb_init(&s, 970, 1u << 20, 1);
    sb_open_thread(&s, 0, 1, 970);
    sb_str(&s, 1, "step");
    sb_str(&s, 2, "clEnqueueNDRangeKernel");
    sb_str(&s, 3, "saxpy");
    sb_str(&s, 4, "pthread-cpu");
    sb_str(&s, 5, "OpenCL");
    sb_device(&s, 4, 1, 5, ACT_SOURCE_OPENCL, 0);
    uint64_t ts = 2000000;
    for (uint64_t i = 0; i < 3000; i++, ts += 10000) { /* over one sink batch */
        sb_ts(&s, ACT_REC_RANGE_PUSH, 1, ts);
        sb_api(&s, 2, ts + 200, ts + 900, i + 1, ((uint64_t)1 << 32) | (i + 1), ACT_SOURCE_OPENCL);
        sb_ts(&s, ACT_REC_RANGE_POP, 0, ts + 1000);
        sb_op(&s, 3, ACT_OP_KERNEL, 1, 1, ts + 1200, ts + 5000, i + 1, ACT_SOURCE_OPENCL);
    }
    assert_int_equal(sb_write(&s, path), 0);
    sb_free(&s);
}

static void test_binary_writer_beside_json(void **state)
{
    (void)state;
    char dir[] = "/tmp/act_seam_XXXXXX", spool[128], out[2][128], err[256] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(spool, sizeof(spool), "%s/970.acts", dir);
    snprintf(out[0], sizeof(out[0]), "%s/t.json", dir);
    snprintf(out[1], sizeof(out[1]), "%s/t.bin", dir);
    demo_spool(spool);
    act_spool sp;
    act_spool *ptr = &sp;
    assert_int_equal(act_spool_open(&sp, spool, err, sizeof(err)), 0);
    act_timeline tl;
    act_tl_build *bs = NULL;
    act_build_opts bo = {0, 0};
    assert_int_equal(act_timeline_build_start(&tl, &ptr, 1, &bo, &bs), 0);
    act_writer_found found = {0, 0};
    const act_writer_ops *ops[2] = {&act_writer_chrome_json, &bin_ops};
    fan x;
    for (int i = 0; i < 2; i++) {
        act_writer_facts f = {.path = out[i], .child_status = -1, .found = &found};
        assert_int_equal(ops[i]->open(&x.w[i], &tl, &f, err, sizeof(err)), 0);
    }
    tl.sink = fan_sink;
    tl.sink_ctx = &x;
    assert_int_equal(act_timeline_build_events(bs), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(x.w[i]->ops->close(x.w[i], &tl, 1, err, sizeof(err)), 0);
    json_error_t je;
    json_t *doc = json_load_file(out[0], 0, &je);
    assert_non_null(doc);
    size_t n_json = json_array_size(json_object_get(doc, "traceEvents"));
    assert_true(n_json > ACT_TL_SINK_BATCH);
    size_t len;
    char *bin = tu_slurp(out[1], &len);
    uint32_t head[4];
    memcpy(head, bin, sizeof(head));
    assert_int_equal(head[0], 0x42544341u);
    assert_int_equal(head[1], 1);      /* the device, known at the open */
    assert_int_equal(head[3], n_json); /* every event the JSON has */
    const char *names = bin + sizeof(head) + (size_t)head[3] * sizeof(bin_event);
    assert_true(names < bin + len);
    assert_non_null(memmem(names, len - (size_t)(names - bin), "saxpy", 6));
    free(bin);
    json_decref(doc);
    act_timeline_build_finish(bs);
    act_timeline_free(&tl);
    act_spool_close(&sp);
    unlink(spool);
    unlink(out[0]);
    unlink(out[1]);
    assert_int_equal(rmdir(dir), 0); /* no temporary file left */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_by_name),
        cmocka_unit_test(test_outfile_named),
        cmocka_unit_test(test_outfile_failures),
        cmocka_unit_test(test_outfile_force),
        cmocka_unit_test(test_binary_writer_beside_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
