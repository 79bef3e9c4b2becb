/*
 * test_hooks.c -- the hook-group manager (hooks.c): discovery from the
 * linker section, order, per-group apply, idempotence, and each torch_npu
 * PatchManager edge case with acceltrace's defined behaviour:
 *   - a hook registered after its group was applied runs on the next
 *     apply, exactly once;
 *   - a hook registered during an apply of its group runs in that apply
 *     (torch_npu: counted as applied, never run);
 *   - a failing hook is reported and retried, the ones that succeeded are
 *     not re-run (torch_npu: re-runs them);
 *   - reset then discovery finds the section hooks again (torch_npu:
 *     finds nothing);
 *   - unknown groups and invalid names get error codes.
 * Modules loaded after discovery are tested in tests/init (they need a
 * separately built .so).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "acceltrace.h"
#include "config.h"
#include "init/hooks.h"

static int n_sec_a, n_sec_b, n_rt1, n_rt2, n_late, n_bad, bad_fails, n_inner, n_newgroup;

static int sec_a(void)
{
    return ++n_sec_a, 0;
}
static int sec_b(void)
{
    return ++n_sec_b, 0;
}
ACT_HOOK("t.sec", sec_a, sec_a);
ACT_HOOK("t.sec", sec_b, sec_b);

static int rt1(void)
{
    return ++n_rt1, 0;
}
static int rt2(void)
{
    return ++n_rt2, 0;
}
static int late(void)
{
    return ++n_late, 0;
}
static int bad(void)
{
    n_bad++;
    return bad_fails ? ACT_E_UNSUPPORTED : 0;
}
static int inner(void)
{
    return ++n_inner, 0;
}
static int newgroup(void)
{
    return ++n_newgroup, 0;
}

/* Registers `inner` into its own group while that group is applied. */
static int registers_inner(void)
{
    act_hook h = {"t.reg", "inner", inner};
    return act_hooks_register(&h);
}

/* Registers a hook into a group nobody has registered yet. */
static int registers_newgroup(void)
{
    act_hook h = {"t.brandnew", "newgroup", newgroup};
    return act_hooks_register(&h);
}

static int reg(const char *group, const char *name, int (*fn)(void))
{
    act_hook h = {group, name, fn};
    return act_hooks_register(&h);
}

static int setup(void **state)
{
    (void)state;
    act_hooks_reset();
    n_sec_a = n_sec_b = n_rt1 = n_rt2 = n_late = n_bad = bad_fails = n_inner = n_newgroup = 0;
    strcpy(act_cfg.hooks, "all");
    return 0;
}

/* The position of `g` in the resolved order, -1 when absent. */
static int pos(const char *g)
{
    const char *order[128];
    int n = act_hooks_order(order, 128);
    assert_true(n >= 0 && n <= 128);
    for (int i = 0; i < n; i++)
        if (!strcmp(order[i], g))
            return i;
    return -1;
}

static void test_section_discovery_and_idempotence(void **state)
{
    (void)state;
    assert_int_equal(act_hooks_state("t.sec", "sec_a"), ACT_E_NOTFOUND); /* not discovered yet */
    assert_true(act_hooks_discover() >= 2);
    assert_int_equal(act_hooks_state("t.sec", "sec_a"), 0);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_sec_a, 1);
    assert_int_equal(n_sec_b, 1);
    assert_int_equal(act_hooks_state("t.sec", "sec_a"), 1);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(act_hooks_apply("t.sec"), 0);
    assert_int_equal(n_sec_a, 1);
    assert_int_equal(n_sec_b, 1);
    /* Discovering again adds nothing. */
    int n = act_hooks_discover();
    assert_int_equal(act_hooks_discover(), n);
}

static void test_apply_one_group(void **state)
{
    (void)state;
    assert_int_equal(reg("t.one", "rt1", rt1), 0);
    assert_int_equal(reg("t.two", "rt2", rt2), 0);
    assert_int_equal(act_hooks_apply("t.one"), 0);
    assert_int_equal(n_rt1, 1);
    assert_int_equal(n_rt2, 0);
    assert_int_equal(n_sec_a, 0); /* other groups untouched */
    assert_int_equal(act_hooks_apply("t.two"), 0);
    assert_int_equal(n_rt2, 1);
}

