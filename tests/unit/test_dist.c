/*
 * test_dist.c -- rank detection from launcher variables and output name
 * templates (src/core/dist.c), with a table for the environment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/dist.h"

static const char *const *table;

static const char *lookup(const char *name)
{
    for (const char *const *p = table; p && *p; p += 2)
        if (!strcmp(p[0], name))
            return p[1];
    return NULL;
}

static act_dist_info detect(const char *const *env)
{
    act_dist_info d;
    table = env;
    act_dist_detect(&d, lookup);
    return d;
}

static void test_launchers(void **state)
{
    (void)state;
    static const char *const torchrun[] = {"RANK", "3", "LOCAL_RANK", "1", "WORLD_SIZE", "4", NULL};
    act_dist_info d = detect(torchrun);
    assert_true(d.known);
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.local_rank, 1);
    assert_int_equal(d.world_size, 4);
    assert_string_equal(d.launcher, "torchrun");
    static const char *const ompi[] = {"OMPI_COMM_WORLD_RANK",
                                       "5",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "8",
                                       "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "1",
                                       NULL};
    d = detect(ompi);
    assert_int_equal(d.rank, 5);
    assert_int_equal(d.world_size, 8);
    assert_string_equal(d.launcher, "openmpi");
    static const char *const pmi[] = {"PMI_RANK", "2", "PMI_SIZE", "3", NULL};
    d = detect(pmi);
    assert_int_equal(d.rank, 2);
    assert_int_equal(d.local_rank, -1);
    assert_string_equal(d.launcher, "pmi");
    static const char *const slurm[] = {
        "SLURM_PROCID", "7", "SLURM_NTASKS", "16", "SLURM_LOCALID", "3", NULL};
    d = detect(slurm);
    assert_int_equal(d.rank, 7);
    assert_int_equal(d.local_rank, 3);
    assert_string_equal(d.launcher, "slurm");
    /* torchrun inside a Slurm allocation: torchrun's RANK wins */
    static const char *const both[] = {"SLURM_PROCID", "0", "RANK", "1", NULL};
    assert_int_equal(detect(both).rank, 1);
    /* not a number: not a rank */
    static const char *const bad[] = {"RANK", "one", "PMI_RANK", "-1", NULL};
    assert_false(detect(bad).known);
    static const char *const none[] = {NULL};
    assert_false(detect(none).known);
}

static void test_json(void **state)
{
    (void)state;
    act_dist_info d = {1, 1, 0, 2, "torchrun"};
    char buf[256];
    act_dist_json(&d, buf, sizeof(buf));
    assert_string_equal(buf,
                        "{\"rank\":1,\"local_rank\":0,\"world_size\":2,\"launcher\":\"torchrun\"}");
    d = (act_dist_info){1, 4, -1, -1, NULL};
    act_dist_json(&d, buf, sizeof(buf));
    assert_string_equal(buf, "{\"rank\":4}");
}

static void test_templates(void **state)
{
    (void)state;
    static const char *const env[] = {"JOB", "j42", NULL};
    table = env;
    act_dist_info d = {1, 3, 1, 4, "torchrun"}, none = {0, -1, -1, -1, NULL};
    char out[256], err[128];
    assert_int_equal(act_outname_expand("t.%r.%p.%h.%q{JOB}.%q{NOPE}.%%.json", 99, "node1", &d,
                                        lookup, out, sizeof(out), err, sizeof(err)),
                     0);
    assert_string_equal(out, "t.3.99.node1.j42..%.json");
    assert_int_equal(
        act_outname_expand("t.%r.json", 7, "h", &none, lookup, out, sizeof(out), err, sizeof(err)),
        0);
    assert_string_equal(out, "t.pid7.json");
    assert_int_equal(act_outname_expand("t.%x", 1, "h", &d, lookup, out, sizeof(out), err, 128),
                     -1);
    assert_non_null(strstr(err, "%x"));
    assert_int_equal(act_outname_expand("t.%q{JOB", 1, "h", &d, lookup, out, sizeof(out), err, 128),
                     -1);
    assert_int_equal(act_outname_expand("%q{NOPE}", 1, "h", &d, lookup, out, sizeof(out), err, 128),
                     -1); /* empty */
    assert_int_equal(act_outname_expand("abcdef%p", 123456, "h", &d, lookup, out, 8, err, 128), -1);
    assert_true(act_outname_is_template("a%rb"));
    assert_false(act_outname_is_template("trace.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launchers),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_templates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
