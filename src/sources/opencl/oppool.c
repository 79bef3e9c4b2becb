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
 * Ops are never freed. A command can still be in flight when its thread
 * exits, or when the process calls exit() while threads enqueue; then the
 * op's only other reference is the runtime's callback record, which the
 * runtime may leak at exit. So every op a pool ever malloc'ed stays on
 * the pool's `all` list, and pools stay on a global list for the life of
 * the process: all reachable, for LeakSanitizer. A thread that exits
 * marks its pool dead and keeps its ops there; the next thread that needs
 * a pool takes over a dead one (CAS dead 1 -> 0) with its ops, so thread
 * churn does not grow memory, and an op finished after its owner exited
 * simply waits on the remote stack for the next owner. Memory is bounded
 * by the most ops ever in flight at once per concurrent thread.
 *
 * The pool is also where its thread counts the calls it does not draw
 * (successful clRetainEvent/clReleaseEvent, cl_source.h): per thread, so
 * that counting takes no locked instruction, summed over all pools when
 * the report is written.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cl_source.h"

typedef struct act_cl_op_pool {
    act_cl_op *local;          /* owner only */
    act_cl_op *_Atomic remote; /* finished by other threads */
    act_cl_op *all;            /* every op this pool malloc'ed (owner only) */
    /* Calls not drawn (act_cl_undrawn_count): the owner adds without a
     * locked instruction, the report at stop sums every pool's. */
    _Atomic uint64_t undrawn[ACT_CL_UNDRAWN_KINDS];
    _Atomic int dead; /* the owner exited: free to take over */
    struct act_cl_op_pool *next_pool;
} act_cl_op_pool;

static __thread act_cl_op_pool *act_cl_my_pool __attribute__((tls_model("initial-exec")));
static act_cl_op_pool *_Atomic act_cl_pools;
static pthread_key_t act_cl_pool_key;
static pthread_once_t act_cl_pool_once = PTHREAD_ONCE_INIT;

static void act_cl_pool_exit(void *arg)
{
    act_cl_op_pool *p = arg;
    act_cl_my_pool = NULL;
    atomic_store(&p->dead, 1);
}

static void act_cl_pool_key_make(void)
{
    (void)pthread_key_create(&act_cl_pool_key, act_cl_pool_exit);
}

/* A dead pool, now this thread's; NULL if every pool has a live owner. */
static act_cl_op_pool *act_cl_pool_take_over(void)
{
    for (act_cl_op_pool *p = atomic_load(&act_cl_pools); p; p = p->next_pool) {
        int dead = 1;
        if (atomic_load_explicit(&p->dead, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&p->dead, &dead, 0))
            return p;
    }
    return NULL;
}

static act_cl_op_pool *act_cl_pool_new(void)
{
    pthread_once(&act_cl_pool_once, act_cl_pool_key_make);
    act_cl_op_pool *p = act_cl_pool_take_over();
    if (!p) {
        if (!(p = calloc(1, sizeof *p)))
            return NULL;
        p->next_pool = atomic_load(&act_cl_pools);
        while (!atomic_compare_exchange_weak(&act_cl_pools, &p->next_pool, p))
            ;
    }
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
        op->all_next = p->all;
        p->all = op;
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
}

/* Calls counted on a thread whose pool could not be made (out of memory). */
static _Atomic uint64_t act_cl_undrawn_spill[ACT_CL_UNDRAWN_KINDS];

void act_cl_undrawn_count(enum act_cl_undrawn kind)
{
    act_cl_op_pool *p = act_cl_my_pool;
    if (ACT_UNLIKELY(!p) && !(p = act_cl_pool_new())) {
        atomic_fetch_add_explicit(&act_cl_undrawn_spill[kind], 1, memory_order_relaxed);
        return;
    }
    /* Only the owner writes: a load and a store, not a read-modify-write. */
    atomic_store_explicit(&p->undrawn[kind],
                          atomic_load_explicit(&p->undrawn[kind], memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Counted by the time of the last take (a session's report, a fork). */
static uint64_t act_cl_undrawn_taken[ACT_CL_UNDRAWN_KINDS];

uint64_t act_cl_undrawn_take(enum act_cl_undrawn kind)
{
    uint64_t n = atomic_load_explicit(&act_cl_undrawn_spill[kind], memory_order_relaxed);
    for (act_cl_op_pool *p = atomic_load(&act_cl_pools); p; p = p->next_pool)
        n += atomic_load_explicit(&p->undrawn[kind], memory_order_relaxed);
    uint64_t since = n - act_cl_undrawn_taken[kind];
    act_cl_undrawn_taken[kind] = n;
    return since;
}
