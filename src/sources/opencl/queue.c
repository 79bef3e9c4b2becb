/*
 * queue.c -- command queues and devices.
 *
 * Whenever the queue hooks are armed (the layer or the shim is loaded),
 * queue creation forces CL_QUEUE_PROFILING_ENABLE, tool attached or not:
 * a session started later (acceltrace.profile(), torch.profiler) must
 * time the kernels of queues the program made at start-up. The queue is
 * recorded as the program asked for it; its device and queue records (and
 * the device's clock calibration, clock.c) are written into each spool
 * the first time the queue is used while that spool is open. The program
 * must not notice: clGetCommandQueueInfo reports the properties it asked
 * for, and clGetEventProfilingInfo on events of a queue it did not put in
 * profiling mode answers CL_PROFILING_INFO_NOT_AVAILABLE as it would have.
 *
 * Lifetime follows the program's own references (create, retain,
 * release). Once it has released its last one, nothing is ever called on
 * the queue again, even though the real object may live on until its
 * last event goes (an implicit release we never see as a call).
 *
 * Queue info lives in a fixed open-addressing table keyed by handle:
 * inserted under a mutex (queue creation is rare), looked up without locks
 * on every enqueue. Info structs are never freed (a released queue's slot
 * is reused when a queue with the same handle is created again), so a
 * completion callback can always read the info its command points to; an
 * info pushed out of the table that way goes on the retired list, where it
 * stays reachable (for leak checkers too) for the life of the process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cl_source.h"
#include "init/hooks.h"
#include "init/init.h"

#define ACT_CL_QUEUE_SLOTS 4096u /* power of two */
#define ACT_CL_MAX_DEVICES 64u

static struct {
    cl_command_queue _Atomic key;
    act_cl_queue *_Atomic info;
} act_cl_queues[ACT_CL_QUEUE_SLOTS];

static act_cl_device *_Atomic act_cl_devices[ACT_CL_MAX_DEVICES];
static _Atomic uint32_t act_cl_device_count;
static pthread_mutex_t act_cl_queue_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t act_cl_hash(const void *p)
{
    return (uint32_t)act_cl_ptr_mix(p) & (ACT_CL_QUEUE_SLOTS - 1);
}

act_cl_queue *act_cl_queue_find(cl_command_queue q)
{
    uint32_t h = act_cl_hash(q);
    for (uint32_t i = 0; i < ACT_CL_QUEUE_SLOTS; i++) {
        uint32_t s = (h + i) & (ACT_CL_QUEUE_SLOTS - 1);
        cl_command_queue k = atomic_load_explicit(&act_cl_queues[s].key, memory_order_acquire);
        if (k == q)
            return atomic_load_explicit(&act_cl_queues[s].info, memory_order_acquire);
        if (!k)
            return NULL;
    }
    return NULL;
}

/* Infos replaced in the table (under act_cl_queue_lock). */
static act_cl_queue *act_cl_queues_retired;

/* Insert under act_cl_queue_lock: into the slot of the same handle (a
 * handle reused after release), an empty one, or one whose queue was
 * released. Keys never go back to NULL, so probe chains stay intact; an
 * older dead entry with the same key further down the chain is shadowed. */
static int act_cl_queue_insert(act_cl_queue *info)
{
    uint32_t h = act_cl_hash(info->handle);
    for (uint32_t i = 0; i < ACT_CL_QUEUE_SLOTS; i++) {
        uint32_t s = (h + i) & (ACT_CL_QUEUE_SLOTS - 1);
        cl_command_queue k = atomic_load_explicit(&act_cl_queues[s].key, memory_order_relaxed);
        act_cl_queue *old = atomic_load_explicit(&act_cl_queues[s].info, memory_order_relaxed);
        if (k == info->handle || !k || (old && atomic_load(&old->app_refs) == 0)) {
            if (old) {
                old->retired_next = act_cl_queues_retired;
                act_cl_queues_retired = old;
            }
            atomic_store_explicit(&act_cl_queues[s].info, info, memory_order_release);
            atomic_store_explicit(&act_cl_queues[s].key, info->handle, memory_order_release);
            return 0;
        }
    }
    return ACT_E_FULL;
}

static act_cl_device *act_cl_device_find(cl_device_id id)
{
    uint32_t n = atomic_load_explicit(&act_cl_device_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        act_cl_device *d = atomic_load_explicit(&act_cl_devices[i], memory_order_acquire);
        if (d && d->id == id)
            return d;
    }
    return NULL;
}

