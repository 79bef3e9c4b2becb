/*
 * bench_annotate_call.c -- the push/pop loop of bench_annotate.c through
 * the exported functions themselves, as dlsym/ctypes callers reach them:
 * compiled without acceltrace.h's inline wrappers (ACT_NO_INLINE).
 */
#define ACT_NO_INLINE 1
#include "acceltrace.h"

void bench_body_act_call(long n, const char *name);

__attribute__((noinline)) void bench_body_act_call(long n, const char *name)
{
    for (long i = 0; i < n; i++) {
        act_range_push(name);
        act_range_pop();
    }
}
