/*
 * record.h -- the on-disk spool format: the one contract between the
 * recorder (which writes it, from many threads, without locks) and the
 * timeline reader (which reads it, possibly after the writer crashed).
 *
 * A spool file belongs to one process. It is a fixed-size, sparse, mmap'ed
 * file: a 4 KiB header followed by equal-sized chunks. The space of the
 * header and of every chunk counted in `chunks_used` is reserved
 * (posix_fallocate) before it is written: a reader may touch those pages
 * and no others (on a full file system, touching a hole faults). A thread owns one
 * chunk at a time and appends 8-byte-aligned records to it; after each
 * record it publishes the chunk's fill count with a release store. A reader
 * trusts only the published prefix of each chunk, so a crash at any instant
 * leaves a readable file.
 *
 * Chunks are recycled when a thread exits, so one chunk can hold the
 * records of several threads in turn. Every run of records that belongs to
 * one thread therefore starts with a SEGMENT record carrying the thread's
 * serial number and a global sequence number; the reader orders segments by
 * that sequence and keeps per-thread state (string table, range stack) by
 * thread serial. Thread serials are never reused within a process (OS tids
 * are), which is why records name threads by serial.
 *
 * Every record starts with act_rec_hdr. `size8` is the full record size in
 * units of 8 bytes (so one record can be up to 512 KiB, enough for a 64 KiB
 * string with room to spare); `aux` is a per-kind small field (usually a
 * string id). A record never straddles chunks. Strings are interned per thread: a STRING record
 * defines id -> bytes for the thread of its segment, before the first record that uses the id.
 * String id 0 means "no string".
 *
 * Segments and readers (outside ring mode):
 *
 *  S1. Order by close: outside ring mode a SEGMENT record is written with
 *      seq = ACT_SEQ_OPEN, and its thread stores the next global seq in it
 *      (a release store, after its last record there was published) when
 *      the segment ends: when the thread starts another one in the same
 *      chunk (a split: the new SEGMENT record is written first), leaves
 *      the chunk, or ends (a thread still recording when the spool closes
 *      leaves its last one open). Its records are then final: up to the next
 *      SEGMENT record in the chunk, or the chunk's fill. A reader orders
 *      segments by seq, those still open (a process that crashed, or a
 *      thread that never ended its last one) last, by chunk and offset;
 *      a thread's records are the concatenation of its segments in that
 *      order. The recorder splits every ACT_SEG_SPLIT_BYTES (recorder_int.h,
 *      4 KiB), so a live reader, which reads closed segments only, in seq
 *      order, has each thread's records in 4 KiB steps, and a thread that
 *      recorded and went idle holds back nothing but its own last records
 *      (when the seq was taken at the segment's start, an idle thread's
 *      open segment held every later one back until the exit).
 *      In ring mode the seq is taken when the segment starts and segments
 *      are not split (R1: one per chunk).
 *  S2. Reuse: a chunk a thread leaves with more than ACT_CHUNK_REUSE_MIN
 *      bytes free may be handed to another thread (a new SEGMENT record
 *      first); one with that many or fewer is never written again. A live
 *      reader stops looking at such a chunk once its last segment is read.
 *
 * Timestamps are nanoseconds on the host timeline clock named in the header
 * (CLOCK_MONOTONIC_RAW unless `clock_kind` says otherwise).
 *
 * Ring mode (flight recorder, ACT_SPOOL_F_RING): the spool keeps only the
 * most recent `ring_chunks` chunks; when they are all used, a thread that
 * needs a chunk takes the oldest one no thread owns and writes over it
 * (if the recorder's helper is reading that one ahead, the thread waits
 * for it, up to 20 ms, so that the kept chunks are the newest).
 * Numbered invariants a reader relies on:
 *
 *  R1. Order: every chunk begins with one SEGMENT record whose `seq` is
 *      global; a recycled chunk gets a new, higher seq, so ordering the
 *      segments by seq orders the kept chunks oldest first.
 *  R2. Consistency (a seqlock): act_chunk_header.gen is even while the
 *      chunk's published prefix is valid. A writer that recycles a chunk
 *      makes gen odd (an acquire-release read-modify-write) before it
 *      touches anything else in the chunk, resets `used`, writes the new
 *      segment's first records, publishes `used`, and only then stores
 *      gen + 2 (release). A reader of a live spool loads gen (acquire),
 *      copies `used` bytes with acquire loads (none moves after what
 *      follows; no fence, which ThreadSanitizer does not support), loads
 *      gen again, and keeps the copy only if both loads are
 *      the same even value; otherwise the chunk was recycled under it (its
 *      content is newer than what the reader wanted; retry or skip it).
 *      Outside ring mode gen stays 0.
 *  R3. Self-contained chunks: in ring mode every string a record uses is
 *      defined in the same chunk (the thread's string cache is invalidated
 *      whenever it takes a chunk, and the strings interned just before the
 *      chunk ran out are defined again, with the same ids, at the top of
 *      the new one). Ids are still never reused within a thread.
 *  R4. Thread state: the THREAD record written after each SEGMENT is an
 *      act_rec_thread_ring carrying the thread's range state at the start
 *      of the segment (the sequence number of its last RANGE_PUSH, and the
 *      ranges still open with their names), so a reader that lost the
 *      thread's earlier chunks numbers the pushes it sees correctly and
 *      closes ranges that began before the kept window.
 *      It also says how many bytes the thread published in its earlier
 *      chunks (`before`): a reader whose copy of the ring is torn (a chunk
 *      copied before its thread filled it, or an old copy of a chunk that
 *      was recycled under the reader along with the one after it) finds
 *      the hole, because a thread's kept segments must add up, and leaves
 *      out what precedes it (counted as overwritten): a thread's kept
 *      window is always contiguous, so no pop is kept whose push is lost.
 *  R5. Definitions survive: DEVICE, QUEUE, METADATA, CLOCK and tid-naming
 *      THREAD records (aux 0) found in a chunk being recycled, and the last
 *      CAPTURE record in it, are written again, with their strings, into
 *      the new chunk (timestamps unchanged), so the trace still names
 *      devices, queues and threads and knows the capture window's state
 *      although their records were older than the window. What does not
 *      fit is counted in `dropped`.
 *  R6. Nothing lost silently: the header counts the chunks, bytes and
 *      records overwritten (chunks_overwritten, bytes_overwritten,
 *      records_overwritten); they are recycled by design, not dropped.
 *
 * Changing a layout means bumping ACT_SPOOL_VERSION. Fields appended in the
 * header's spare room, records grown at their end and the chunk header's
 * gen (zero before) are read as absent by older readers.
 */