static void act_cl_device_record(act_cl_device *d)
{
    char name[256] = "";
    size_t len = 0;
    if (act_cl_next.clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof name - 1, name, &len) != 0)
        strcpy(name, "unknown OpenCL device");
    name[sizeof name - 1] = 0;
    uint32_t name_id = act_str_intern_cstr(name);
    uint32_t vendor_id = act_str_intern_cstr("OpenCL");
    act_rec_device *r = act_rec_reserve(ACT_REC_DEVICE, sizeof *r);
    if (!r)
        return;
    act_cl_zero_body(r, sizeof *r);
    r->h.aux = name_id;
    r->device = (uint64_t)(uintptr_t)d->id;
    r->vendor = vendor_id;
    r->source = ACT_SOURCE_OPENCL;
    r->index = d->index;
    act_rec_commit();
}

/* The device's info, created on first sight (caller holds
 * act_cl_queue_lock); recorded and calibrated by act_cl_queue_announce. */
static act_cl_device *act_cl_device_get_locked(cl_device_id id)
{
    act_cl_device *d = act_cl_device_find(id);
    if (d)
        return d;
    uint32_t n = atomic_load_explicit(&act_cl_device_count, memory_order_relaxed);
    if (n >= ACT_CL_MAX_DEVICES || !(d = calloc(1, sizeof *d)))
        return NULL;
    d->id = id;
    d->index = n;
    d->method = "anchor_enqueue"; /* until calibrated (before its first command) */
    atomic_store_explicit(&act_cl_devices[n], d, memory_order_release);
    atomic_store_explicit(&act_cl_device_count, n + 1, memory_order_release);
    return d;
}

static void act_cl_queue_record(const act_cl_queue *info)
{
    act_rec_queue *r = act_rec_reserve(ACT_REC_QUEUE, sizeof *r);
    if (!r)
        return;
    act_cl_zero_body(r, sizeof *r);
    r->queue = (uint64_t)(uintptr_t)info->handle;
    r->device = (uint64_t)(uintptr_t)info->dev->id;
    r->properties = info->asked;
    act_rec_commit();
}

/*
 * Write the device (with its clock calibration) and queue records of
 * `info` into the open spool, once per spool: slow path of
 * act_cl_queue_get, and queue creation while a tool is attached.
 */
static void act_cl_queue_announce_slow(act_cl_queue *info, uint32_t gen)
{
    pthread_mutex_lock(&act_cl_queue_lock);
    if (atomic_load(&info->rec_gen) != gen) {
        act_cl_device *d = info->dev;
        if (atomic_load(&d->rec_gen) != gen) {
            /* Calibration markers need a host-side queue with profiling. */
            int markers_ok =
                (info->actual & CL_QUEUE_PROFILING_ENABLE) && !(info->actual & CL_QUEUE_ON_DEVICE);
            act_cl_device_record(d);
            act_cl_clock_calibrate(d, info->handle, markers_ok);
            atomic_store(&d->rec_gen, gen);
        }
        act_cl_queue_record(info);
        atomic_store(&info->rec_gen, gen);
    }
    pthread_mutex_unlock(&act_cl_queue_lock);
}

static inline act_cl_queue *act_cl_queue_announce(act_cl_queue *info)
{
    uint32_t gen = act_recorder_generation();
    if (ACT_UNLIKELY(atomic_load_explicit(&info->rec_gen, memory_order_acquire) != gen))
        act_cl_queue_announce_slow(info, gen);
    return info;
}

/* Set once a queue has profiling the program did not ask for (or asked
 * off again): from then on clGetEventProfilingInfo looks each event's
 * queue up to hide it. Never cleared (a released queue's events may
 * still be asked about). Set before the queue is handed to the program,
 * so before any of its events exists. */
static _Atomic int act_cl_queue_hiding;

static void act_cl_queue_hides(const act_cl_queue *info)
{
    if ((info->actual & CL_QUEUE_PROFILING_ENABLE) && !(info->asked & CL_QUEUE_PROFILING_ENABLE))
        atomic_store(&act_cl_queue_hiding, 1);
}

/* Register a new queue; `info` is filled in except dev. `app_refs`: the
 * program's references (1 at creation, -1 unknown). */
