/*
 * source_traits.c -- the traits of every source a spool can name
 * (source_traits.h). A new source is a row here beside its id in
 * record.h; nothing in timeline/ or writers/ changes.
 */
#include "source_traits.h"

const act_source_traits act_source_traits_table[ACT_SOURCE_MAX] = {
    [ACT_SOURCE_NONE] = {"device", "runtime", 0},
    [ACT_SOURCE_OPENCL] = {"OpenCL", "opencl_runtime",
                           ACT_SRC_F_QUEUE_OOO_BIT | ACT_SRC_F_LAUNCH_STREAMED |
                               ACT_SRC_F_DEVICE_CLOCK},
    [ACT_SOURCE_CUPTI] = {"CUDA", "cuda_runtime",
                          ACT_SRC_F_STREAM_IDS | ACT_SRC_F_MARKER_ANNOTATES},
    [ACT_SOURCE_MSPTI] = {"Ascend", "privateuse1_runtime",
                          ACT_SRC_F_STREAM_IDS | ACT_SRC_F_MARKER_ANNOTATES},
    [ACT_SOURCE_NVTX] = {"NVTX", "user_annotation", 0},
    [ACT_SOURCE_USER] = {"user", "cpu_op", 0},
};
