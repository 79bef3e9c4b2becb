/*
 * summary_cl.c -- the summary's section for what OpenCL developers check
 * besides time (CLIntercept's reports): failed calls and commands by name
 * and error with counts, program build time, and the objects the program
 * never released (the trace's "opencl_leaks" metadata). Kept apart from
 * summary.c, which only feeds it (summary_cl.h).
 */
#include "summary_cl.h"
#include "summary_rows.h"

#include <string.h>

/* failed: {name: {error: count}} */
void act_summary_cl_failure(json_t **failed, const char *name, size_t len, const char *err,
                            size_t errlen)
{
    if (!*failed && !(*failed = json_object()))
        return;
    char key[256], ekey[128];
    snprintf(key, sizeof key, "%.*s", (int)(len < 255 ? len : 255), name);
    snprintf(ekey, sizeof ekey, "%.*s", (int)(errlen < 127 ? errlen : 127), err);
    json_t *per = json_object_get(*failed, key);
    if (!per) {
        per = json_object();
        if (!per || json_object_set_new(*failed, key, per))
            return;
    }
    json_t *c = json_object_get(per, ekey);
    json_object_set_new(per, ekey, json_integer(json_integer_value(c) + 1));
}

void act_summary_cl_failure_event(json_t **failed, const act_timeline *tl, const act_tl_event *e)
{
    for (uint32_t i = 0; i < e->nargs; i++) {
        const act_tl_arg *a = &tl->args[e->arg0 + i];
        if (a->type == ACT_ARG_STR && act_str_is(a->key, "error")) {
            act_summary_cl_failure(failed, e->name.p, e->name.n, a->v.s.p, a->v.s.n);
            return;
        }
        if (a->type == ACT_ARG_I64 && act_str_is(a->key, "status")) {
            char st[32];
            int n = snprintf(st, sizeof st, "status %lld", (long long)a->v.i);
            act_summary_cl_failure(failed, e->name.p, e->name.n, st, (size_t)n);
            return;
        }
    }
    act_summary_cl_failure(failed, e->name.p, e->name.n, "failed", 6);
}

/* One failure's line, the call, the error and the count, in 80 columns:
 * the error gets the columns its longest takes (up to 44, the longest
 * OpenCL error name), the call the rest; one too long is cut (act_sum_fit). */
static void print_failure(FILE *f, const char *name, const char *err, long long n, int errw)
{
    char call[160], why[160];
    int callw = 80 - 4 - 1 - errw - 1 - 6;
    snprintf(call, sizeof(call), "%s", name);
    snprintf(why, sizeof(why), "%s", err);
    act_sum_fit(call, (size_t)callw);
    act_sum_fit(why, (size_t)errw);
    fprintf(f, "    %-*s %-*s %6lld\n", callw, call, errw, why, n);
}

static int print_failures(FILE *f, json_t *failed)
{
    long long total = 0;
    int errw = 20;
    const char *name, *err;
    json_t *per, *c;
    // cppcheck-suppress unknownMacro
    json_object_foreach(failed, name, per)
    {
        json_object_foreach(per, err, c)
        {
            total += json_integer_value(c);
            errw = (int)strlen(err) > errw ? (int)strlen(err) : errw;
        }
    }
    if (!total)
        return 0;
    errw = errw > 44 ? 44 : errw;
    fprintf(f, "  %-34s %lld\n", "failed calls and commands", total);
    json_object_foreach(failed, name, per)
    {
        json_object_foreach(per, err, c) print_failure(f, name, err, json_integer_value(c), errw);
    }
    return 1;
}

static int print_leaks(FILE *f, json_t *leaks)
{
    json_int_t total = json_integer_value(json_object_get(leaks, "total"));
    if (total <= 0)
        return 0;
    fprintf(f, "  %-34s %lld", "objects never released", (long long)total);
    const char *sep = " (";
    const char *k;
    json_t *v;
    json_object_foreach(leaks, k, v)
    {
        json_int_t n = json_integer_value(json_object_get(v, "count"));
        if (!json_is_object(v) || n <= 0)
            continue;
        fprintf(f, "%s%s %lld", sep, k, (long long)n);
        json_t *b = json_object_get(v, "bytes");
        if (json_is_integer(b))
            fprintf(f, " = %lld bytes", (long long)json_integer_value(b));
        sep = ", ";
    }
    fprintf(f, "%s\n", *sep == ',' ? ")" : "");
    return 1;
}

/* The calls counted, not drawn (the trace's "opencl_calls_not_drawn"). */
static void print_undrawn(FILE *f, json_t *undrawn)
{
    long long total = 0;
    const char *k;
    json_t *v;
    json_object_foreach(undrawn, k, v) total += json_integer_value(v);
    if (!total)
        return;
    fprintf(f, "  %-34s %lld", "calls counted, not drawn", total);
    const char *sep = " (";
    json_object_foreach(undrawn, k, v)
    {
        if (json_integer_value(v) <= 0)
            continue;
        fprintf(f, "%s%s %lld", sep, k, (long long)json_integer_value(v));
        sep = ", ";
    }
    fprintf(f, "%s\n", *sep == ',' ? ")" : "");
}

void act_summary_cl_print(FILE *f, json_t *failed, json_t *leaks, json_t *undrawn, uint64_t builds,
                          double build_us)
{
    if (!failed && !leaks && !builds)
        return;
    fprintf(f, "OpenCL:\n");
    fprintf(f, "  %-34s %llu (%.3f ms)\n", "program builds", (unsigned long long)builds,
            build_us / 1000.0);
    int bad = print_failures(f, failed);
    if (json_is_object(leaks))
        bad += print_leaks(f, leaks);
    else
        fprintf(f, "  %-34s unknown (no leak report in this trace)\n", "objects never released");
    if (!bad)
        fprintf(f, "  %s\n",
                json_is_object(leaks)
                    ? "all clean: no call or command failed, every object released"
                    : "no call or command failed");
    if (json_is_object(undrawn))
        print_undrawn(f, undrawn);
}
