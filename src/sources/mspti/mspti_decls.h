/*
 * mspti_decls.h -- acceltrace's own declarations of the Ascend mspti C API
 * (MindStudio Profiling Tool Interface), written from the public mspti
 * documentation and the measured layouts in
 * shared/reference/torch_npu-behaviours.md §5 (not copied from a vendor
 * header). Only what the mspti source and its fake need is declared.
 *
 * The mspti source never links libmspti: it resolves these functions with
 * dlsym at start (mspti.c). The fake libmspti.so in tests/vendor implements
 * them against this same header, so both agree on every layout; the static
 * asserts below pin the sizes and offsets measured with the real headers.
 *
 * Records are `packed, aligned(8)`: 64-bit fields sit at offsets like 4 and
 * 12. Read them by member access (the compiler knows the struct is packed)
 * or memcpy, never through a `uint64_t *` to a member.
 */
#ifndef ACT_MSPTI_DECLS_H
#define ACT_MSPTI_DECLS_H

#include <stddef.h>
#include <stdint.h>

#define ACT_MSPTI_PACKED __attribute__((packed, aligned(8)))

typedef enum {
    MSPTI_SUCCESS = 0,
    MSPTI_ERROR_INVALID_PARAMETER = 1,
    MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 2,
    MSPTI_ERROR_MAX_LIMIT_REACHED = 3, /* also: no more records in the buffer */
    MSPTI_ERROR_DEVICE_OFFLINE = 4,
    MSPTI_ERROR_QUEUE_EMPTY = 5,
    MSPTI_ERROR_WITHOUT_LD_PRELOAD = 6,
    MSPTI_ERROR_INNER = 999,
    MSPTI_ERROR_FORCE_INT = 0x7fffffff
} msptiResult;

typedef enum {
    MSPTI_ACTIVITY_KIND_INVALID = 0,
    MSPTI_ACTIVITY_KIND_MARKER = 1,
    MSPTI_ACTIVITY_KIND_KERNEL = 2,
    MSPTI_ACTIVITY_KIND_API = 3,
    MSPTI_ACTIVITY_KIND_HCCL = 4,
    MSPTI_ACTIVITY_KIND_MEMORY = 5,
    MSPTI_ACTIVITY_KIND_MEMSET = 6,
    MSPTI_ACTIVITY_KIND_MEMCPY = 7,
    MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION = 8,
    MSPTI_ACTIVITY_KIND_COMMUNICATION = 9,
    MSPTI_ACTIVITY_KIND_ACL_API = 10,
    MSPTI_ACTIVITY_KIND_NODE_API = 11,
    MSPTI_ACTIVITY_KIND_RUNTIME_API = 12,
    MSPTI_ACTIVITY_KIND_COUNT,
    MSPTI_ACTIVITY_KIND_FORCE_INT = 0x7fffffff
} msptiActivityKind;

typedef enum {
    MSPTI_ACTIVITY_FLAG_NONE = 0,
    MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS = 1u << 0,
    MSPTI_ACTIVITY_FLAG_MARKER_START = 1u << 1,
    MSPTI_ACTIVITY_FLAG_MARKER_END = 1u << 2,
    MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS_WITH_DEVICE = 1u << 3,
    MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE = 1u << 4,
    MSPTI_ACTIVITY_FLAG_MARKER_END_WITH_DEVICE = 1u << 5
} msptiActivityFlag;

typedef enum {
    MSPTI_ACTIVITY_SOURCE_KIND_HOST = 0,
    MSPTI_ACTIVITY_SOURCE_KIND_DEVICE = 1
} msptiActivitySourceKind;

typedef enum {
    MSPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN = 0,
    MSPTI_ACTIVITY_MEMCPY_KIND_HTOH = 1,
    MSPTI_ACTIVITY_MEMCPY_KIND_HTOD = 2,
    MSPTI_ACTIVITY_MEMCPY_KIND_DTOH = 3,
    MSPTI_ACTIVITY_MEMCPY_KIND_DTOD = 4,
    MSPTI_ACTIVITY_MEMCPY_KIND_DEFAULT = 5
} msptiActivityMemcpyKind;

