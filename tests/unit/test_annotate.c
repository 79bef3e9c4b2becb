/*
 * test_annotate.c -- the annotation API against the recorder, checked in
 * the spool with the independent walker: behaviour with no tool attached,
 * hostile strings kept byte for byte, 100-level nesting and External ids,
 * nesting past the tracked depth, unbalanced pops counted, the capture
 * window (outside events absent and counted, ranges and device ops begun
 * inside kept), metadata validation, and in-process sessions (repeatable,
 * private spool removed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
/* cmocka.h needs the three above first */
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <sys/wait.h>

#include "acceltrace.h"
#include "annotate_collect.h"
#include "core/internal.h"
#include "core/record.h"
#include "tmpdir.h"

static char dir[64];
static char spool[512];

static int setup(void **state)
{
    (void)state;
    unsetenv("ACCELTRACE_SPOOL_DIR");
    tmpdir_make(dir, sizeof(dir), "annot");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove(dir);
}

/* Open a recorder straight away (no session) so the spool stays for us. */
static void rec_open(int capture_api)
{
    assert_int_equal(act_capture_configure(capture_api, "", 0, 0), ACT_OK);
    assert_int_equal(act_recorder_open(dir, 64ull << 20, 256u << 10), 0);
    snprintf(spool, sizeof(spool), "%s", act_recorder_path());
}

static collect *rec_close_collect(void)
{
    act_recorder_close();
    collect *c = collect_spool(spool);
    assert_non_null(c);
    assert_int_equal(c->ws.torn, 0);
    return c;
}

/* Must run first: nothing attached yet. */
static void test_no_tool(void **state)
{
    (void)state;
    assert_int_equal(act_range_push("x"), ACT_E_DISABLED);
    assert_int_equal(act_range_pop(), ACT_E_DISABLED);
    assert_int_equal(act_range_start("x"), 0);
    act_range_end(5);
    act_mark("m");
    act_counter("c", 1.0);
    assert_int_equal(act_metadata_set("k", "v"), ACT_E_DISABLED);
    assert_int_equal(act_start(), ACT_E_DISABLED);
    assert_int_equal(act_stop(), ACT_E_DISABLED);
    assert_int_equal(act_is_enabled(), 0);
    assert_int_equal(act_session_end(NULL), ACT_E_STATE);
    /* The fast path has learned there is no tool. */
    assert_int_equal(__atomic_load_n(&act__idle, __ATOMIC_RELAXED), 1);
}

static const char *hostile[16];
static size_t n_hostile;
static char big[65537];
static char controls[40];

static void hostile_init(void)
{
    n_hostile = 0;
    hostile[n_hostile++] = "quote\" and 'single'";
    hostile[n_hostile++] = "back\\slash\\\\ and \\u0041 and \\\"";
    for (int i = 1; i < 32; i++)
        controls[i - 1] = (char)i;
    controls[31] = 0x7f;
    controls[32] = '\0';
    hostile[n_hostile++] = controls;
    hostile[n_hostile++] =
        "invalid \xff\xfe utf8 \xc0\x80 overlong \xed\xa0\x80 surrogate \xe2\x82";
    hostile[n_hostile++] = "line\xe2\x80\xa8separator\xe2\x80\xa9paragraph";
    hostile[n_hostile++] = "{\"traceEvents\": [], \"ph\": \"X\"}";
    hostile[n_hostile++] = "\",\"ph\":\"i\",\"x\":\"";
    hostile[n_hostile++] = "emoji \xf0\x9f\x98\x80 and CJK \xe4\xb8\xad";
    for (size_t i = 0; i < sizeof(big) - 1; i++)
        big[i] = "ab\"\\\n\x01\xe2\x80\xa8"[i % 9];
    big[sizeof(big) - 1] = '\0';
    hostile[n_hostile++] = big;
}

