/*
 * fork.c -- a forked child and its parent's recorder: the child never
 * writes to its parent's spool; it opens its own on its first record.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

/* ---- fork ------------------------------------------------------------- */

void act_recorder_atfork_child(void)
{
    /* The parent's spool is shared memory: the child must never write to
     * it. Forget it (leave the mapping: unmapping buys nothing) and let the
     * child start its own spool in the same directory on its next record. */
    pthread_mutex_init(&act_rec_state.lock, NULL);
    act_rec_space_atfork_child();
    act_rec_prefault_atfork_child();
    act_tsc_atfork_child();
    /* Recording, or paused outside the window, or a child that had not
     * recorded yet (its spool was still to be opened): its own children
     * are traced too, at any depth. */
    int was = act_rec_hdr_get() != NULL || act_rec_state.reopen_pending;
    atomic_store(&act__recording, 0);
    act_rec_hdr_set(NULL);
    act_rec_state.threads = NULL;
    act_rec_state.free_top = 0;
    atomic_fetch_add(&act_rec_state.gen, 1);
    act_thread *t = act_rec_tls;
    if (t) {
        t->chunk = NULL;
        atomic_store(&t->cap, 0);
        t->range_depth = 0;
        t->tid = (uint32_t)syscall(SYS_gettid);
        t->next = NULL;
        act_rec_state.threads = t;
    }
    /* Recording goes on, but the spool is opened lazily on the child's
     * first record: a child that only calls exec never leaves a file. */
    if (was && act_rec_state.dir[0])
        act_rec_state.reopen_pending = 1;
    act_capture_atfork_child(was && act_rec_state.dir[0]);
}