static act_cl_queue *act_cl_queue_add(act_cl_queue *tmpl, cl_device_id dev, int app_refs)
{
    act_cl_queue_hides(tmpl);
    act_cl_queue *info = malloc(sizeof *info);
    if (!info)
        return NULL;
    *info = *tmpl;
    atomic_init(&info->app_refs, app_refs);
    /* Generation 0 is never a spool's: written at the first use. */
    atomic_init(&info->rec_gen, 0);
    pthread_mutex_lock(&act_cl_queue_lock);
    info->dev = act_cl_device_get_locked(dev);
    int rc = info->dev ? act_cl_queue_insert(info) : ACT_E_NOMEM;
    pthread_mutex_unlock(&act_cl_queue_lock);
    if (rc != 0) {
        static _Atomic int reported;
        free(info);
        if (!atomic_exchange(&reported, 1))
            act_rec_error_emit("opencl: cannot track queue %p (%s); its commands are not traced",
                               (void *)tmpl->handle, act_strerror(rc));
        return NULL;
    }
    if (act_capture_attached())
        act_cl_queue_announce(info);
    return info;
}

act_cl_queue *act_cl_queue_get(cl_command_queue q)
{
    act_cl_queue *info = act_cl_queue_find(q);
    if (ACT_LIKELY(info != NULL))
        return act_cl_queue_announce(info);
    /* Created before tracing started or with the queue group off: what the
     * queue has now is all we know of what the app asked. */
    act_cl_queue tmpl;
    memset(&tmpl, 0, sizeof tmpl);
    tmpl.handle = q;
    cl_device_id dev;
    if (act_cl_next.clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != 0 ||
        act_cl_next.clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof tmpl.actual, &tmpl.actual,
                                          NULL) != 0)
        return NULL;
    tmpl.asked = tmpl.actual;
    return act_cl_queue_add(&tmpl, dev, -1);
}

/*
 * Flush the queues the program still holds, so that their commands reach
 * the device and their callbacks arrive. Each is retained under the lock
 * that releases take (a queue cannot go while we look at it), flushed
 * outside it, then released. Queues the program let go were flushed by
 * its own clReleaseCommandQueue (an implicit flush); queues of unknown
 * references are left alone.
 */
void act_cl_queue_flush_all(void)
{
    cl_command_queue *held = malloc(ACT_CL_QUEUE_SLOTS * sizeof *held);
    size_t n = 0;
    if (!held || !act_cl_next.clRetainCommandQueue || !act_cl_next.clReleaseCommandQueue ||
        !act_cl_next.clFlush) {
        free(held);
        return;
    }
    pthread_mutex_lock(&act_cl_queue_lock);
    for (uint32_t s = 0; s < ACT_CL_QUEUE_SLOTS; s++) {
        act_cl_queue *info = atomic_load_explicit(&act_cl_queues[s].info, memory_order_acquire);
        if (info && atomic_load(&info->app_refs) > 0 &&
            act_cl_next.clRetainCommandQueue(info->handle) == CL_SUCCESS)
            held[n++] = info->handle;
    }
    pthread_mutex_unlock(&act_cl_queue_lock);
    for (size_t i = 0; i < n; i++) {
        act_cl_next.clFlush(held[i]);
        act_cl_next.clReleaseCommandQueue(held[i]);
    }
    free(held);
}

/* ---- the queue group's gate ----------------------------------------------- */

/*
 * Whether a queue wrapper takes its own path (forcing, masking, counting):
 * when its hook is armed, and also while start-up stopped only because no
 * tool is attached yet -- a session opened later (acceltrace.profile(),
 * torch.profiler) arms the hooks then, and must find every queue already
 * profiling-capable and every count right -- unless configuration leaves
 * the queue group out (ACCELTRACE_HOOKS).
 */
static int act_cl_queue_gate(_Atomic int *armed)
{
    static _Atomic int selected = -1;
    if (act_cl_gate(armed, ACT_CL_QUERY))
        return 1;
    if (act_init_state(NULL) != ACT_INIT_DISABLED)
        return 0;
    int sel = atomic_load_explicit(&selected, memory_order_relaxed);
    if (sel < 0) {
        sel = act_hooks_group_enabled("opencl.queue");
        atomic_store_explicit(&selected, sel, memory_order_relaxed);
    }
    return sel;
}

/* ---- creation ------------------------------------------------------------ */

