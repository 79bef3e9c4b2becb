/*
 * source_traits.h -- what the timeline needs to know about the source of
 * a record (record.h, enum act_source), as one table: its name, the
 * category of its host calls, and how its device work is laid out and
 * joined. The builder, the device lanes and the early writer read these
 * traits and name no source (docs/architecture.md, "Adding a source").
 *
 * The table is in core, not filled in by each source at start-up: a trace
 * is built in the launcher (or another process: `acceltrace export`),
 * where no source ever ran; the source ids are the spool's contract, and
 * so are their traits.
 */
#ifndef ACT_CORE_SOURCE_TRAITS_H
#define ACT_CORE_SOURCE_TRAITS_H

#include <stdint.h>

#include "record.h"

/* A queue record's `properties` hold the vendor's stream id (CUDA, Ascend):
 * its ops' lanes are named and reported as streams. */
#define ACT_SRC_F_STREAM_IDS 0x1u
/* Bit 0 of a queue record's `properties` is the program's out-of-order
 * request (OpenCL's CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE). */
#define ACT_SRC_F_QUEUE_OOO_BIT 0x2u
/* A marker op is an annotation on the device timeline (mstx, CUDA's NVTX
 * ranges on the GPU), as kineto files them; else a synchronisation. */
#define ACT_SRC_F_MARKER_ANNOTATES 0x4u
/* Its launches are intercepted calls recorded before their ops, joined by
 * correlation as they are read: its device ops may be written while the
 * program runs (timeline/devstream.c). */
#define ACT_SRC_F_LAUNCH_STREAMED 0x8u
/* Its CLOCK records each map one described device's times (one offset per
 * device and process): the trace states them as "<name>_clock_<pid>_<device>"
 * metadata, the name in lower case (timeline/device_clock.c). */
#define ACT_SRC_F_DEVICE_CLOCK 0x10u

typedef struct act_source_traits {
    const char *name;    /* "OpenCL": names its device processes */
    const char *api_cat; /* the trace category of its host calls */
    uint32_t flags;      /* ACT_SRC_F_* */
} act_source_traits;

/* One row per enum act_source (source_traits.c); row 0 is what an unknown
 * or missing source gets. */
extern const act_source_traits act_source_traits_table[ACT_SOURCE_MAX];

static inline const act_source_traits *act_source_traits_of(uint32_t source)
{
    return &act_source_traits_table[source < ACT_SOURCE_MAX ? source : ACT_SOURCE_NONE];
}

#endif