static void test_hostile_strings(void **state)
{
    (void)state;
    hostile_init();
    rec_open(0);
    for (size_t i = 0; i < n_hostile; i++) {
        assert_int_equal(act_range_push(hostile[i]), ACT_OK);
        assert_int_equal(act_range_pop(), ACT_OK);
        act_mark(hostile[i]);
        act_counter(hostile[i], (double)i);
        assert_int_equal(act_metadata_set(hostile[i], hostile[i]), ACT_OK);
    }
    collect *c = rec_close_collect();
    size_t push = 0, mark = 0, ctr = 0, meta = 0;
    for (size_t i = 0; i < c->n; i++) {
        cevent *e = &c->ev[i];
        size_t k;
        switch (e->kind) {
        case ACT_REC_RANGE_PUSH: k = push++; break;
        case ACT_REC_MARK: k = mark++; break;
        case ACT_REC_COUNTER:
            k = ctr++;
            assert_true(e->value == (double)k);
            break;
        case ACT_REC_METADATA:
            k = meta++;
            assert_true(cstring_eq(e->value_s, hostile[k], strlen(hostile[k])));
            assert_int_equal(e->is_json, 0);
            break;
        default: continue;
        }
        assert_true(k < n_hostile);
        assert_true(cstring_eq(e->name, hostile[k], strlen(hostile[k])));
    }
    assert_int_equal(push, n_hostile);
    assert_int_equal(mark, n_hostile);
    assert_int_equal(ctr, n_hostile);
    assert_int_equal(meta, n_hostile);
    assert_int_equal(c->ws.hdr->strings_truncated, 0);
    collect_free(c);
}

static void test_nesting_and_unbalanced(void **state)
{
    (void)state;
    rec_open(0);
    char name[32];
    uint64_t serial = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "level-%d", i);
        assert_int_equal(act_range_push(name), ACT_OK);
        uint64_t ext = act_range_current_ext();
        assert_int_equal(ext & 0xffffffffu, (uint64_t)i + 1); /* n-th push of the thread */
        if (i == 0)
            serial = ext >> 32;
        assert_int_equal(ext >> 32, serial);
    }
    for (int i = 99; i >= 0; i--) {
        assert_int_equal(act_range_current_ext() & 0xffffffffu, (uint64_t)i + 1);
        assert_int_equal(act_range_pop(), ACT_OK);
    }
    assert_int_equal(act_range_current_ext(), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(act_range_pop(), ACT_E_UNBALANCED);
    assert_int_equal(act_range_push(NULL), ACT_E_INVAL);
    collect *c = rec_close_collect();
    assert_int_equal(collect_count(c, ACT_REC_RANGE_PUSH), 100);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_POP), 100);
    assert_int_equal(c->ws.hdr->unbalanced_pops, 3);
    /* Pushes in order level-0..99, then all pops. */
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->ev[i].kind != ACT_REC_RANGE_PUSH)
            continue;
        snprintf(name, sizeof(name), "level-%zu", k++);
        assert_true(cstring_eq(c->ev[i].name, name, strlen(name)));
    }
    collect_free(c);
}

/* Ranges nested deeper than the stack the recorder tracks (256 levels,
 * for External ids) are still written whole: every pop is ACT_OK and in
 * the spool, none counted unbalanced. (A recursive Python function under
 * @acceltrace.range gets there.) */
static void test_nesting_past_the_tracked_depth(void **state)
{
    (void)state;
    rec_open(0);
    enum { DEPTH = 300 };
    for (int i = 0; i < DEPTH; i++)
        assert_int_equal(act_range_push("deep"), ACT_OK);
    for (int i = 0; i < DEPTH; i++)
        assert_int_equal(act_range_pop(), ACT_OK);
    assert_int_equal(act_range_current_ext(), 0);
    assert_int_equal(act_range_pop(), ACT_E_UNBALANCED);
    collect *c = rec_close_collect();
    assert_int_equal(collect_count(c, ACT_REC_RANGE_PUSH), DEPTH);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_POP), DEPTH);
    assert_int_equal(c->ws.hdr->unbalanced_pops, 1);
    collect_free(c);
}