static void test_default_order(void **state)
{
    (void)state;
    /* Registered against the default order, unknown groups interleaved. */
    assert_int_equal(reg("zzz_custom", "x1", rt1), 0);
    assert_int_equal(reg("opencl.sync", "x2", rt1), 0);
    assert_int_equal(reg("aaa_custom", "x3", rt1), 0);
    assert_int_equal(reg("opencl.transfer", "x4", rt1), 0);
    assert_int_equal(reg("opencl.queue", "x5", rt1), 0);
    assert_int_equal(reg("opencl.kernel", "x6", rt1), 0);
    assert_true(pos("opencl.queue") < pos("opencl.kernel"));
    assert_true(pos("opencl.kernel") < pos("opencl.transfer"));
    assert_true(pos("opencl.transfer") < pos("opencl.sync"));
    /* Unknown groups after the known ones, in registration order (not sorted). */
    assert_true(pos("opencl.sync") < pos("zzz_custom"));
    assert_true(pos("zzz_custom") < pos("aaa_custom"));
}

static void test_set_order(void **state)
{
    (void)state;
    assert_int_equal(reg("opencl.queue", "q", rt1), 0);
    assert_int_equal(reg("opencl.kernel", "k", rt1), 0);
    assert_int_equal(reg("t.x", "x", rt1), 0);
    const char *order[] = {"t.x", "opencl.kernel", NULL};
    assert_int_equal(act_hooks_set_order(order), 0);
    assert_int_equal(pos("t.x"), 0);
    assert_int_equal(pos("opencl.kernel"), 1);
    /* A default group left out of the list follows in registration order. */
    assert_true(pos("opencl.queue") > 1);
    /* NULL restores the default order. */
    assert_int_equal(act_hooks_set_order(NULL), 0);
    assert_true(pos("opencl.queue") < pos("opencl.kernel"));
    assert_true(pos("opencl.kernel") < pos("t.x"));
    /* Bad lists are refused and leave the order alone. */
    const char *empty_name[] = {"t.x", "", NULL};
    const char *dup[] = {"t.x", "t.x", NULL};
    const char *upper[] = {"OpenCL", NULL};
    assert_int_equal(act_hooks_set_order(empty_name), ACT_E_INVAL);
    assert_int_equal(act_hooks_set_order(dup), ACT_E_INVAL);
    assert_int_equal(act_hooks_set_order(upper), ACT_E_INVAL);
    assert_true(pos("opencl.queue") < pos("t.x"));
}

static char hook_trail[16];
static int ha(void)
{
    return strcat(hook_trail, "a"), 0;
}
static int hb(void)
{
    return strcat(hook_trail, "b"), 0;
}

static void test_apply_all_follows_order(void **state)
{
    (void)state;
    hook_trail[0] = '\0';
    assert_int_equal(reg("t.b", "hb", hb), 0);
    assert_int_equal(reg("t.a", "ha", ha), 0);
    const char *order[] = {"t.a", NULL};
    assert_int_equal(act_hooks_set_order(order), 0);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_string_equal(hook_trail, "ab");
}

static void test_late_registration(void **state)
{
    (void)state;
    assert_int_equal(reg("t.late", "rt1", rt1), 0);
    assert_int_equal(act_hooks_apply("t.late"), 0);
    assert_int_equal(reg("t.late", "late", late), 0);
    assert_int_equal(n_late, 0);
    assert_int_equal(act_hooks_apply("t.late"), 0);
    assert_int_equal(n_late, 1);
    assert_int_equal(n_rt1, 1); /* the applied one did not run again */
    assert_int_equal(act_hooks_apply("t.late"), 0);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_late, 1);
}

static void test_registration_during_apply(void **state)
{
    (void)state;
    assert_int_equal(reg("t.reg", "registers_inner", registers_inner), 0);
    assert_int_equal(act_hooks_apply("t.reg"), 0);
    assert_int_equal(n_inner, 1); /* ran in the same apply */
    assert_int_equal(act_hooks_state("t.reg", "inner"), 1);
    assert_int_equal(act_hooks_apply("t.reg"), 0);
    assert_int_equal(n_inner, 1);
}

static void test_registration_of_new_group_during_apply_all(void **state)
{
    (void)state;
    assert_int_equal(reg("t.maker", "registers_newgroup", registers_newgroup), 0);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_newgroup, 1);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_newgroup, 1);
}

