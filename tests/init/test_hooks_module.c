/*
 * test_hooks_module.c -- hook groups in separately loaded modules
 * (act_hooks_register_module). torch_npu's register_patch_module silently
 * never imports a module registered after discovery; here such a module is
 * scanned on the next apply. Module paths come from the build
 * (HOOKMOD_PATH, ...).
 */
#include <dlfcn.h>
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

static int n_main;
static int main_hook(void)
{
    return ++n_main, 0;
}
ACT_HOOK("t.main", main_hook, main_hook);

/* hookmod_runs() of the module at `path` (already loaded). */
static int runs(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    int (*fn)(void);
    *(void **)&fn = dlsym(h, "hookmod_runs");
    assert_non_null(fn);
    int r = fn();
    dlclose(h);
    return r;
}

static int setup(void **state)
{
    (void)state;
    act_hooks_reset();
    strcpy(act_cfg.hooks, "all");
    return 0;
}

static void test_module_after_discovery(void **state)
{
    (void)state;
    assert_int_equal(act_hooks_apply_all(), 0); /* discovery has run */
    assert_int_equal(n_main, 1);
    assert_int_equal(act_hooks_apply("t.mod"), ACT_E_NOTFOUND);
    assert_int_equal(act_hooks_register_module(HOOKMOD_PATH), 0);
    assert_int_equal(act_hooks_register_module(HOOKMOD_PATH), 0); /* once */
    assert_int_equal(act_hooks_apply("t.mod"), 0);
    assert_int_equal(runs(HOOKMOD_PATH), 110); /* a and b once, c (t.mod2) not yet */
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(runs(HOOKMOD_PATH), 111);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(act_hooks_apply("t.mod"), 0);
    assert_int_equal(runs(HOOKMOD_PATH), 111); /* idempotent */
    assert_int_equal(n_main, 1);
    /* Module groups follow the order rules like any other. */
    const char *order[16];
    int n = act_hooks_order(order, 16);
    int pm = -1, pm2 = -1;
    for (int i = 0; i < n && i < 16; i++) {
        if (!strcmp(order[i], "t.mod"))
            pm = i;
        if (!strcmp(order[i], "t.mod2"))
            pm2 = i;
    }
    /* (within one module, section order is the compiler's, so only
     * presence is checked) */
    if (!(pm >= 0 && pm2 >= 0))
        fail_msg("order: t.mod at %d, t.mod2 at %d of %d", pm, pm2, n);
}

static void test_module_before_discovery_and_reset(void **state)
{
    (void)state;
    int before = runs(HOOKMOD_PATH);
    assert_int_equal(act_hooks_register_module(HOOKMOD_PATH), 0);
    assert_int_equal(act_hooks_apply_all(), 0);
    assert_int_equal(runs(HOOKMOD_PATH), before + 111);
    /* reset forgets the module's registration... */
    act_hooks_reset();
    assert_int_equal(act_hooks_apply("t.mod"), ACT_E_NOTFOUND);
    /* ...and registering it again applies its hooks again. */
    assert_int_equal(act_hooks_register_module(HOOKMOD_PATH), 0);
    assert_int_equal(act_hooks_apply("t.mod"), 0);
    assert_int_equal(runs(HOOKMOD_PATH), before + 111 + 110);
}

static void test_module_fallback_symbols(void **state)
{
    (void)state;
    assert_int_equal(act_hooks_register_module(HOOKMOD_FALLBACK_PATH), 0);
    assert_int_equal(act_hooks_apply("t.fallback"), 0);
    assert_int_equal(runs(HOOKMOD_FALLBACK_PATH), 111);
}

static void test_module_bad_descriptor_skipped(void **state)
{
    (void)state;
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 2);
    int rc = act_hooks_register_module(HOOKMOD_BAD_PATH);
    int rc2 = act_hooks_apply_all();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[1024] = "";
    rewind(tmp);
    buf[fread(buf, 1, sizeof(buf) - 1, tmp)] = '\0';
    fclose(tmp);
    assert_int_equal(rc, 0);
    assert_int_equal(rc2, 0);
    assert_non_null(strstr(buf, "acceltrace: hook Bad Group/mod_bad in "));
    assert_non_null(strstr(buf, "not registered: invalid argument\n"));
    assert_int_equal(runs(HOOKMOD_BAD_PATH), 111); /* the good ones ran */
}

static void test_module_without_section(void **state)
{
    (void)state;
    assert_int_equal(act_hooks_register_module(NOHOOKS_PATH), ACT_E_NOTFOUND);
    assert_int_equal(act_hooks_register_module("/no/such/module.so"), ACT_E_NOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_module_after_discovery, setup),
        cmocka_unit_test_setup(test_module_before_discovery_and_reset, setup),
        cmocka_unit_test_setup(test_module_fallback_symbols, setup),
        cmocka_unit_test_setup(test_module_bad_descriptor_skipped, setup),
        cmocka_unit_test_setup(test_module_without_section, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