cl_command_queue CL_API_CALL act_cl_w_clCreateCommandQueue(cl_context ctx, cl_device_id dev,
                                                           cl_command_queue_properties props,
                                                           cl_int *err)
{
    if (!act_cl_queue_gate(&act_cl_armed_clCreateCommandQueue))
        return act_cl_next.clCreateCommandQueue(ctx, dev, props, err);
    uint64_t t0 = act_clock_now();
    cl_int rc;
    cl_command_queue_properties actual = props | CL_QUEUE_PROFILING_ENABLE;
    cl_command_queue q = act_cl_next.clCreateCommandQueue(ctx, dev, actual, &rc);
    if (!q && actual != props) {
        actual = props;
        q = act_cl_next.clCreateCommandQueue(ctx, dev, props, &rc);
    }
    if (err)
        *err = rc;
    if (q) {
        act_cl_queue tmpl;
        memset(&tmpl, 0, sizeof tmpl);
        tmpl.handle = q;
        tmpl.asked = props;
        tmpl.actual = actual;
        act_cl_queue_add(&tmpl, dev, 1);
        act_cl_obj_created(ACT_CL_OBJ_QUEUE, q, ctx, NULL, 0); /* leak check */
    }
    act_cl_host_slice("clCreateCommandQueue", t0, rc);
    return q;
}

/* Copy the app's property list with CL_QUEUE_PROFILING_ENABLE forced into
 * `out` (room for `cap` entries). Returns 0 when the list is left alone
 * (too long, or a device-side queue, where we change nothing). */
static int act_cl_props_force(const cl_queue_properties *in, cl_queue_properties *out, size_t cap,
                              cl_command_queue_properties *asked)
{
    size_t n = 0, at = (size_t)-1;
    *asked = 0;
    for (size_t i = 0; in && in[i]; i += 2)
        if (in[i] == CL_QUEUE_PROPERTIES)
            *asked = (cl_command_queue_properties)in[i + 1];
    for (; in && in[n]; n += 2) {
        if (n + 4 >= cap)
            return 0;
        out[n] = in[n];
        out[n + 1] = in[n + 1];
        if (in[n] == CL_QUEUE_PROPERTIES)
            at = n;
    }
    if (*asked & CL_QUEUE_ON_DEVICE)
        return 0;
    if (at == (size_t)-1) {
        at = n;
        out[n] = CL_QUEUE_PROPERTIES;
        out[n + 1] = 0;
        n += 2;
    }
    out[at + 1] |= CL_QUEUE_PROFILING_ENABLE;
    out[n] = 0;
    return 1;
}

cl_command_queue CL_API_CALL act_cl_w_clCreateCommandQueueWithProperties(
    cl_context ctx, cl_device_id dev, const cl_queue_properties *props, cl_int *err)
{
    if (!act_cl_queue_gate(&act_cl_armed_clCreateCommandQueueWithProperties))
        return act_cl_next.clCreateCommandQueueWithProperties(ctx, dev, props, err);
    uint64_t t0 = act_clock_now();
    act_cl_queue tmpl;
    memset(&tmpl, 0, sizeof tmpl);
    cl_queue_properties forced[ACT_ARRAY_SIZE(tmpl.asked_array)];
    int changed = act_cl_props_force(props, forced, ACT_ARRAY_SIZE(forced), &tmpl.asked);
    cl_int rc;
    cl_command_queue q = NULL;
    if (changed) {
        q = act_cl_next.clCreateCommandQueueWithProperties(ctx, dev, forced, &rc);
        tmpl.actual = tmpl.asked | CL_QUEUE_PROFILING_ENABLE;
    }
    if (!q) {
        q = act_cl_next.clCreateCommandQueueWithProperties(ctx, dev, props, &rc);
        tmpl.actual = tmpl.asked;
    }
    if (err)
        *err = rc;
    if (q) {
        tmpl.handle = q;
        tmpl.have_array = 1;
        uint32_t n = 0;
        if (props) {
            while (props[n] && n + 3 < ACT_ARRAY_SIZE(tmpl.asked_array))
                n += 2;
            memcpy(tmpl.asked_array, props, n * sizeof *props);
            tmpl.asked_array[n] = 0;
            n++;
        }
        tmpl.array_len = n;
        act_cl_queue_add(&tmpl, dev, 1);
        act_cl_obj_created(ACT_CL_OBJ_QUEUE, q, ctx, NULL, 0); /* leak check */
    }
    act_cl_host_slice("clCreateCommandQueueWithProperties", t0, rc);
    return q;
}

/* ---- queries that must not show the forced profiling --------------------- */

static cl_int act_cl_info_answer(const void *src, size_t len, size_t size, void *value,
                                 size_t *size_ret)
{
    if (value) {
        if (size < len)
            return CL_INVALID_VALUE;
        memcpy(value, src, len);
    }
    if (size_ret)
        *size_ret = len;
    return CL_SUCCESS;
}

