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
        t->seg = NULL; /* the parent's spool: not the child's to end */
        t->owned = 0;
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
    int attached = was && act_rec_state.dir[0];
    atomic_store(&act_rec_state.attached, attached);
    __atomic_store_n(&act__idle, !attached, __ATOMIC_RELAXED);
    const act_recorder_listener *l = atomic_load(&act_rec_state.listener);
    if (l && l->atfork_child)
        l->atfork_child(attached);
    else
        atomic_store(&act__recording, attached);
}

static void fork_register_once(void)
{
    pthread_atfork(NULL, NULL, act_recorder_atfork_child);
}

void act_rec_fork_register(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fork_register_once);
}
