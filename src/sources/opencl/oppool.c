/*
 * oppool.c -- the per-command records (act_cl_op) are reused, not
 * malloc'ed and freed per command.
 *
 * Each thread that enqueues owns a pool. It takes ops from its own free
 * list without atomics; an op goes back to the pool of the thread that
 * took it: onto that free list when the owner finishes it (a failed call,
 * a callback run inline), else onto the pool's `remote` stack with a CAS
 * (the completion callback on a runtime thread). When its free list is
 * empty the owner takes the whole remote stack with one exchange (no ABA:
 * nothing is ever popped from `remote` one by one), and mallocs only when
 * both are empty. A pool keeps as many ops as its thread ever had in
 * flight.
 *
 * A thread that exits frees its free list and the remote stack and marks
 * its pool dead; an op finished after that is pushed and then, seeing the
 * pool dead, the remote stack is emptied by whoever finished it (the
 * exchange hands each op to exactly one thread). Pools themselves stay on
 * a list for the life of the process (a few bytes per thread that ever
 * enqueued; reachable, for LeakSanitizer).
 */
#include <pthread.h>
#include <stdlib.h>

#include "cl_source.h"

typedef struct act_cl_op_pool {
    act_cl_op *local;          /* owner only */
    act_cl_op *_Atomic remote; /* finished by other threads */
    _Atomic int dead;          /* the owner exited */
    struct act_cl_op_pool *next_pool;
} act_cl_op_pool;

static __thread act_cl_op_pool *act_cl_my_pool __attribute__((tls_model("initial-exec")));
static act_cl_op_pool *_Atomic act_cl_pools;
static pthread_key_t act_cl_pool_key;
static pthread_once_t act_cl_pool_once = PTHREAD_ONCE_INIT;

static void act_cl_ops_free(act_cl_op *op)
{
    while (op) {
        act_cl_op *next = op->next_free;
        free(op);
        op = next;
    }
}

static void act_cl_pool_exit(void *arg)
{
    act_cl_op_pool *p = arg;
    act_cl_my_pool = NULL;
    atomic_store(&p->dead, 1);
    act_cl_ops_free(p->local);
    p->local = NULL;
    act_cl_ops_free(atomic_exchange(&p->remote, NULL));
}

static void act_cl_pool_key_make(void)
{
    (void)pthread_key_create(&act_cl_pool_key, act_cl_pool_exit);
}

static act_cl_op_pool *act_cl_pool_new(void)
{
    pthread_once(&act_cl_pool_once, act_cl_pool_key_make);
    act_cl_op_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->next_pool = atomic_load(&act_cl_pools);
    while (!atomic_compare_exchange_weak(&act_cl_pools, &p->next_pool, p))
        ;
    (void)pthread_setspecific(act_cl_pool_key, p);
    return act_cl_my_pool = p;
}

act_cl_op *act_cl_op_alloc(void)
{
    act_cl_op_pool *p = act_cl_my_pool;
    if (ACT_UNLIKELY(!p) && !(p = act_cl_pool_new()))
        return NULL;
    act_cl_op *op = p->local;
    if (ACT_UNLIKELY(!op))
        op = atomic_exchange_explicit(&p->remote, NULL, memory_order_acquire);
    if (ACT_LIKELY(op != NULL)) {
        /* The next op was last touched by a callback on another thread,
         * maybe long ago: its lines are fetched now, while the app runs,
         * not when the next enqueue needs them (a load miss per command). */
        p->local = op->next_free;
        for (size_t b = 0; b < sizeof *op; b += 64)
            __builtin_prefetch((const char *)p->local + b, 1);
    } else if ((op = malloc(sizeof *op))) {
        op->pool = p;
    }
    return op;
}

void act_cl_op_release(act_cl_op *op)
{
    act_cl_op_pool *p = op->pool;
    if (p == act_cl_my_pool) {
        op->next_free = p->local;
        p->local = op;
        return;
    }
    op->next_free = atomic_load_explicit(&p->remote, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&p->remote, &op->next_free, op,
                                                  memory_order_seq_cst, memory_order_relaxed))
        ;
    if (ACT_UNLIKELY(atomic_load(&p->dead)))
        act_cl_ops_free(atomic_exchange(&p->remote, NULL));
}
