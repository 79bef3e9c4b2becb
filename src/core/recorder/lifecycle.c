/*
 * lifecycle.c -- opening and sealing this process' recorder, and telling
 * its listener (core/internal.h: the capture window) that it did.
 *
 * Lifetime: act_recorder_open() maps a new spool (generation++, through
 * spool_file.c); act_recorder_close() seals it but never unmaps it while
 * threads might still be writing (a device callback can arrive late);
 * stale per-thread state is detected by generation on the slow path
 * (chunks.c). Sealing touches the spool file's times: a launcher watching
 * the directory (inotify IN_ATTRIB, tools/run_stream.c) reads what was
 * published at once, while the process is still ending. The recorder
 * never calls the capture window by name: the window registers a
 * listener (act_recorder_listen) and, with none, an open spool records.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

/* Read by the inline wrappers in acceltrace.h (in the program), through
 * act__idle_ptr: see there why not by name. 1 while act__recording is 0
 * only because no spool is open (no tool attached); the recorder owns it,
 * the capture window owns act__recording while it listens. */
ACT_EXPORT int act__idle;
ACT_EXPORT int *const act__idle_ptr = &act__idle;

void act_recorder_listen(const act_recorder_listener *l)
{
    atomic_store(&act_rec_state.listener, l);
}

int act_recorder_attached(void)
{
    return atomic_load_explicit(&act_rec_state.attached, memory_order_relaxed);
}

static void notify_opened(void)
{
    atomic_store(&act_rec_state.attached, 1);
    __atomic_store_n(&act__idle, 0, __ATOMIC_RELAXED);
    const act_recorder_listener *l = atomic_load(&act_rec_state.listener);
    if (l && l->opened)
        l->opened();
    else
        atomic_store(&act__recording, 1);
}

static void notify_closed(void)
{
    atomic_store(&act_rec_state.attached, 0);
    const act_recorder_listener *l = atomic_load(&act_rec_state.listener);
    if (l && l->closed)
        l->closed();
    __atomic_store_n(&act__idle, 1, __ATOMIC_RELAXED);
}

static int recorder_open(const char *dir, uint64_t capacity, uint32_t chunk_size, int create)
{
    if (!dir || !*dir)
        return ACT_E_INVAL;
    if (chunk_size < 4096 || chunk_size % 8 || chunk_size > (1u << 24))
        return ACT_E_INVAL;
    if (act_recorder_ring()) /* not sized automatically (0): ring.c */
        capacity = act_rec_ring_capacity(capacity ? capacity : ACT_SPOOL_AUTO_MIN);
    if (capacity && capacity < (uint64_t)ACT_SPOOL_HEADER_SIZE + chunk_size)
        return ACT_E_INVAL; /* 0: automatic (spool_file.c) */
    pthread_mutex_lock(&act_rec_state.lock);
    if (act_rec_hdr_get() && act_rec_state.pid == getpid()) {
        pthread_mutex_unlock(&act_rec_state.lock);
        return ACT_E_STATE;
    }
    act_rec_fork_register();
    int rc = act_rec_spool_map(dir, capacity, chunk_size, create);
    if (rc == 0) {
        free(act_rec_state.free_chunks);
        act_rec_state.free_chunks =
            calloc(act_rec_state.chunk_count, sizeof(act_rec_state.free_chunks[0]));
        act_rec_state.free_top = 0;
        if (!act_rec_state.free_chunks) {
            munmap(act_rec_state.map, act_rec_state.map_size);
            unlink(act_rec_state.path);
            act_rec_hdr_set(NULL);
            rc = ACT_E_NOMEM;
        } else if (act_rec_ring_setup(act_rec_hdr_get()) != 0) {
            munmap(act_rec_state.map, act_rec_state.map_size);
            unlink(act_rec_state.path);
            act_rec_hdr_set(NULL);
            rc = ACT_E_NOMEM;
        }
    }
    if (rc == 0) {
        act_rec_state.pid = getpid();
        act_rec_spool_init_header();
        atomic_store(&act_rec_exhausted, 0);
        atomic_fetch_add(&act_rec_state.gen, 1);
        act_rec_prefault_start();
    }
    pthread_mutex_unlock(&act_rec_state.lock);
    /* Outside act_rec_state.lock: the listener (the capture window)
     * decides whether act__recording turns on, and may write records. */
    if (rc == 0)
        notify_opened();
    return rc;
}

int act_recorder_open(const char *dir, uint64_t capacity, uint32_t chunk_size)
{
    return recorder_open(dir, capacity, chunk_size, 1);
}

int act_recorder_attach(const char *dir, uint64_t capacity, uint32_t chunk_size)
{
    return recorder_open(dir, capacity, chunk_size, 0);
}

static void recorder_close(int exiting)
{
    pthread_mutex_lock(&act_rec_state.lock);
    if (!act_rec_hdr_get() || act_rec_state.pid != getpid()) {
        pthread_mutex_unlock(&act_rec_state.lock);
        return;
    }
    atomic_store(&act__recording, 0);
    if (exiting)
        act_rec_prefault_leave();
    else
        act_rec_prefault_stop();
    /* Send every thread to the slow path; it will find a new generation. */
    for (act_thread *t = act_rec_state.threads; t; t = t->next)
        atomic_store_explicit(&t->cap, 0, memory_order_relaxed);
    act_spool_header *h = act_rec_hdr_get();
#if defined(__x86_64__)
    if (atomic_load(&act_tsc.usable) == 1) {
        /* Informational: timestamps are already ns (see record.h). */
        h->calib_ts[0] = act_tsc.tsc0;
        h->calib_ns[0] = act_tsc.ns0;
        act_tsc_pair(&h->calib_ts[1], &h->calib_ns[1]);
    }
#endif
    atomic_fetch_or((_Atomic uint32_t *)&h->flags, ACT_SPOOL_F_SEALED);
    msync(act_rec_state.map, act_rec_state.map_size, MS_ASYNC);
    /* Said to whoever watches the spool directory (`run`'s reading
     * thread, tools/run_stream.c: inotify IN_ATTRIB): the spool holds all
     * it will, so it is read while this process ends, not after. */
    int saved = errno;
    (void)utimensat(AT_FDCWD, act_rec_state.path, NULL, AT_SYMLINK_NOFOLLOW);
    errno = saved;
    /* Keep the mapping: a late device callback may still be writing to it.
     * It is address space only; the file itself is removed by its owner. */
    act_rec_hdr_set(NULL);
    atomic_fetch_add(&act_rec_state.gen, 1);
    pthread_mutex_unlock(&act_rec_state.lock);
    notify_closed();
}

void act_recorder_close(void)
{
    recorder_close(0);
}

void act_recorder_close_at_exit(void)
{
    recorder_close(1);
}