static void test_failing_hook_retried(void **state)
{
    (void)state;
    assert_int_equal(reg("t.fail", "rt1", rt1), 0);
    assert_int_equal(reg("t.fail", "bad", bad), 0);
    assert_int_equal(reg("t.fail", "rt2", rt2), 0);
    bad_fails = 1;
    assert_int_equal(act_hooks_apply("t.fail"), ACT_E_UNSUPPORTED);
    assert_int_equal(n_rt1, 1);
    assert_int_equal(n_bad, 1);
    assert_int_equal(n_rt2, 1); /* hooks after the failing one still run */
    assert_int_equal(act_hooks_state("t.fail", "bad"), ACT_E_UNSUPPORTED);
    /* Still failing: retried alone. */
    assert_int_equal(act_hooks_apply_all(), ACT_E_UNSUPPORTED);
    assert_int_equal(n_bad, 2);
    assert_int_equal(n_rt1, 1);
    bad_fails = 0;
    assert_int_equal(act_hooks_apply("t.fail"), 0);
    assert_int_equal(n_bad, 3);
    assert_int_equal(n_rt1, 1);
    assert_int_equal(n_rt2, 1);
    assert_int_equal(act_hooks_state("t.fail", "bad"), 1);
    assert_int_equal(act_hooks_apply("t.fail"), 0);
    assert_int_equal(n_bad, 3);
}

static void test_reset_then_rediscovery(void **state)
{
    (void)state;
    assert_int_equal(reg("t.rt", "rt1", rt1), 0);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_sec_a, 1);
    const char *order[] = {"t.rt", NULL};
    assert_int_equal(act_hooks_set_order(order), 0);
    act_hooks_reset();
    /* Run-time registrations and the custom order are gone... */
    assert_int_equal(act_hooks_state("t.rt", "rt1"), ACT_E_NOTFOUND);
    assert_int_equal(act_hooks_apply("t.rt"), ACT_E_NOTFOUND);
    /* ...and the section is found again and applied again. */
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_sec_a, 2);
    assert_int_equal(n_sec_b, 2);
    assert_int_equal(n_rt1, 1);
}

static void test_unknown_group(void **state)
{
    (void)state;
    assert_int_equal(act_hooks_apply("t.nobody"), ACT_E_NOTFOUND);
    assert_int_equal(act_hooks_state("t.nobody", "x"), ACT_E_NOTFOUND);
    assert_int_equal(act_hooks_apply_all(), 0);
}

static void test_invalid_names(void **state)
{
    (void)state;
    assert_int_equal(act_hooks_apply(NULL), ACT_E_INVAL);
    assert_int_equal(act_hooks_apply(""), ACT_E_INVAL);
    assert_int_equal(act_hooks_apply("Bad Name"), ACT_E_INVAL);
    assert_int_equal(act_hooks_register(NULL), ACT_E_INVAL);
    assert_int_equal(reg(NULL, "x", rt1), ACT_E_INVAL);
    assert_int_equal(reg("", "x", rt1), ACT_E_INVAL);
    assert_int_equal(reg("all", "x", rt1), ACT_E_INVAL); /* reserved for ACCELTRACE_HOOKS */
    assert_int_equal(reg("a..b", "x", rt1), ACT_E_INVAL);
    assert_int_equal(reg("Upper", "x", rt1), ACT_E_INVAL);
    assert_int_equal(reg("t.ok", NULL, rt1), ACT_E_INVAL);
    assert_int_equal(reg("t.ok", "", rt1), ACT_E_INVAL);
    assert_int_equal(reg("t.ok", "x", NULL), ACT_E_INVAL);
    assert_int_equal(act_hooks_register_module(NULL), ACT_E_INVAL);
    assert_int_equal(act_hooks_register_module(""), ACT_E_INVAL);
    assert_int_equal(act_hooks_register_module("/nonexistent/module.so"), ACT_E_NOTFOUND);
    assert_int_equal(act_hooks_state(NULL, "x"), ACT_E_INVAL);
    assert_int_equal(act_hooks_group_enabled(NULL), 0);
    assert_int_equal(act_hooks_group_enabled(""), 0);
    assert_int_equal(act_hooks_apply("t.ok"), ACT_E_NOTFOUND); /* nothing was registered */
}