#ifndef ACT_RECORD_H
#define ACT_RECORD_H

#include <stdint.h>

#define ACT_SPOOL_MAGIC       0x4c4f4f5053544341ULL /* "ACTSPOOL" little-endian */
#define ACT_SPOOL_VERSION     2u
#define ACT_CHUNK_MAGIC       0x4b4e4843u /* "CHNK" */
#define ACT_SPOOL_HEADER_SIZE 4096u
#define ACT_SPOOL_CMDLINE_MAX 2048u

/* Record kinds. Values are part of the file format. */
enum act_rec_kind {
    ACT_REC_PAD = 0,         /* filler; skip size8 * 8 bytes */
    ACT_REC_SEGMENT = 1,     /* act_rec_segment: records below belong to a thread */
    ACT_REC_THREAD = 2,      /* act_rec_thread: serial -> OS tid, name */
    ACT_REC_STRING = 3,      /* act_rec_string: interned string for this thread */
    ACT_REC_RANGE_PUSH = 4,  /* act_rec_ts: nested range opens (aux = name) */
    ACT_REC_RANGE_POP = 5,   /* act_rec_ts: innermost range closes */
    ACT_REC_RANGE_START = 6, /* act_rec_range_id: cross-thread range begins */
    ACT_REC_RANGE_END = 7,   /* act_rec_range_id: cross-thread range ends */
    ACT_REC_MARK = 8,        /* act_rec_ts: instant (aux = name) */
    ACT_REC_COUNTER = 9,     /* act_rec_counter (aux = name) */
    ACT_REC_API = 10,        /* act_rec_api: intercepted host call */
    ACT_REC_DEVICE_OP = 11,  /* act_rec_device_op: work executed on a device */
    ACT_REC_DEVICE = 12,     /* act_rec_device: device description */
    ACT_REC_QUEUE = 13,      /* act_rec_queue: queue/stream description */
    ACT_REC_METADATA = 14,   /* act_rec_metadata: user key/value */
    ACT_REC_CLOCK = 15,      /* act_rec_clock: device->host clock mapping */
    ACT_REC_ERROR = 16,      /* act_rec_ts: a source error line (aux = message) */
    ACT_REC_CAPTURE = 17,    /* act_rec_ts: capture window on (aux=1) / off (aux=0) */
    ACT_REC_EXTCORR = 18,    /* act_rec_extcorr: vendor correlation -> external id */
    ACT_REC_ARG = 19,        /* act_rec_arg: one argument of this thread's most recent
                                RANGE_PUSH / RANGE_START / MARK / API record (aux = key) */
    ACT_REC_KIND_MAX = 20
};

