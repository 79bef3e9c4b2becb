/*
 * spool_file.c -- the spool file of this process (format: core/record.h):
 * its directory, the shared mapping, the header, the reservation of its
 * space chunk by chunk, and the drop counts. Opening and sealing it, and
 * telling the capture window, are lifecycle.c's.
 *
 * Because the spool is a MAP_SHARED file mapping, every published byte is
 * in the page cache the moment it is written: if the program is killed, the
 * launcher still reads everything published before the death.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

struct act_rec_state act_rec_state = {.lock = PTHREAD_MUTEX_INITIALIZER};
_Atomic int act_rec_exhausted;

/* ---- spool file ------------------------------------------------------- */

static void spool_fill_cmdline(act_spool_header *h)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, h->cmdline, sizeof(h->cmdline) - 2);
    close(fd);
    if (n < 0)
        n = 0;
    h->cmdline[n] = '\0';
    h->cmdline[n + 1] = '\0';
}

/* ---- spool space --------------------------------------------------------
 *
 * Chunks [0, space.reserved) have their file space reserved: one
 * posix_fallocate per chunk, off the hot path (on tmpfs it also zeroes
 * the pages that pre-faulting then finds present; the recording cost did
 * not change: BENCHMARKS.md "Figures behind design comments",
 * docs/reliability.md). Reserving
 * goes in order, under its own lock, by whoever needs it first: the
 * pre-fault helper ahead of use, or act_rec_chunk_acquire (chunks.c) when the helper is
 * behind. A range is never reserved twice (tmpfs refuses to reserve an
 * already reserved range when it is nearly full). */
static struct {
    pthread_mutex_t lock;
    _Atomic uint32_t reserved;
} space = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* posix_fallocate, retried when interrupted; 0 or an errno value. */
static int space_fallocate(int fd, off_t off, off_t len)
{
    int rc;
    do
        rc = posix_fallocate(fd, off, len);
    while (rc == EINTR);
    return rc;
}

/* Make sure chunks [0, upto) have their space: 0 or an errno value. */
int act_rec_space_reserve(uint32_t upto)
{
    if (atomic_load_explicit(&space.reserved, memory_order_acquire) >= upto)
        return 0;
    int saved = errno; /* the program's, on the slow path of its calls */
    pthread_mutex_lock(&space.lock);
    uint32_t r = atomic_load_explicit(&space.reserved, memory_order_relaxed);
    int rc = 0;
    if (r < upto) {
        /* Opened each time, not kept: a descriptor of ours could be closed
         * by the program and its number reused for one of its files. */
        int fd = open(act_rec_state.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        rc = fd < 0 ? errno
                    : space_fallocate(fd, (off_t)act_rec_chunk_off(r),
                                      (off_t)(upto - r) * act_rec_state.chunk_size);
        if (fd >= 0)
            close(fd);
        if (!rc)
            atomic_store_explicit(&space.reserved, upto, memory_order_release);
    }
    pthread_mutex_unlock(&space.lock);
    errno = saved;
    return rc;
}

/* The first failed reservation is kept in the header (the trace says why
 * records were dropped from then on). */
void act_rec_space_note_failure(act_spool_header *h, int err)
{
    uint32_t none = 0;
    atomic_compare_exchange_strong((_Atomic uint32_t *)&h->space_errno, &none, (uint32_t)err);
}

void act_rec_space_atfork_child(void)
{
    pthread_mutex_init(&space.lock, NULL);
}

/* A record of `kind` lost: counted in the header (record.h), as the
 * launcher reports it. */
void act_rec_drop(uint16_t kind)
{
    act_spool_header *h = act_rec_hdr_get();
    if (h && kind < ACT_REC_KIND_MAX)
        atomic_fetch_add_explicit((_Atomic uint64_t *)&h->dropped[kind], 1, memory_order_relaxed);
}

/* ---- the program's file size limit ------------------------------------
 *
 * RLIMIT_FSIZE is the program's. Growing a file past it fails with EFBIG
 * and raises SIGXFSZ in the thread that grew it, whose default action
 * kills the program. The spool is made no larger than the limit allows
 * (whole chunks; the chunks it cannot hold are a full spool: records
 * dropped, counted, EFBIG named in the header), so the one call that
 * grows it never goes past the limit as read. The limit can still be
 * lowered by another thread between the read and the call: the call runs
 * under act_xfsz_block (fsutil.c), and a SIGXFSZ it raised is taken back
 * before the thread's mask is restored. The program's handler,
 * disposition and mask are never changed as it sees them. */

int act_rec_spool_truncate(int fd, off_t size)
{
    act_xfsz_guard g;
    act_xfsz_block(&g);
    int rc = ftruncate(fd, size) == 0 ? 0 : errno;
    act_xfsz_restore(&g, rc);
    return rc;
}

/* Make the file *size bytes, or fewer within RLIMIT_FSIZE (whole chunks
 * after the header; *size becomes what it is). 0 or an errno value:
 * EFBIG when not even the header and one chunk fit. */
static int spool_grow(int fd, uint64_t *size, uint32_t chunk_size)
{
    uint64_t asked = *size;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < *size) {
        if (rl.rlim_cur < (rlim_t)ACT_SPOOL_HEADER_SIZE + chunk_size)
            return EFBIG;
        uint64_t chunks = (rl.rlim_cur - ACT_SPOOL_HEADER_SIZE) / chunk_size;
        *size = ACT_SPOOL_HEADER_SIZE + chunks * chunk_size;
    }
    act_rec_state.size_limited = *size < asked;
    return act_rec_spool_truncate(fd, (off_t)*size);
}