/* What a device source does at completion: write unconditionally (its
 * launch was recorded). */
static void device_op_emit(uint64_t corr)
{
    act_rec_device_op *r = act_rec_reserve(ACT_REC_DEVICE_OP, sizeof(*r));
    assert_non_null(r);
    memset((char *)r + sizeof(r->h), 0, sizeof(*r) - sizeof(r->h));
    r->corr = corr;
    r->start = act_clock_now();
    r->end = r->start + 1000;
    act_rec_commit();
}

static void test_capture_api_window(void **state)
{
    (void)state;
    rec_open(1);
    assert_int_equal(act_is_enabled(), 0);
    /* Before act_start: counted, not written. */
    assert_int_equal(act_range_push("pre"), ACT_E_DISABLED);
    act_mark("m-out");
    act_counter("c-out", 1);
    uint64_t id_out = act_range_start("s-out");
    assert_true(id_out != 0);
    assert_int_equal(act_metadata_set("meta", "kept"), ACT_OK); /* not an event in time */

    assert_int_equal(act_start(), ACT_OK);
    assert_int_equal(act_is_enabled(), 1);
    assert_int_equal(act_range_current_ext(), 0); /* "pre" is not in the trace */
    assert_int_equal(act_range_push("in1"), ACT_OK);
    uint64_t ext_in1 = act_range_current_ext();
    assert_int_equal(ext_in1 & 0xffffffffu, 1);
    uint64_t id_in = act_range_start("s-in");
    act_mark("m-in");
    assert_int_equal(act_range_pop(), ACT_OK);         /* in1 */
    assert_int_equal(act_range_pop(), ACT_E_DISABLED); /* pre: outside */
    assert_int_equal(act_range_push("in2"), ACT_OK);
    uint64_t corr = act_corr_next(); /* a kernel launched inside... */

    assert_int_equal(act_stop(), ACT_OK);
    assert_int_equal(act_is_enabled(), 0);
    device_op_emit(corr);                      /* ...completes outside */
    assert_int_equal(act_range_pop(), ACT_OK); /* in2 began inside: kept */
    act_range_end(id_in);                      /* kept */
    act_range_end(id_out);                     /* outside */
    act_mark("m-out2");
    assert_int_equal(act_start(), ACT_OK); /* repeatable */
    act_mark("m-in2");
    assert_int_equal(act_stop(), ACT_OK);

    collect *c = rec_close_collect();
    const act_spool_header *h = c->ws.hdr;
    assert_true(h->flags & ACT_SPOOL_F_CAPTURE_API);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_PUSH), 2);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_POP), 2);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_START), 1);
    assert_int_equal(collect_count(c, ACT_REC_RANGE_END), 1);
    assert_int_equal(collect_count(c, ACT_REC_MARK), 2);
    assert_int_equal(collect_count(c, ACT_REC_COUNTER), 0);
    assert_int_equal(collect_count(c, ACT_REC_METADATA), 1);
    assert_int_equal(collect_count(c, ACT_REC_DEVICE_OP), 1);
    assert_int_equal(collect_count(c, ACT_REC_CAPTURE), 4);
    assert_int_equal(h->outside_window[ACT_REC_RANGE_PUSH], 1);
    assert_int_equal(h->outside_window[ACT_REC_RANGE_POP], 1);
    assert_int_equal(h->outside_window[ACT_REC_MARK], 2);
    assert_int_equal(h->outside_window[ACT_REC_COUNTER], 1);
    assert_int_equal(h->outside_window[ACT_REC_RANGE_START], 1);
    assert_int_equal(h->outside_window[ACT_REC_RANGE_END], 1);
    assert_int_equal(h->unbalanced_pops, 0);
    /* Windows: open, close, open, close, in time order; marks inside. */
    uint32_t want = 1;
    uint64_t last = 0;
    for (size_t i = 0; i < c->n; i++) {
        cevent *e = &c->ev[i];
        if (e->kind == ACT_REC_CAPTURE) {
            assert_int_equal(e->aux, want);
            assert_true(e->ts >= last);
            last = e->ts;
            want ^= 1;
        }
        if (e->kind == ACT_REC_MARK)
            assert_true(cstring_eq(e->name, "m-in", 4) || cstring_eq(e->name, "m-in2", 5));
        if (e->kind == ACT_REC_RANGE_END)
            assert_int_equal(e->id, id_in);
        if (e->kind == ACT_REC_DEVICE_OP)
            assert_int_equal(e->id, corr);
    }
    collect_free(c);
    assert_int_equal(act_capture_configure(0, "", 0, 0), ACT_OK);
}

