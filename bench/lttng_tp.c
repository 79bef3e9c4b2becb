/*
 * lttng_tp.c -- instantiates the LTTng-UST probes of lttng_tp.h in the
 * benchmark binary (built only when liblttng-ust-dev is installed).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