/* ---- the default capacity ----------------------------------------------
 *
 * A spool asked with capacity 0 (no --buffer-size) is made as large as its
 * file system can spare: a quarter of the space free to this user, from
 * ACT_SPOOL_AUTO_MIN (256 MiB, the fixed default before) to
 * ACT_SPOOL_AUTO_MAX (4 GiB). The file is sparse and its space reserved
 * chunk by chunk as records need it, so a short run costs only what it
 * records, while a long one is no longer cut off at 256 MiB (about a
 * million back-to-back OpenCL launches: a few minutes of a training loop)
 * when the disk has room. A quarter, because the JSON trace written from a
 * spool, often to the same file system, takes about three times its bytes.
 * Within the program's RLIMIT_FSIZE as any capacity (spool_grow); where
 * the address space cannot take the mapping (ulimit -v), ACT_SPOOL_AUTO_MIN. */
uint64_t act_rec_spool_auto_size(uint64_t avail)
{
    uint64_t q = avail / 4;
    return q < ACT_SPOOL_AUTO_MIN   ? ACT_SPOOL_AUTO_MIN
           : q > ACT_SPOOL_AUTO_MAX ? ACT_SPOOL_AUTO_MAX
                                    : q;
}

/* The automatic capacity for the spool open on fd. */
static uint64_t spool_auto_capacity(int fd)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0)
        return ACT_SPOOL_AUTO_MIN;
    return act_rec_spool_auto_size((uint64_t)v.f_bavail * (uint64_t)v.f_frsize);
}

/* Map the spool fd of `*capacity` bytes; an automatic capacity the address
 * space refuses is made ACT_SPOOL_AUTO_MIN (the file shrunk to it). NULL
 * when it cannot be mapped. */