static void test_duplicates(void **state)
{
    (void)state;
    assert_int_equal(reg("t.dup", "rt1", rt1), 0);
    assert_int_equal(reg("t.dup", "rt1", rt1), 0); /* same hook twice: one entry */
    assert_int_equal(reg("t.dup", "rt1", rt2), ACT_E_CONFLICT);
    assert_int_equal(reg("t.dup2", "rt1", rt1), 0); /* same function, other group: fine */
    assert_int_equal(act_hooks_apply("t.dup"), 0);
    assert_int_equal(n_rt1, 1);
    assert_int_equal(n_rt2, 0);
}

static void test_selection(void **state)
{
    (void)state;
    assert_int_equal(reg("t.kern", "rt1", rt1), 0);
    assert_int_equal(reg("t.xfer", "rt2", rt2), 0);
    strcpy(act_cfg.hooks, "all,-t.xfer");
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_rt1, 1);
    assert_int_equal(n_rt2, 0);
    assert_int_equal(act_hooks_apply("t.xfer"), ACT_E_DISABLED);
    assert_int_equal(n_rt2, 0);
    /* Selecting it later applies it on the next apply. */
    strcpy(act_cfg.hooks, "t");
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(n_rt2, 1);
}

static void test_group_enabled_rules(void **state)
{
    (void)state;
    strcpy(act_cfg.hooks, "all");
    assert_true(act_hooks_group_enabled("opencl.kernel"));
    strcpy(act_cfg.hooks, "opencl.kernel,opencl.sync");
    assert_true(act_hooks_group_enabled("opencl.kernel"));
    assert_true(act_hooks_group_enabled("opencl.sync"));
    assert_false(act_hooks_group_enabled("opencl.transfer"));
    assert_false(act_hooks_group_enabled("opencl.kernels")); /* prefixes stop at dots */
    strcpy(act_cfg.hooks, "opencl");
    assert_true(act_hooks_group_enabled("opencl.transfer"));
    assert_false(act_hooks_group_enabled("openclx.transfer"));
    assert_false(act_hooks_group_enabled("nvtx"));
    strcpy(act_cfg.hooks, "-opencl.transfer");
    assert_true(act_hooks_group_enabled("opencl.kernel"));
    assert_true(act_hooks_group_enabled("nvtx"));
    assert_false(act_hooks_group_enabled("opencl.transfer"));
    strcpy(act_cfg.hooks, "opencl,-opencl.transfer,opencl.transfer");
    assert_true(act_hooks_group_enabled("opencl.transfer")); /* last match wins */
    act_cfg.hooks[0] = '\0'; /* configuration not loaded: everything */
    assert_true(act_hooks_group_enabled("opencl.transfer"));
}

/* A misspelt group in ACCELTRACE_HOOKS is said once, not silently ignored. */
static void test_selection_typo_reported(void **state)
{
    (void)state;
    assert_int_equal(reg("t.kern", "rt1", rt1), 0);
    strcpy(act_cfg.hooks, "t.kernal");
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 2);
    act_hooks_apply_all();
    act_hooks_apply_all();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[512] = "";
    rewind(tmp);
    size_t n = fread(buf, 1, sizeof(buf) - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
    assert_string_equal(buf, "acceltrace: ACCELTRACE_HOOKS: 't.kernal' matches no hook group\n");
    assert_int_equal(n_rt1, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_section_discovery_and_idempotence, setup),
        cmocka_unit_test_setup(test_apply_one_group, setup),
        cmocka_unit_test_setup(test_default_order, setup),
        cmocka_unit_test_setup(test_set_order, setup),
        cmocka_unit_test_setup(test_apply_all_follows_order, setup),
        cmocka_unit_test_setup(test_late_registration, setup),
        cmocka_unit_test_setup(test_registration_during_apply, setup),
        cmocka_unit_test_setup(test_registration_of_new_group_during_apply_all, setup),
        cmocka_unit_test_setup(test_failing_hook_retried, setup),
        cmocka_unit_test_setup(test_reset_then_rediscovery, setup),
        cmocka_unit_test_setup(test_unknown_group, setup),
        cmocka_unit_test_setup(test_invalid_names, setup),
        cmocka_unit_test_setup(test_duplicates, setup),
        cmocka_unit_test_setup(test_selection, setup),
        cmocka_unit_test_setup(test_group_enabled_rules, setup),
        cmocka_unit_test_setup(test_selection_typo_reported, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