cl_int CL_API_CALL act_cl_w_clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info param,
                                                  size_t size, void *value, size_t *size_ret)
{
    act_cl_queue *info;
    if (!act_cl_queue_gate(&act_cl_armed_clGetCommandQueueInfo) ||
        (param != CL_QUEUE_PROPERTIES && param != CL_QUEUE_PROPERTIES_ARRAY) ||
        !(info = act_cl_queue_find(q)) || info->actual == info->asked)
        return act_cl_next.clGetCommandQueueInfo(q, param, size, value, size_ret);
    if (param == CL_QUEUE_PROPERTIES)
        return act_cl_info_answer(&info->asked, sizeof info->asked, size, value, size_ret);
    if (!info->have_array)
        return act_cl_next.clGetCommandQueueInfo(q, param, size, value, size_ret);
    return act_cl_info_answer(info->asked_array, info->array_len * sizeof(cl_queue_properties),
                              size, value, size_ret);
}

cl_int CL_API_CALL act_cl_w_clSetCommandQueueProperty(cl_command_queue q,
                                                      cl_command_queue_properties props,
                                                      cl_bool enable,
                                                      cl_command_queue_properties *old)
{
    act_cl_queue *info;
    if (!act_cl_queue_gate(&act_cl_armed_clSetCommandQueueProperty) ||
        !(info = act_cl_queue_find(q)) || info->actual == info->asked)
        return act_cl_next.clSetCommandQueueProperty(q, props, enable, old);
    /* Profiling is ours: never switch it off underneath us, but keep what
     * the app believes it asked for. */
    cl_command_queue_properties before = info->asked;
    cl_command_queue_properties real = props;
    if (!enable)
        real &= ~(cl_command_queue_properties)CL_QUEUE_PROFILING_ENABLE;
    cl_int rc = real ? act_cl_next.clSetCommandQueueProperty(q, real, enable, NULL) : CL_SUCCESS;
    if (rc == CL_SUCCESS) {
        info->asked = enable ? (info->asked | props) : (info->asked & ~props);
        act_cl_queue_hides(info);
        if (old)
            *old = before;
    }
    return rc;
}

cl_int CL_API_CALL act_cl_w_clRetainCommandQueue(cl_command_queue q)
{
    cl_int rc = act_cl_next.clRetainCommandQueue(q);
    if (rc == CL_SUCCESS)
        act_cl_obj_retained(q); /* leak check (objects.c) */
    act_cl_queue *info;
    if (rc != CL_SUCCESS || !act_cl_queue_gate(&act_cl_armed_clRetainCommandQueue) ||
        !(info = act_cl_queue_find(q)))
        return rc;
    pthread_mutex_lock(&act_cl_queue_lock);
    if (atomic_load(&info->app_refs) > 0)
        atomic_fetch_add(&info->app_refs, 1);
    pthread_mutex_unlock(&act_cl_queue_lock);
    return rc;
}

/* The program's count drops before the real release, under the lock that
 * act_cl_queue_flush_all holds while it retains: the flush either holds
 * its own reference already or sees the queue as let go. */
cl_int CL_API_CALL act_cl_w_clReleaseCommandQueue(cl_command_queue q)
{
    act_cl_obj_released(q); /* leak check (objects.c) */
    act_cl_queue *info;
    if (act_cl_queue_gate(&act_cl_armed_clReleaseCommandQueue) && (info = act_cl_queue_find(q))) {
        pthread_mutex_lock(&act_cl_queue_lock);
        if (atomic_load(&info->app_refs) > 0)
            atomic_fetch_sub(&info->app_refs, 1);
        pthread_mutex_unlock(&act_cl_queue_lock);
    }
    return act_cl_next.clReleaseCommandQueue(q);
}

cl_int CL_API_CALL act_cl_w_clGetEventProfilingInfo(cl_event e, cl_profiling_info param,
                                                    size_t size, void *value, size_t *size_ret)
{
    /* Until a queue hides its profiling, no event needs looking up: a
     * program that reads its own timestamps after every launch (clpeak's
     * latency test) pays two more runtime calls per read otherwise. */
    if (atomic_load_explicit(&act_cl_queue_hiding, memory_order_relaxed) &&
        act_cl_queue_gate(&act_cl_armed_clGetEventProfilingInfo)) {
        cl_command_queue q = NULL;
        act_cl_queue *info;
        if (act_cl_next.clGetEventInfo(e, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) ==
                CL_SUCCESS &&
            q && (info = act_cl_queue_find(q)) && !(info->asked & CL_QUEUE_PROFILING_ENABLE))
            return CL_PROFILING_INFO_NOT_AVAILABLE;
    }
    return act_cl_next.clGetEventProfilingInfo(e, param, size, value, size_ret);
}