typedef enum {
    MSPTI_EXTERNAL_CORRELATION_KIND_INVALID = 0,
    MSPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN = 1,
    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 = 2,
    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 = 3,
    MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 = 4,
    MSPTI_EXTERNAL_CORRELATION_KIND_SIZE
} msptiExternalCorrelationKind;

#define MSPTI_INVALID_DEVICE_ID      0xFFFFFFFFu
#define MSPTI_INVALID_STREAM_ID      0xFFFFFFFFu
#define MSPTI_INVALID_CORRELATION_ID 0u

/* Where a device record ran. The vendor spells this pair out inline in
 * each record and in msptiObjectId; one name here keeps them short. Two
 * 32-bit fields: the same layout either way (the asserts below check it). */
typedef struct {
    uint32_t deviceId;
    uint32_t streamId;
} msptiDeviceStream;

/* Packed without aligned(8) here: inside the packed Marker it sits at
 * offset 28, which GCC would otherwise reject (-Wpacked-not-aligned). */
typedef union __attribute__((packed)) {
    struct {
        uint32_t processId;
        uint32_t threadId;
    } pt;
    msptiDeviceStream ds;
} msptiObjectId;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
} msptiActivity;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    msptiActivityFlag flag;
    msptiActivitySourceKind sourceKind;
    uint64_t timestamp; /* 0 = unknown */
    uint64_t id;        /* pairs a start marker with its end */
    msptiObjectId objectId;
    const char *name;   /* NULL for end markers */
    const char *domain; /* NULL = default domain */
} msptiActivityMarker;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    uint64_t start;
    uint64_t end;
    struct {
        uint32_t processId;
        uint32_t threadId;
    } pt;
    uint64_t correlationId;
    const char *name;
} msptiActivityApi;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    uint64_t start;
    uint64_t end;
    msptiDeviceStream ds;
    uint64_t correlationId;
    const char *type; /* e.g. "AI_CORE", "AI_CPU" */
    const char *name;
} msptiActivityKernel;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    uint64_t start;
    uint64_t end;
    msptiDeviceStream ds;
    double bandWidth; /* GB/s */
    const char *name;
    const char *commName;
} msptiActivityHccl;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    uint32_t value;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t streamId;
    uint64_t correlationId;
    uint8_t isAsync;
} msptiActivityMemset;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    msptiActivityMemcpyKind copyKind;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t streamId;
    uint64_t correlationId;
    uint8_t isAsync;
} msptiActivityMemcpy;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    msptiExternalCorrelationKind externalKind;
    uint64_t externalId;
    uint64_t correlationId;
} msptiActivityExternalCorrelation;

typedef struct ACT_MSPTI_PACKED {
    msptiActivityKind kind;
    uint32_t dataType; /* msptiCommunicationDataType */
    uint64_t count;
    msptiDeviceStream ds;
    uint64_t start;
    uint64_t end;
    const char *algType;
    const char *name;
    const char *commName;
    uint64_t correlationId;
} msptiActivityCommunication;

/* Sizes and offsets as measured with the vendor's headers (GCC, x86-64). */
_Static_assert(sizeof(msptiActivityMarker) == 56, "mspti Marker layout");
_Static_assert(sizeof(msptiActivityApi) == 48, "mspti Api layout");
_Static_assert(offsetof(msptiActivityApi, pt) == 20 &&
                   offsetof(msptiActivityApi, correlationId) == 28,
               "mspti Api offsets");
_Static_assert(sizeof(msptiActivityKernel) == 56, "mspti Kernel layout");
_Static_assert(offsetof(msptiActivityKernel, start) == 4 &&
                   offsetof(msptiActivityKernel, end) == 12 &&
                   offsetof(msptiActivityKernel, ds) == 20 &&
                   offsetof(msptiActivityKernel, correlationId) == 28 &&
                   offsetof(msptiActivityKernel, type) == 36 &&
                   offsetof(msptiActivityKernel, name) == 44,
               "mspti Kernel offsets");
