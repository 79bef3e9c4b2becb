/*
 * errors.c -- what the OpenCL source records about a failed call: the
 * error's name (CL_INVALID_WORK_GROUP_SIZE) as an "error" arg on the API
 * slice just recorded, and an instant event for a command whose event
 * completed with a negative execution status. The builder marks events
 * that carry an "error" arg (colour), the summary counts them by name.
 */
#include <stdio.h>

#include "cl_source.h"

const char *act_cl_error_name(cl_int rc)
{
    switch (rc) {
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -7: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case -8: return "CL_MEM_COPY_OVERLAP";
    case -9: return "CL_IMAGE_FORMAT_MISMATCH";
    case -10: return "CL_IMAGE_FORMAT_NOT_SUPPORTED";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -12: return "CL_MAP_FAILURE";
    case -13: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case -14: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case -15: return "CL_COMPILE_PROGRAM_FAILURE";
    case -16: return "CL_LINKER_NOT_AVAILABLE";
    case -17: return "CL_LINK_PROGRAM_FAILURE";
    case -18: return "CL_DEVICE_PARTITION_FAILED";
    case -19: return "CL_KERNEL_ARG_INFO_NOT_AVAILABLE";
    case -30: return "CL_INVALID_VALUE";
    case -31: return "CL_INVALID_DEVICE_TYPE";
    case -32: return "CL_INVALID_PLATFORM";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -35: return "CL_INVALID_QUEUE_PROPERTIES";
    case -36: return "CL_INVALID_COMMAND_QUEUE";
    case -37: return "CL_INVALID_HOST_PTR";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -39: return "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR";
    case -40: return "CL_INVALID_IMAGE_SIZE";
    case -41: return "CL_INVALID_SAMPLER";
    case -42: return "CL_INVALID_BINARY";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -47: return "CL_INVALID_KERNEL_DEFINITION";
    case -48: return "CL_INVALID_KERNEL";
    case -49: return "CL_INVALID_ARG_INDEX";
    case -50: return "CL_INVALID_ARG_VALUE";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -53: return "CL_INVALID_WORK_DIMENSION";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -56: return "CL_INVALID_GLOBAL_OFFSET";
    case -57: return "CL_INVALID_EVENT_WAIT_LIST";
    case -58: return "CL_INVALID_EVENT";
    case -59: return "CL_INVALID_OPERATION";
    case -60: return "CL_INVALID_GL_OBJECT";
    case -61: return "CL_INVALID_BUFFER_SIZE";
    case -62: return "CL_INVALID_MIP_LEVEL";
    case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -64: return "CL_INVALID_PROPERTY";
    case -65: return "CL_INVALID_IMAGE_DESCRIPTOR";
    case -66: return "CL_INVALID_COMPILER_OPTIONS";
    case -67: return "CL_INVALID_LINKER_OPTIONS";
    case -68: return "CL_INVALID_DEVICE_PARTITION_COUNT";
    case -69: return "CL_INVALID_PIPE_SIZE";
    case -70: return "CL_INVALID_DEVICE_QUEUE";
    case -71: return "CL_INVALID_SPEC_ID";
    case -72: return "CL_MAX_SIZE_RESTRICTION_EXCEEDED";
    case -1138: return "CL_INVALID_COMMAND_BUFFER_KHR";
    case -1139: return "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR";
    case -1140: return "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR";
    case -1141: return "CL_INVALID_MUTABLE_COMMAND_KHR";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    case -1121: return "CL_CONTEXT_TERMINATED_KHR";
    case -1057: return "CL_DEVICE_PARTITION_FAILED_EXT";
    case -1058: return "CL_INVALID_PARTITION_COUNT_EXT";
    case -1059: return "CL_INVALID_PARTITION_NAME_EXT";
    case -1142: return "CL_INVALID_SEMAPHORE_KHR";
    case -1108: return "CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM";
    case -1094: return "CL_INVALID_ACCELERATOR_INTEL";
    case -1095: return "CL_INVALID_ACCELERATOR_TYPE_INTEL";
    case -1096: return "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL";
    case -1097: return "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL";
    default: return NULL;
    }
}

void act_cl_error_arg(cl_int rc)
{
    const char *name = act_cl_error_name(rc);
    char buf[32];
    if (!name) {
        snprintf(buf, sizeof buf, "CL error %d", (int)rc);
        name = buf;
    }
    act_rec_arg_emit("error", ACT_RECARG_STR, 0, name);
}

void act_cl_failed_command(const char *name, uint64_t corr, cl_int status)
{
    /* Recorded whatever the capture window says now: its launch was
     * recorded (the same rule as the device op it stands for). */
    char label[160];
    snprintf(label, sizeof label, "command failed: %s", name ? name : "?");
    uint32_t id = act_str_intern_cstr(label);
    act_rec_ts *r = act_rec_reserve(ACT_REC_MARK, sizeof *r);
    if (!r)
        return;
    r->h.aux = id;
    r->ts = act_clock_now();
    act_rec_commit();
    /* -1 is what runtimes use for "failed" (PoCL's CL_FAILED), not
     * CL_DEVICE_NOT_FOUND; other statuses are error codes. */
    if (status == -1)
        act_rec_arg_emit("error", ACT_RECARG_STR, 0, "execution status -1");
    else
        act_cl_error_arg(status);
    act_rec_arg_emit("execution status", ACT_RECARG_I64, (uint64_t)(int64_t)status, NULL);
    act_rec_arg_emit("correlation", ACT_RECARG_U64, corr, NULL);
}