/* Device operation kinds (act_rec_device_op.op). */
enum act_op_kind {
    ACT_OP_KERNEL = 0,
    ACT_OP_MEMCPY_HTOD = 1,
    ACT_OP_MEMCPY_DTOH = 2,
    ACT_OP_MEMCPY_DTOD = 3,
    ACT_OP_MEMSET = 4,
    ACT_OP_MAP = 5,
    ACT_OP_UNMAP = 6,
    ACT_OP_MARKER = 7,
    ACT_OP_BARRIER = 8,
    ACT_OP_COLLECTIVE = 9,
    ACT_OP_SYNC = 10,
    ACT_OP_OTHER = 11,
    ACT_OP_KIND_MAX = 12
};

/* Which clock the timestamps of a spool use. */
enum act_clock_kind {
    ACT_CLOCK_MONOTONIC_RAW = 0,
    ACT_CLOCK_TSC = 1 /* raw TSC; convert with the header's calibration pairs */
};

typedef struct act_rec_hdr {
    uint16_t kind;
    uint16_t size8; /* whole record size in 8-byte units (bytes = size8 * 8) */
    uint32_t aux;
} act_rec_hdr;

typedef struct act_rec_segment {
    act_rec_hdr h; /* aux = thread serial */
    uint64_t seq;  /* global order of segments within the spool (S1: atomic) */
} act_rec_segment;

/* S1: the seq of a segment not ended yet (outside ring mode). */
#define ACT_SEQ_OPEN UINT64_MAX

/* aux = 0: not this thread's announcement but a name for the OS thread
 * `tid` given by the program (nvtxNameOsThread); the builder names the lane
 * of that tid. */
typedef struct act_rec_thread {
    act_rec_hdr h; /* aux = thread serial (0: see above) */
    uint32_t tid;  /* OS thread id */
    uint32_t name; /* string id of the thread name, 0 if none */
} act_rec_thread;

/* Ring mode (R4): the THREAD record after each SEGMENT. */
#define ACT_RING_OPEN_MAX 32u /* open ranges listed; deeper ones are not */
typedef struct act_rec_ring_open {
    uint32_t seq;  /* the range's push sequence number in its thread */
    uint32_t name; /* string id, defined earlier in this segment */
} act_rec_ring_open;

typedef struct act_rec_thread_ring {
    act_rec_thread t;   /* h.aux = thread serial, never 0 */
    uint32_t range_seq; /* sequence number of the thread's last RANGE_PUSH before this segment */
    uint32_t n_open;    /* entries in open[], outermost first */
    uint32_t depth;     /* ranges open at the segment's start (may exceed n_open) */
    uint32_t before;    /* 1 + bytes (mod 2^32) the thread published in its earlier
                         * chunks of this spool; 0: not recorded (an older writer) */
    /* act_rec_ring_open open[n_open]; */
} act_rec_thread_ring;

typedef struct act_rec_string {
    act_rec_hdr h; /* aux = string id */
    uint32_t len;  /* bytes that follow (no terminator), padded to 8 */
    uint32_t pad;
    /* char bytes[len]; */
} act_rec_string;

/* PUSH, POP, MARK, ERROR, CAPTURE.
 *
 * CAPTURE: the capture window opened (aux=1) or closed (aux=0) at ts. A
 * spool whose header has ACT_SPOOL_F_CAPTURE_API starts with the window
 * closed, otherwise open. Records outside the window are not written (they
 * are counted in outside_window[kind]), with two deliberate exceptions the
 * builder must keep: a RANGE_POP/RANGE_END whose push/start was recorded
 * inside, and a DEVICE_OP whose launch was recorded inside. */