static void *spool_mmap(int fd, uint64_t *capacity, int automatic)
{
    void *m = mmap(NULL, *capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED && automatic && *capacity > ACT_SPOOL_AUTO_MIN &&
        act_rec_spool_truncate(fd, (off_t)ACT_SPOOL_AUTO_MIN) == 0) {
        *capacity = ACT_SPOOL_AUTO_MIN;
        m = mmap(NULL, *capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    return m == MAP_FAILED ? NULL : m;
}

/* The spool directory: made 0700 when `create` and missing; an existing
 * one must be a directory of this user that others cannot write to. Not
 * made when `create` is 0: a process started by `run` (or forked from
 * one) that records after the run ended and removed the directory must
 * not bring it back. 0 or ACT_E_IO with errno set. */
static int spool_dir_check(const char *dir, int create)
{
    if (create && act_dir_make_private(dir) == 0)
        return 0;
    if (create && errno != EEXIST)
        return ACT_E_IO;
    struct stat st;
    if (stat(dir, &st) != 0)
        return ACT_E_IO;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return ACT_E_IO;
    }
    if (st.st_uid != geteuid() || (st.st_mode & S_IWOTH)) {
        errno = EPERM;
        return ACT_E_IO;
    }
    return 0;
}

int act_rec_spool_map(const char *dir, uint64_t capacity, uint32_t chunk_size, int create)
{
    if (spool_dir_check(dir, create) != 0)
        return ACT_E_IO;
    /* <pid>.acts, or <pid>-N.acts when this pid already has one (a forked
     * child that recorded and then called exec keeps its pid). */
    char path[PATH_MAX];
    int fd = -1, n = 0;
    for (int i = 0; i < 64 && fd < 0; i++) {
        n = i ? snprintf(path, sizeof(path), "%s/%ld-%d.acts", dir, (long)getpid(), i)
              : snprintf(path, sizeof(path), "%s/%ld.acts", dir, (long)getpid());
        if (n < 0 || (size_t)n >= sizeof(path))
            return ACT_E_INVAL;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            return ACT_E_IO;
    }
    if (fd < 0)
        return ACT_E_IO;
    act_rec_state.capacity_asked = capacity;
    int automatic = capacity == 0;
    uint64_t size = automatic ? spool_auto_capacity(fd) : capacity;
    /* Sparse, but the header's page is reserved now and each chunk before
     * it is used (act_rec_space_reserve above): a store into a page the file system
     * cannot back would kill the program with SIGBUS. The mode is ours
     * whatever the program's umask (reserving reopens the file). */
    int rc = act_file_mode_set(fd, 0600) ? errno : spool_grow(fd, &size, chunk_size);
    if (!rc)
        rc = space_fallocate(fd, 0, ACT_SPOOL_HEADER_SIZE);
    capacity = size;
    if (rc) {
        close(fd);
        unlink(path);
        errno = rc;
        return ACT_E_IO;
    }
    void *m = spool_mmap(fd, &capacity, automatic && !act_rec_state.size_limited);
    if (!m) {
        close(fd);
        unlink(path);
        return ACT_E_NOMEM;
    }
    close(fd);
    act_rec_state.map = m;
    act_rec_state.map_size = capacity;
    act_rec_hdr_set(m);
    act_rec_state.chunk_size = chunk_size;
    act_rec_state.chunk_count = (uint32_t)((capacity - ACT_SPOOL_HEADER_SIZE) / chunk_size);
    memcpy(act_rec_state.path, path, (size_t)n + 1);
    snprintf(act_rec_state.dir, sizeof(act_rec_state.dir), "%s", dir);
    return 0;
}

void act_rec_spool_init_header(void)
{
    atomic_store(&space.reserved, 0); /* a fresh spool: nothing reserved yet */
    act_spool_header *h = act_rec_hdr_get();
    h->version = ACT_SPOOL_VERSION;
    h->header_size = ACT_SPOOL_HEADER_SIZE;
    h->capacity = act_rec_state.map_size;
    h->chunk_size = act_rec_state.chunk_size;
    h->chunk_count = act_rec_state.chunk_count;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->clock_kind = ACT_CLOCK_MONOTONIC_RAW;
    h->start_realtime_ns = act_clock_realtime();
    h->start_ns = act_clock_now();
    spool_fill_cmdline(h);
    /* The magic goes last: a reader that sees it sees a whole header. */
    atomic_store_explicit((_Atomic uint64_t *)&h->magic, ACT_SPOOL_MAGIC, memory_order_release);
}

/* No getpid() here: the fork handler clears act_rec_state.hdr in a child, so the
 * header seen is always this process' own, and sources may call this on
 * every command. */
act_spool_header *act_recorder_header(void)
{
    return act_rec_hdr_get();
}

const char *act_recorder_path(void)
{
    return act_rec_hdr_get() ? act_rec_state.path : "";
}

uint32_t act_recorder_generation(void)
{
    return atomic_load_explicit(&act_rec_state.gen, memory_order_acquire);
}
