/*
 * cmd_rt.c -- `acceltrace rt [--json]`: which runtime-table backends
 * (include/acceltrace_rt.h) this machine has, how many devices each sees
 * and their memory. It only uses the public table, so it shows exactly
 * what a program calling act_rt_for() would get. Asking for memory info
 * may initialise each device's runtime (cudaMemGetInfo makes a context);
 * counting devices does not.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace_rt.h"
#include "cmd.h"
#include "core/config.h"
#include "help.h"

static const char *const backend_names[] = {"cuda", "ascend", "opencl"};

/* The devices of one backend: memory of each, or why it is unknown. */
static json_t *devices_json(const struct act_rt *rt, int n)
{
    json_t *arr = json_array();
    for (int d = 0; d < n; d++) {
        size_t free = 0, total = 0;
        int rc = rt->mem_get_info(d, &free, &total);
        json_t *o = json_pack("{s:i}", "index", d);
        if (rc == ACT_RT_SUCCESS) {
            json_object_set_new(o, "total_bytes", json_integer((json_int_t)total));
            json_object_set_new(o, "free_bytes",
                                free == ACT_RT_MEM_UNKNOWN ? json_null()
                                                           : json_integer((json_int_t)free));
        } else {
            json_object_set_new(o, "code", json_integer(rc));
            json_object_set_new(o, "error", json_string(rt->error_string(rc)));
            json_object_set_new(o, "detail", json_string(act_rt_last_error()));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *backend_json(const char *name)
{
    const struct act_rt *rt = act_rt_for(name);
    int n = 0;
    int rc = rt->device_count(&n);
    json_t *o = json_pack("{s:s}", "name", name);
    if (rc != ACT_RT_SUCCESS) {
        json_object_set_new(o, "available", json_false());
        json_object_set_new(o, "code", json_integer(rc));
        json_object_set_new(o, "error", json_string(rt->error_string(rc)));
        json_object_set_new(o, "detail", json_string(act_rt_last_error()));
        return o;
    }
    json_object_set_new(o, "available", json_boolean(n > 0));
    json_object_set_new(o, "device_count", json_integer(n));
    json_object_set_new(o, "devices", devices_json(rt, n));
    return o;
}

static void print_bytes(size_t b)
{
    printf("%.1f GiB", (double)b / (1024.0 * 1024.0 * 1024.0));
}

static void print_text(const json_t *report)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(report, "backends"), i, b)
    {
        const char *name = json_string_value(json_object_get(b, "name"));
        if (!json_is_true(json_object_get(b, "available"))) {
            const char *err = json_string_value(json_object_get(b, "error"));
            const char *why = json_string_value(json_object_get(b, "detail"));
            printf("%-7s not available: %s%s%s%s\n", name, err ? err : "no device",
                   why && *why ? " (" : "", why && *why ? why : "", why && *why ? ")" : "");
            continue;
        }
        printf("%-7s %lld device(s)\n", name,
               (long long)json_integer_value(json_object_get(b, "device_count")));
        size_t j;
        json_t *d;
        json_array_foreach(json_object_get(b, "devices"), j, d)
        {
            printf("  device %lld: ", (long long)json_integer_value(json_object_get(d, "index")));
            json_t *total = json_object_get(d, "total_bytes");
            if (!total) {
                printf("memory unknown: %s\n", json_string_value(json_object_get(d, "error")));
                continue;
            }
            printf("total ");
            print_bytes((size_t)json_integer_value(total));
            json_t *free = json_object_get(d, "free_bytes");
            if (json_is_null(free)) {
                printf(", free unknown\n");
            } else {
                printf(", free ");
                print_bytes((size_t)json_integer_value(free));
                printf("\n");
            }
        }
    }
    printf("active: %s\n", json_string_value(json_object_get(report, "active")));
}

int act_cmd_rt(int argc, char **argv)
{
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            as_json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            act_help_print("rt", stdout);
            return 0;
        } else {
            return act_help_usage_error("rt", "unknown option '%s'", argv[i]);
        }
    }
    char err[512];
    if (act_config_check_env(err, sizeof(err)) != 0) { /* as run does: exit 2 */
        fprintf(stderr, "acceltrace: rt: %s\n", err);
        return 2;
    }
    json_t *backends = json_array();
    for (size_t i = 0; i < sizeof backend_names / sizeof backend_names[0]; i++)
        json_array_append_new(backends, backend_json(backend_names[i]));
    json_t *report = json_pack("{s:s, s:o}", "active", act_rt()->name, "backends", backends);
    if (as_json) {
        char *s = json_dumps(report, JSON_INDENT(2));
        if (s)
            puts(s);
        free(s);
    } else {
        print_text(report);
    }
    json_decref(report);
    return 0;
}