static void test_metadata_json(void **state)
{
    (void)state;
    rec_open(0);
    assert_int_equal(act_metadata_set_json("bad", "{\"a\": "), ACT_E_JSON);
    assert_int_equal(act_metadata_set_json("bad2", "{\"a\":1,\"a\":2}"), ACT_E_JSON);
    assert_int_equal(act_metadata_set_json("bad3", ""), ACT_E_JSON);
    assert_int_equal(act_metadata_set_json("good", "{\"lr\": [0.1, 2e-3], \"s\": \"\\u2028\"}"),
                     ACT_OK);
    assert_int_equal(act_metadata_set_json("num", "42"), ACT_OK);
    /* Nesting: ACT_METADATA_MAX_DEPTH levels pass, one more is refused
     * (nothing recorded), also far deeper than any reader copes with. */
    char deep[2 * 2048 + 1];
    for (int depth = ACT_METADATA_MAX_DEPTH; depth <= 2048;
         depth += 2048 - ACT_METADATA_MAX_DEPTH) {
        for (int over = 0; over < 2 && depth + over <= 2048; over++) {
            int n = depth + over;
            memset(deep, '[', (size_t)n);
            memset(deep + n, ']', (size_t)n);
            deep[2 * n] = '\0';
            assert_int_equal(act_metadata_set_json("deep", deep),
                             n <= ACT_METADATA_MAX_DEPTH ? ACT_OK : ACT_E_JSON);
        }
    }
    /* An integer beyond 64 bits is valid JSON. */
    assert_int_equal(act_metadata_set_json("big", "1267650600228229401496703205376"), ACT_OK);
    assert_int_equal(act_metadata_set(NULL, "v"), ACT_E_INVAL);
    assert_int_equal(act_metadata_set("k", NULL), ACT_E_INVAL);
    assert_int_equal(act_metadata_set_json(NULL, "1"), ACT_E_INVAL);
    collect *c = rec_close_collect();
    assert_int_equal(collect_count(c, ACT_REC_METADATA), 4); /* good, num, deep (64), big */
    for (size_t i = 0; i < c->n; i++) {
        if (c->ev[i].kind == ACT_REC_METADATA) {
            assert_int_equal(c->ev[i].is_json, 1);
            assert_false(cstring_eq(c->ev[i].name, "bad", 3));
        }
    }
    collect_free(c);
}

static size_t dir_entries(const char *path, const char *prefix)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* act_session_end returns the exporter's code: 0 and a trace naming our
 * range once the builder is linked, ACT_E_UNSUPPORTED from the stub. */
static void check_session_trace(int rc, const char *path, const char *range)
{
    if (rc == ACT_E_UNSUPPORTED) {
        assert_int_equal(access(path, F_OK), -1);
        return;
    }
    assert_int_equal(rc, ACT_OK);
    json_error_t err;
    json_t *t = json_load_file(path, 0, &err);
    assert_non_null(t);
    json_t *evs = json_object_get(t, "traceEvents");
    assert_true(json_is_array(evs));
    /* trace_name NULL: the program's name, as annotations.md says */
    assert_string_equal(json_string_value(json_object_get(t, "traceName")), "test_annotate");
    int found = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev)
    {
        const char *n = json_string_value(json_object_get(ev, "name"));
        found |= n && strcmp(n, range) == 0;
    }
    assert_true(found);
    json_decref(t);
}