typedef struct act_rec_ts {
    act_rec_hdr h;
    uint64_t ts;
} act_rec_ts;

typedef struct act_rec_range_id {
    act_rec_hdr h; /* aux = name (START), 0 (END) */
    uint64_t ts;
    uint64_t id; /* process-unique, from act_range_start(); never has bit 63 or 62 set */
} act_rec_range_id;

/*
 * An argument of the most recent RANGE_PUSH, RANGE_START, MARK or API record of
 * the same thread (STRING records may come in between): NVTX payloads,
 * categories, domains. The builder puts it in that event's "args" as key -> value.
 */
enum act_recarg_type {
    ACT_RECARG_U64 = 0,
    ACT_RECARG_I64 = 1,
    ACT_RECARG_F64 = 2,
    ACT_RECARG_STR = 3,     /* v.u is a string id of this thread */
    ACT_RECARG_U64V = 4,    /* v.u = n <= ACT_RECARG_U64V_MAX: n uint64_t follow the record
                              (size8 covers them), written as a JSON array */
    ACT_RECARG_NULL = 5,    /* no value (JSON null): "not given" */
    ACT_RECARG_LAUNCH = 6,  /* a kernel launch's geometry, one record for five args (cheap
                              to write): like U64V, the values are [dim, flags (bit 0: local
                              size given, bit 1: offset given), global[dim], local[dim] if
                              given, offset[dim] if given, argument sizes...]; the key is
                              unused. Written as "work dim", "global work size",
                              "local work size", "global work offset" (null when not
                              given) and "arg sizes". */
    ACT_RECARG_CATEGORY = 7 /* v.u: what the RANGE_PUSH just written is (enum
                               act_range_category): no arg of its own, the key unused */
};
/* ACT_RECARG_CATEGORY's values: a range is a user annotation unless its
 * push is followed by a CATEGORY arg naming one of these. */
enum act_range_category {
    ACT_RANGE_CAT_USER = 0, /* user_annotation (the default) */
    ACT_RANGE_CAT_OP = 1    /* cpu_op: an operator (torch's aten ops under run) */
};
#define ACT_RECARG_U64V_MAX 256u

/* act_rec_arg.pad: 0, or one of these (--python-backtrace, a call made
 * with the GIL released, core/pystack.c P4). HOLD: a stand-in value; the
 * builder keeps the API calls of the thread from the first one so marked
 * until an arg of the same key with BACK comes on the thread (or the
 * thread's records end). BACK: attaches to nothing itself; its value
 * replaces every held one of its thread, and the calls go on. */
#define ACT_RECARG_F_HOLD 0x1u
#define ACT_RECARG_F_BACK 0x2u

typedef struct act_rec_arg {
    act_rec_hdr h; /* aux = key string id */
    uint32_t type; /* enum act_recarg_type */
    uint32_t pad;  /* ACT_RECARG_F_* (0 in any other arg) */
    union {
        uint64_t u;
        int64_t i;
        double f;
    } v;
} act_rec_arg;

typedef struct act_rec_counter {
    act_rec_hdr h; /* aux = name */
    uint64_t ts;
    double value;
} act_rec_counter;

/*
 * An intercepted host API call. `corr` is the process-unique correlation
 * id shared with the device op it launched (0 if it launched none).
 * `ext` names the innermost open range on this thread at the time of the
 * call: (thread serial << 32) | range sequence number within that thread
 * (0 = no open range). The builder turns it into the range's External id.
 * The range sequence number of a RANGE_PUSH is its 1-based position among
 * the RANGE_PUSH records of that thread in this spool: pushes that were not
 * written (outside the capture window, dropped) take no number.
 */
typedef struct act_rec_api {
    act_rec_hdr h; /* aux = name (e.g. "clEnqueueNDRangeKernel") */
    uint64_t start;
    uint64_t end;
    uint64_t corr;
    uint64_t ext;
    int32_t result;  /* the call's return value (vendor error code) */
    uint32_t source; /* enum act_source */
} act_rec_api;

