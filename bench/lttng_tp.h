/*
 * lttng_tp.h -- the LTTng-UST tracepoint provider used as the peer column
 * of bench_annotate: the same begin/end workload through LTTng-UST.
 *
 * The events carry what an acceltrace PUSH/POP record carries (a name
 * reference for the begin, nothing for the end; LTTng adds its own
 * timestamp), so the comparison is like for like: no string copied per
 * event on either side.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER actbench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(ACT_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ACT_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(actbench, push, LTTNG_UST_TP_ARGS(uint64_t, name_ref),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer_hex(uint64_t, name_ref,
                                                                           name_ref)))

LTTNG_UST_TRACEPOINT_EVENT(actbench, pop, LTTNG_UST_TP_ARGS(void), LTTNG_UST_TP_FIELDS())

#endif

#include <lttng/tracepoint-event.h>