static void test_sessions(void **state)
{
    (void)state;
    setenv("TMPDIR", dir, 1);
    char path[256];
    for (int round = 0; round < 2; round++) {
        assert_int_equal(act_session_begin(NULL), ACT_OK);
        assert_int_equal(act_session_begin(NULL), ACT_E_STATE);
        assert_int_equal(dir_entries(dir, "acceltrace-session-"), 1);
        assert_int_equal(act_is_enabled(), 1);
        assert_int_equal(act_range_push("session-range"), ACT_OK);
        assert_int_equal(act_range_pop(), ACT_OK);
        snprintf(path, sizeof(path), "%s/session-%d.json", dir, round);
        check_session_trace(act_session_end(path), path, "session-range");
        assert_int_equal(act_is_enabled(), 0);
        assert_int_equal(dir_entries(dir, "acceltrace-session-"), 0);
        assert_int_equal(act_session_end(path), ACT_E_STATE);
    }
    /* capture_api: paused until act_start. */
    act_options o = {.struct_size = sizeof(o), .capture_api = 1, .trace_name = "t"};
    assert_int_equal(act_session_begin(&o), ACT_OK);
    assert_int_equal(act_is_enabled(), 0);
    assert_int_equal(act_range_push("outside"), ACT_E_DISABLED);
    assert_int_equal(act_start(), ACT_OK);
    assert_int_equal(act_is_enabled(), 1);
    assert_int_equal(act_range_pop(), ACT_E_DISABLED); /* outside's pop */
    act_session_end(NULL);
    /* A caller-chosen spool dir: our spool file is removed, the dir kept. */
    char sd[128];
    snprintf(sd, sizeof(sd), "%s/mine", dir);
    act_options o2 = {.struct_size = sizeof(o2), .spool_dir = sd};
    assert_int_equal(act_session_begin(&o2), ACT_OK);
    assert_int_equal(dir_entries(sd, ""), 3); /* ., .., the spool */
    act_mark("x");
    act_session_end(NULL);
    assert_int_equal(dir_entries(sd, ""), 2);
    assert_int_equal(rmdir(sd), 0); /* kept, and empty */
    act_options bad = {.struct_size = sizeof(bad), .buffer_size = 100};
    assert_int_equal(act_session_begin(&bad), ACT_E_INVAL);
    assert_int_equal(act_is_enabled(), 0);
    /* Under a launcher the launcher records; a session is refused. */
    setenv("ACCELTRACE_SPOOL_DIR", dir, 1);
    assert_int_equal(act_session_begin(NULL), ACT_E_CONFLICT);
    unsetenv("ACCELTRACE_SPOOL_DIR");
    assert_int_equal(act_session_end(NULL), ACT_E_STATE);
    unsetenv("TMPDIR");
}

/* The chunk size of the spool a session opens. */
static uint32_t session_chunk_size(void)
{
    FILE *f = fopen(act_recorder_path(), "rb");
    assert_non_null(f);
    act_spool_header h;
    assert_int_equal(fread(&h, sizeof(h), 1, f), 1);
    fclose(f);
    return h.chunk_size;
}

/* Sessions honour ACCELTRACE_CHUNK_SIZE and default to run's 128 KiB
 * (they hard-coded 256 KiB); an invalid value is ACT_E_CONFIG. */