/* Which source produced a record (api.source, device.source). */
enum act_source {
    ACT_SOURCE_NONE = 0,
    ACT_SOURCE_OPENCL = 1,
    ACT_SOURCE_CUPTI = 2,
    ACT_SOURCE_MSPTI = 3,
    ACT_SOURCE_NVTX = 4,
    ACT_SOURCE_USER = 5,
    ACT_SOURCE_MAX = 6
};

#define ACT_OPF_NO_TIMES 0x1u /* command failed or profiling unavailable */
#define ACT_OPF_OOO      0x2u /* queue was out of order */

/*
 * Work a device executed. Recorded by whatever thread learns about it
 * (an OpenCL completion callback, a vendor buffer-completion thread).
 * Timestamps are already mapped onto the host timeline clock by the
 * source (which knows its device's clock); 0 = unknown.
 */
typedef struct act_rec_device_op {
    act_rec_hdr h;   /* aux = name */
    uint8_t op;      /* enum act_op_kind */
    uint8_t source;  /* enum act_source */
    uint16_t flags;  /* ACT_OPF_* */
    int32_t status;  /* vendor completion status (0 = ok) */
    uint64_t device; /* device handle/id, matches act_rec_device.device */
    uint64_t queue;  /* queue/stream handle/id, matches act_rec_queue.queue */
    uint64_t queued;
    uint64_t submit;
    uint64_t start;
    uint64_t end;
    uint64_t corr;     /* correlation id of the launching act_rec_api (0 = none) */
    uint64_t ext;      /* external id when the source knows it directly (0 = via corr) */
    uint64_t bytes;    /* transfers, fills */
    uint64_t gsize[3]; /* kernels: global work size */
    uint64_t lsize[3]; /* kernels: local work size (0 = runtime's choice) */
    uint32_t detail;   /* string id: kernel type (an OpenCL kernel's program), comm name, ... */
    uint32_t pad;
} act_rec_device_op;

/* act_rec_device.index of a lane that belongs to no device (e.g. the
 * host-side markers of a vendor's activity API): labelled without a
 * device number. */
#define ACT_DEVICE_INDEX_NONE 0xffffffu

typedef struct act_rec_device {
    act_rec_hdr h; /* aux = name string id */
    uint64_t device;
    uint32_t vendor; /* string id, e.g. "OpenCL" */
    uint32_t source; /* enum act_source */
    uint32_t index;  /* device ordinal within its source */
    uint32_t pad;
} act_rec_device;

typedef struct act_rec_queue {
    act_rec_hdr h; /* aux = label string id (0 = none) */
    uint64_t queue;
    uint64_t device;
    uint64_t properties; /* vendor queue properties as the app asked */
} act_rec_queue;

typedef struct act_rec_metadata {
    act_rec_hdr h;    /* aux = key string id */
    uint32_t value;   /* string id */
    uint32_t is_json; /* ACT_META_* flags; 1 alone: value is validated JSON text */
} act_rec_metadata;

/* act_rec_metadata.is_json flags. */
#define ACT_META_JSON     1u /* the value is validated JSON text */
#define ACT_META_AUTO     2u /* found by acceltrace (launcher variables), not set by the user */
#define ACT_META_INTERNAL 4u /* for the tool only (e.g. the process's trace name); not written */

/* How a device's timestamps were mapped onto the host clock. */
/* A vendor activity source writes one when a capture cycle starts and one
 * when it stops (method "<source> ... at stop"), with the same device key:
 * the builder derives the trace's "<source>_clock" metadata from the pair
 * (src/timeline/vendor_clock.c). */
typedef struct act_rec_clock {
    act_rec_hdr h; /* aux = method string id ("monotonic_raw", ...) */
    uint64_t device;
    int64_t offset_ns; /* host = device + offset */
    int64_t error_ns;  /* estimated bound of the mapping error */
} act_rec_clock;

typedef struct act_rec_extcorr {
    act_rec_hdr h; /* aux = enum act_source */
    uint64_t corr; /* vendor correlation id (as recorded in device ops) */
    uint64_t ext;  /* acceltrace external id */
} act_rec_extcorr;

/*
 * Header at offset 0 of the spool file. Counters are updated atomically by
 * the recorder while the program runs (they live in the shared mapping, so
 * they survive a crash).
 */
