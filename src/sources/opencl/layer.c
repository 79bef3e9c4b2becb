/*
 * layer.c -- the ICD-loader layer entry points (OPENCL_LAYERS=/abs/path/
 * libacceltrace.so). Debian's ocl-icd 2.3.1 and the Khronos loader dlopen
 * the library, check clGetLayerInfo(CL_LAYER_API_VERSION) and call
 * clInitLayer with the table of the next stage; we hand back our table.
 *
 * clInitLayer starts nothing: it copies the target table into act_cl_next
 * and puts our wrappers into the table it returns (every entry, because a
 * loader may copy the table now, before any hook is applied; an unarmed
 * wrapper forwards straight to the target). Entries we do not wrap are the
 * target's own, which both loaders also do for NULL entries.
 */
#include <string.h>

#include "cl_source.h"

extern struct _cl_icd_dispatch act_cl_layer_table;

ACT_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param, size_t size,
                                                          void *value, size_t *size_ret)
{
    static const char name[] = "acceltrace";
    const void *src;
    size_t len;
    cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    switch (param) {
    case CL_LAYER_API_VERSION:
        src = &version;
        len = sizeof version;
        break;
    case CL_LAYER_NAME:
        src = name;
        len = sizeof name;
        break;
    default: return CL_INVALID_VALUE;
    }
    if (value) {
        if (size < len)
            return CL_INVALID_VALUE;
        memcpy(value, src, len);
    }
    if (size_ret)
        *size_ret = len;
    return CL_SUCCESS;
}

ACT_EXPORT CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                       const cl_icd_dispatch *target,
                                                       cl_uint *num_entries_ret,
                                                       const cl_icd_dispatch **layer_ret)
{
    const cl_uint ours = (cl_uint)(sizeof(struct _cl_icd_dispatch) / sizeof(void *));
    if (!target || !num_entries_ret || !layer_ret)
        return CL_INVALID_VALUE;
    cl_uint n = num_entries < ours ? num_entries : ours;
    static struct _cl_icd_dispatch passthrough;
    struct _cl_icd_dispatch *table = &passthrough;
    if (act_cl_mode_claim(ACT_CL_MODE_LAYER)) {
        /* First (and normally only) initialisation in this process. */
        memset(&act_cl_next, 0, sizeof act_cl_next);
        /* The dispatch table is an array of n function pointers. */
        // cppcheck-suppress pointerSize
        memcpy(&act_cl_next, target, n * sizeof(void *));
        act_cl_table_fill(&act_cl_layer_table, target, n); /* hooks may apply meanwhile */
        act_cl_install_wrappers(&act_cl_layer_table);
        table = &act_cl_layer_table;
    } else {
        /* The preload shim already traces this process: stay transparent. */
        // cppcheck-suppress pointerSize
        memcpy(&passthrough, target, n * sizeof(void *));
    }
    *num_entries_ret = n;
    *layer_ret = table;
    return CL_SUCCESS;
}