static void test_session_chunk_size(void **state)
{
    (void)state;
    setenv("TMPDIR", dir, 1);
    assert_int_equal(act_session_begin(NULL), ACT_OK);
    assert_int_equal(session_chunk_size(), 128u << 10);
    act_session_end(NULL);
    setenv("ACCELTRACE_CHUNK_SIZE", "64K", 1);
    assert_int_equal(act_session_begin(NULL), ACT_OK);
    assert_int_equal(session_chunk_size(), 64u << 10);
    act_session_end(NULL);
    setenv("ACCELTRACE_CHUNK_SIZE", "3", 1);
    assert_int_equal(act_session_begin(NULL), ACT_E_CONFIG);
    assert_int_equal(act_is_enabled(), 0);
    unsetenv("ACCELTRACE_CHUNK_SIZE");
    unsetenv("TMPDIR");
}

/* A record that does not fit the rest of the thread's chunk moves to a
 * chunk with room; it is not dropped because the half-full chunk came
 * back from the recycle list (regression). */
static void test_big_record_after_partial_chunk(void **state)
{
    (void)state;
    assert_int_equal(act_capture_configure(0, "", 0, 0), ACT_OK);
    assert_int_equal(act_recorder_open(dir, 16ull << 20, 64u << 10), 0);
    snprintf(spool, sizeof(spool), "%s", act_recorder_path());
    for (int i = 0; i < 2000; i++) /* about 32 KiB of the 64 KiB chunk */
        act_mark("m");
    static char name[50000];
    memset(name, 'x', sizeof(name) - 1);
    for (int round = 0; round < 3; round++) {
        name[0] = (char)('a' + round);
        assert_int_equal(act_range_push(name), ACT_OK);
        assert_int_equal(act_range_pop(), ACT_OK);
    }
    collect *c = rec_close_collect();
    assert_int_equal(c->ws.hdr->dropped[ACT_REC_STRING], 0);
    assert_int_equal(c->ws.hdr->dropped[ACT_REC_RANGE_PUSH], 0);
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->ev[i].kind != ACT_REC_RANGE_PUSH)
            continue;
        name[0] = (char)('a' + k++);
        assert_true(cstring_eq(c->ev[i].name, name, strlen(name)));
    }
    assert_int_equal(k, 3);
    collect_free(c);
}

/* A forked child records into its own spool, with the window as the
 * parent left it. */
static void test_fork_keeps_window(void **state)
{
    (void)state;
    rec_open(1);
    assert_int_equal(act_start(), ACT_OK);
    char parent_spool[512];
    snprintf(parent_spool, sizeof(parent_spool), "%s", spool);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        act_mark("child-mark");
        int ok = act_is_enabled() && strcmp(act_recorder_path(), parent_spool) != 0;
        act_recorder_close();
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    act_mark("parent-mark");
    collect *c = rec_close_collect();
    assert_int_equal(collect_count(c, ACT_REC_MARK), 1);
    collect_free(c);
    snprintf(spool, sizeof(spool), "%s/%ld.acts", dir, (long)pid);
    c = collect_spool(spool);
    assert_non_null(c);
    assert_int_equal(collect_count(c, ACT_REC_MARK), 1);
    for (size_t i = 0; i < c->n; i++)
        if (c->ev[i].kind == ACT_REC_MARK)
            assert_true(cstring_eq(c->ev[i].name, "child-mark", 10));
    collect_free(c);
    assert_int_equal(act_capture_configure(0, "", 0, 0), ACT_OK);
}

static void test_strerror(void **state)
{
    (void)state;
    for (int e = 0; e >= -13; e--) {
        assert_non_null(act_strerror(e));
        assert_string_not_equal(act_strerror(e), "unknown error");
    }
    assert_string_equal(act_strerror(-999), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_tool),
        cmocka_unit_test(test_hostile_strings),
        cmocka_unit_test(test_nesting_and_unbalanced),
        cmocka_unit_test(test_nesting_past_the_tracked_depth),
        cmocka_unit_test(test_capture_api_window),
        cmocka_unit_test(test_metadata_json),
        cmocka_unit_test(test_sessions),
        cmocka_unit_test(test_big_record_after_partial_chunk),
        cmocka_unit_test(test_session_chunk_size),
        cmocka_unit_test(test_fork_keeps_window),
        cmocka_unit_test(test_strerror),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
