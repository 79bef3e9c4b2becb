/*
 * test_summary_memo.c -- the summary of a timeline's events
 * (act_summary_add_events), which remembers a batch's name ids by the
 * addresses and lengths of the names and programs and looks lanes up in a
 * memo before their index, prints byte for byte what feeding the same
 * slices by their strings prints (act_summary_add_slice, _add_delay,
 * _add_range, as it did before it remembered anything). The events share
 * name pointers, hold equal names at other addresses, a name's prefix at
 * the same address, one name as a host call and a device op, kernels of
 * two programs and none, more names and lanes than the memos hold, and a
 * host lane and a device lane of the same pid and tid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "timeline/timeline.h"
#include "writers/summary.h"

static void arg_f64(act_timeline *tl, const char *key, double v)
{
    act_tl_arg *a = act_tl_arg_add(tl, key);
    assert_non_null(a);
    a->type = ACT_ARG_F64;
    a->v.d = v;
}

/* Host ranges and calls on lane (1, tid), and device ops on lane (1, tid)
 * and others, their names from the pools below. */
static void build(act_timeline *tl)
{
    static const char stepper[] = "stepper";
    act_str many[40];
    for (int i = 0; i < 40; i++)
        many[i] = act_tl_printf(tl, "op%d", i);
    act_str step_copy = act_tl_strdup(tl, "step", 4);
    act_str prog[3] = {act_str_c("progA"), act_str_c("progB"), {"", 0}};
    uint64_t ts = 1000, ext = 1;
    for (int i = 0; i < 600; i++, ts += 100, ext++) {
        uint32_t tid = (uint32_t)(i % 23);
        act_str rn = i % 5 == 0   ? step_copy
                     : i % 7 == 0 ? (act_str){stepper, 4}
                                  : act_str_c("step");
        assert_non_null(act_tl_event_add(tl, 'X', ACT_CAT_USER_ANNOTATION, rn, 1, tid, ts, 50));
        act_tl_arg_u64(tl, "External id", ext);
        act_str cn = i % 11 == 0 ? (act_str){stepper, 7} : i % 3 ? many[i % 40] : act_str_c("copy");
        assert_non_null(act_tl_event_add(tl, 'X', ACT_CAT_CPU_OP, cn, 1, tid, ts + 5, 20));
        act_tl_arg_u64(tl, "External id", ext);
        act_str kn = i % 4 ? act_str_c("saxpy") : act_str_c("copy");
        assert_non_null(act_tl_event_add(tl, 'X', ACT_CAT_KERNEL, kn, 1, tid, ts + 30, 7 + i % 3));
        act_tl_arg_u64(tl, "External id", ext);
        if (i % 6)
            act_tl_arg_str(tl, "program", prog[i % 3]);
        if (i % 2)
            arg_f64(tl, "queued", (double)(ts + 10 - tl->base_ns) / 1000.0);
    }
}

/* What act_summary_add_events did before its memos: every slice by its
 * strings. */
static void add_by_strings(act_summary *s, const act_timeline *tl)
{
    for (size_t i = 0; i < tl->n_ev; i++) {
        const act_tl_event *e = &tl->ev[i];
        int dev = act_tl_cat_is_device(tl, e->cat);
        if (e->ph != 'X' || dev < 0)
            continue;
        uint64_t ext = 0;
        act_str prog = {"", 0};
        double queued = -1;
        for (uint32_t k = e->nargs; k-- > 0;) { /* the first of a key wins */
            const act_tl_arg *a = &tl->args[e->arg0 + k];
            if (a->type == ACT_ARG_U64 && act_str_is(a->key, "External id"))
                ext = a->v.u;
            if (dev && a->type == ACT_ARG_STR && act_str_is(a->key, "program"))
                prog = a->v.s;
            if (dev && a->type == ACT_ARG_F64 && act_str_is(a->key, "queued"))
                queued = a->v.d;
        }
        double ts = (double)(e->ts - tl->base_ns) / 1000.0;
        char key[1024];
        size_t len = act_summary_op_key(key, sizeof(key), e->name.p, e->name.n, prog.p, prog.n);
        const char *name = len != e->name.n ? key : e->name.p;
        assert_int_equal(act_summary_add_slice(s, name, len, dev, e->pid, e->tid, ts,
                                               (double)e->dur / 1000.0, ext),
                         0);
        if (queued >= 0)
            assert_int_equal(act_summary_add_delay(s, name, len, ts - queued), 0);
        if (!dev && ext && (e->cat == ACT_CAT_USER_ANNOTATION || e->cat == ACT_CAT_CPU_OP))
            assert_int_equal(act_summary_add_range(s, ext, e->name.p, e->name.n), 0);
    }
}

static char *printed(const act_timeline *tl, int memo)
{
    act_summary *s = act_summary_new_for(tl);
    assert_non_null(s);
    if (memo)
        assert_int_equal(act_summary_add_events(s, tl), 0);
    else
        add_by_strings(s, tl);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    act_summary_print_timeline(s, tl, 0, 0, f, 1);
    fclose(f);
    act_summary_free(s);
    return buf;
}

static void test_memo_prints_the_same(void **state)
{
    (void)state;
    act_timeline tl;
    act_build_opts o = {0, 0};
    assert_int_equal(act_timeline_build(&tl, NULL, 0, &o), 0);
    build(&tl);
    char *want = printed(&tl, 0), *got = printed(&tl, 1);
    assert_non_null(strstr(want, "saxpy (progA)"));
    assert_non_null(strstr(want, "stepper"));
    assert_string_equal(got, want);
    free(want);
    free(got);
    act_timeline_free(&tl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo_prints_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