_Static_assert(sizeof(msptiActivityHccl) == 56, "mspti Hccl layout");
_Static_assert(sizeof(msptiActivityMemset) == 56, "mspti Memset layout");
_Static_assert(sizeof(msptiActivityMemcpy) == 56, "mspti Memcpy layout");
_Static_assert(sizeof(msptiActivityExternalCorrelation) == 24 &&
                   offsetof(msptiActivityExternalCorrelation, externalId) == 8 &&
                   offsetof(msptiActivityExternalCorrelation, correlationId) == 16,
               "mspti ExternalCorrelation layout");
_Static_assert(sizeof(msptiActivityCommunication) == 72, "mspti Communication layout");
/* Where the device/stream pair sits in the other records (the same as
 * with the pair spelled out inline, as the vendor does). */
_Static_assert(sizeof(msptiDeviceStream) == 8 && offsetof(msptiActivityHccl, ds) == 20 &&
                   offsetof(msptiActivityCommunication, ds) == 16 &&
                   offsetof(msptiActivityMarker, objectId) == 28,
               "mspti device/stream placement");

/* ---- callback API ------------------------------------------------------ */

typedef enum {
    MSPTI_CB_DOMAIN_INVALID = 0,
    MSPTI_CB_DOMAIN_RUNTIME = 1,
    MSPTI_CB_DOMAIN_HCCL = 2,
    MSPTI_CB_DOMAIN_SIZE
} msptiCallbackDomain;

typedef enum { MSPTI_API_ENTER = 0, MSPTI_API_EXIT = 1 } msptiApiCallbackSite;

typedef uint32_t msptiCallbackId;

/* Not a measured layout (callback data is passed by pointer, never stored
 * in buffers); field order as documented. */
typedef struct {
    msptiApiCallbackSite callbackSite;
    const char *functionName;
    const void *functionParams;
    const void *functionReturnValue;
    const char *symbolName;
    uint64_t correlationId;
    uint64_t reserved1;
    uint64_t reserved2;
    uint64_t *correlationData;
} msptiCallbackData;

typedef void (*msptiCallbackFunc)(void *userdata, msptiCallbackDomain domain, msptiCallbackId cbid,
                                  const msptiCallbackData *cbdata);
typedef struct msptiSubscriber_st *msptiSubscriberHandle;

typedef void (*msptiBuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
                                                size_t *maxNumRecords);
typedef void (*msptiBuffersCallbackCompleteFunc)(uint8_t *buffer, size_t size, size_t validSize);

/* Function types, resolved with dlsym (names are the vendor's). */
typedef msptiResult (*msptiSubscribe_fn)(msptiSubscriberHandle *subscriber,
                                         msptiCallbackFunc callback, void *userdata);
typedef msptiResult (*msptiUnsubscribe_fn)(msptiSubscriberHandle subscriber);
typedef msptiResult (*msptiEnableDomain_fn)(uint32_t enable, msptiSubscriberHandle subscriber,
                                            msptiCallbackDomain domain);
typedef msptiResult (*msptiActivityRegisterCallbacks_fn)(msptiBuffersCallbackRequestFunc request,
                                                         msptiBuffersCallbackCompleteFunc complete);
typedef msptiResult (*msptiActivityEnable_fn)(msptiActivityKind kind);
typedef msptiResult (*msptiActivityDisable_fn)(msptiActivityKind kind);
typedef msptiResult (*msptiActivityGetNextRecord_fn)(uint8_t *buffer, size_t validBufferSizeBytes,
                                                     msptiActivity **record);
typedef msptiResult (*msptiActivityFlushAll_fn)(uint32_t flag);
typedef msptiResult (*msptiActivityPushExternalCorrelationId_fn)(msptiExternalCorrelationKind kind,
                                                                 uint64_t id);
typedef msptiResult (*msptiActivityPopExternalCorrelationId_fn)(msptiExternalCorrelationKind kind,
                                                                uint64_t *lastId);

#endif