#define ACT_SPOOL_F_SEALED      0x1u /* the process ended normally and flushed */
#define ACT_SPOOL_F_CAPTURE_API 0x2u /* capture started off (waiting for act_start) */
#define ACT_SPOOL_F_RING        0x4u /* ring mode: chunks are recycled (see R1-R6 above) */

typedef struct act_spool_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;
    uint64_t capacity;   /* file size in bytes as made; a sealed spool (not a ring)
                            may be cut to header_size + chunks_used * chunk_size
                            once kept (act_spool_dir_shrink) */
    uint32_t chunk_size; /* bytes per chunk, chunk header included */
    uint32_t chunk_count;
    uint32_t pid;
    uint32_t ppid;
    uint32_t clock_kind; /* enum act_clock_kind */
    uint32_t flags;      /* ACT_SPOOL_F_*, written with atomic ops */
    /* Calibration: (ts, monotonic_raw ns) pairs, for ACT_CLOCK_TSC.
     * With ACT_CLOCK_MONOTONIC_RAW (what the recorder writes today) they
     * are informational: the recorder reads the TSC on its hot path but
     * converts to CLOCK_MONOTONIC_RAW ns itself (recorder/fast_clock.c),
     * so readers convert nothing. [0] is the pair the TSC rate was first
     * measured from, [1] a pair taken at close, both written at close; 0
     * when the TSC was not used (no invariant TSC, a clocksource other
     * than "tsc", or no annotation recorded) or the process died first. */
    uint64_t calib_ts[2];
    uint64_t calib_ns[2];
    uint64_t start_realtime_ns;                /* wall clock at spool creation */
    uint64_t start_ns;                         /* timeline clock at spool creation */
    uint64_t chunks_used;                      /* atomic: chunks handed out so far */
    uint64_t segment_seq;                      /* atomic: next segment sequence number */
    uint64_t dropped[ACT_REC_KIND_MAX];        /* atomic: records lost for lack of space */
    uint64_t outside_window[ACT_REC_KIND_MAX]; /* atomic: records outside capture */
    uint64_t callbacks_pending;                /* atomic: device callbacks not yet arrived */
    uint64_t callbacks_lost;                   /* callbacks that never arrived by the bound */
    uint64_t unbalanced_pops;                  /* atomic */
    uint64_t strings_truncated;                /* atomic: strings cut to fit one chunk */
    char cmdline[ACT_SPOOL_CMDLINE_MAX];       /* argv joined by NUL, double-NUL ended */
    /* Appended in the header's spare room (zero in older spools). */
    uint32_t space_errno; /* errno of the first failed reservation of spool space
                             (ENOSPC: the file system is full), 0 = none */
    uint32_t pad1;
    uint64_t invalid_range_ends; /* atomic: act_range_end() ids act_range_start() never gave */
    /* Ring mode (ACT_SPOOL_F_RING); zero otherwise. */
    uint64_t ring_size;   /* bytes the ring was asked to keep */
    uint32_t ring_chunks; /* chunks the ring cycles through */
    uint32_t pad2;
    uint64_t chunks_overwritten;  /* atomic: chunks recycled */
    uint64_t bytes_overwritten;   /* atomic: published bytes of recycled chunks */
    uint64_t records_overwritten; /* atomic: records in recycled chunks (SEGMENT, PAD excluded) */
} act_spool_header;

/* S2: a chunk left with at most this many bytes free is never reused. */
#define ACT_CHUNK_REUSE_MIN 64

/* Header of every chunk. `used` counts bytes after this header. */
typedef struct act_chunk_header {
    uint32_t magic;
    uint32_t index;
    uint32_t used; /* published fill, written with release stores */
    uint32_t gen;  /* ring mode seqlock (R2): odd while being recycled; 0 outside ring mode */
} act_chunk_header;

_Static_assert(sizeof(act_rec_hdr) == 8, "record header is 8 bytes");
_Static_assert(sizeof(act_rec_ts) == 16, "push/pop are 16 bytes");
_Static_assert(sizeof(act_rec_api) % 8 == 0, "8-byte aligned records");
_Static_assert(sizeof(act_rec_device_op) % 8 == 0, "8-byte aligned records");
_Static_assert(sizeof(act_spool_header) <= ACT_SPOOL_HEADER_SIZE, "header fits");
_Static_assert(sizeof(act_chunk_header) == 16, "chunk header is 16 bytes");

#endif
