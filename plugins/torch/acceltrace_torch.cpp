/*
 * acceltrace_torch.cpp -- the torch.profiler plugin: acceltrace's device
 * activity (OpenCL, CUDA, Ascend: whatever sources the C core has) inside
 * torch.profiler's kineto trace, linked to the ops that launched it.
 *
 * The one C++ file of acceltrace. It only adapts: recording, draining,
 * joining and laying out the device ops are the C core's (act_session_begin/
 * end, and the snapshot in src/timeline/snapshot.h, which hands out the
 * timeline builder's joined device ops: the same launches, lanes, flows and
 * External ids as acceltrace's own trace of the run). This file maps each
 * one to a kineto activity (to_activity). Kineto's classes change layout
 * between torch versions, so this file is built against the installed
 * torch's own headers and registers nothing until Python asks, naming the
 * torch version it was built for (act_torch_plugin_register).
 *
 * How a device op is linked to its op:
 *   - a global RecordFunction callback pushes an acceltrace range for every
 *     op while a session records, so the C core tags each launch with that
 *     range's external id (act_snapshot_current_ext);
 *   - kineto hands the session torch's correlation id of each op
 *     (push[User]CorrelationId, on the op's thread); it is paired with the
 *     op's range, whichever of the two callbacks runs first;
 *   - processTrace turns each device op into a GenericTraceActivity linked to
 *     getLinkedActivity(torch id), with one PRIVATEUSE1_RUNTIME marker at the
 *     launch as the ac2g flow start (the builder's flow id, moved into the
 *     upper half of uint32).
 * Every string handed to kineto is made safe for its writer first (the
 * exact metadata sanitiser, one warning per distinct altered string).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#ifdef ACT_HAVE_PRIVATEUSE1_REGISTRY
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#endif

#include "acceltrace.h"
/* record.h is C11; only its op kinds and flags are used here. */
#define _Static_assert static_assert
#include "core/record.h"
#undef _Static_assert
#include "timeline/snapshot.h"
#include "writers/sanitize.h"

#ifndef ACT_TORCH_VERSION
#error "ACT_TORCH_VERSION (torch.__version__ at build time) must be defined"
#endif

/* Sessions arrive with the core; an older libacceltrace without them makes
 * the session report an error instead of failing to load. */
extern "C" {
int act_session_begin(const act_options *opts) __attribute__((weak));
int act_session_end(const char *trace_path) __attribute__((weak));
/* src/api/annotate.c: a range push that is an operator (not public API). */
int act__op_push(const char *name, int op, int64_t seq, uint64_t fwd_tid) __attribute__((weak));
}

namespace acceltrace_torch
{

using libkineto::ActivityType;

/* ---- the sanitiser ------------------------------------------------------ */

/* The C core's exact torch_npu sanitiser (src/writers/sanitize.c): `"`->`'`,
 * `\`->`/`, below U+0020 -> space, notes by code point. One implementation
 * for the plugin and the C writer; the Python patch mirrors it and a test
 * checks the two agree. */
std::string sanitize(const std::string &in, std::string *notes)
{
    act_sanitized r{};
    if (act_sanitize_value(in.data(), in.size(), &r) != 0)
        throw std::bad_alloc();
    std::string out(r.text, r.len);
    if (notes) {
        char *joined = act_sanitized_notes_join(&r);
        *notes = joined ? joined : "";
        free(joined);
    }
    act_sanitized_free(&r);
    return out;
}

/* Safe text for kineto; warns once per distinct altered string. */
static std::string safe(const std::string &s, const char *what)
{
    std::string notes;
    std::string out = sanitize(s, &notes);
    if (notes.empty())
        return out;
    static std::mutex mu;
    static std::unordered_set<std::string> warned;
    std::lock_guard<std::mutex> g(mu);
    if (warned.insert(s).second)
        TORCH_WARN("acceltrace: the ", what, " '", out,
                   "' contained characters that cannot survive the trace writer and was altered (",
                   notes, ").");
    return out;
}

/* ---- global recording state (one acceltrace session per process) ------- */

struct State {
    std::mutex mu;
    std::atomic<bool> active{false};
    std::unordered_map<uint64_t, int64_t> corr_by_ext; /* range ext -> torch corr id */
    at::CallbackHandle rf_handle = 0;
    std::atomic<uint64_t> pushes{0}, linked_ids{0};
    std::atomic<uint64_t> configured{0}, started{0}, processed{0};
    std::string last_errors; /* of the last session that finished (under mu) */
};

static State &state()
{
    static State *s = new State(); /* never destroyed: callbacks may outlive exit */
    return *s;
}

/* Per thread: ranges pushed for ops (ext), and a torch id that arrived
 * before the op's range (kineto's callback ran first). */
struct Tls {
    std::vector<uint64_t> exts;
    std::vector<bool> paired;
    std::vector<bool> pushed; /* the range is ours to pop */
    int64_t pending = 0;
};

/* Under `run`, the start-up hook's observer (act_torch_plugin_observe_ops)
 * already gives every op a range: the profiler's callback then pairs with
 * that range instead of pushing a second one. */
static std::atomic<bool> g_observing{false};
static thread_local Tls tls;

static void pair(uint64_t ext, int64_t corr)
{
    State &st = state();
    std::lock_guard<std::mutex> g(st.mu);
    st.corr_by_ext[ext] = corr;
    st.linked_ids++;
}

static std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction &fn)
{
    if (!state().active.load(std::memory_order_relaxed))
        return nullptr;
    const char *name = fn.name();
    bool push = !g_observing.load(std::memory_order_relaxed);
    int rc = push ? act_range_push(name && *name ? name : "torch op") : ACT_OK;
    uint64_t ext = (rc == ACT_OK || rc == ACT_E_FULL) ? act_snapshot_current_ext() : 0;
    tls.exts.push_back(ext);
    tls.paired.push_back(false);
    tls.pushed.push_back(push && ext);
    if (ext && tls.pending) {
        pair(ext, tls.pending);
        tls.paired.back() = true;
        tls.pending = 0;
    }
    return nullptr;
}

static void on_exit(const at::RecordFunction &, at::ObserverContext *)
{
    if (tls.exts.empty())
        return;
    bool ours = tls.pushed.back();
    tls.exts.pop_back();
    tls.paired.pop_back();
    tls.pushed.pop_back();
    if (ours)
        act_range_pop();
}

/* kineto's correlation id of the op being entered on this thread. */
static void torch_id_pushed(uint64_t id)
{
    if (!state().active.load(std::memory_order_relaxed))
        return;
    state().pushes++;
    if (!tls.exts.empty() && !tls.paired.back() && tls.exts.back()) {
        pair(tls.exts.back(), static_cast<int64_t>(id));
        tls.paired.back() = true;
    } else {
        tls.pending = static_cast<int64_t>(id);
    }
}

static void install_record_function_callback()
{
    State &st = state();
    std::lock_guard<std::mutex> g(st.mu);
    if (st.rf_handle)
        return;
    st.rf_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_enter, on_exit).needsIds(true).needsInputs(false));
}

/* ---- clocks ------------------------------------------------------------- */

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

/* realtime - monotonic_raw, from the tightest of a few brackets. */
static int64_t realtime_offset()
{
    int64_t best = INT64_MAX, off = 0;
    for (int i = 0; i < 5; i++) {
        int64_t a = clock_ns(CLOCK_MONOTONIC_RAW), r = clock_ns(CLOCK_REALTIME),
                b = clock_ns(CLOCK_MONOTONIC_RAW);
        if (b - a < best) {
            best = b - a;
            off = r - (a + (b - a) / 2);
        }
    }
    return off;
}

static int rm_entry(const char *path, const struct stat *, int, struct FTW *)
{
    return remove(path);
}

/* ---- what one session recorded ------------------------------------------ */

/* A device op of the snapshot, its strings copied (the snapshot is closed
 * once read). */
struct DeviceOp {
    act_snap_op op;
    std::string name, detail, queue_label, launch_name, user_name;
};

/* A user range (record_function) drawn on one device lane, as kineto's
 * gpu_user_annotation: from its first op's start to its last op's end. */
struct UserSpan {
    int64_t start, end;
    std::string name;
    const libkineto::ITraceActivity *link;
};

struct Lane {
    int64_t pid;
    int32_t id;
    std::string name;
};

struct Device {
    int64_t pid;
    std::string name, label;
};

class Session : public libkineto::IActivityProfilerSession
{
  public:
    explicit Session(const std::set<ActivityType> &types) : types_(types)
    {
    }
    ~Session() override
    {
        cleanup();
    }

    void start() override;
    void stop() override;
    std::vector<std::string> errors() override
    {
        return errors_;
    }
    void publish_errors();
    void processTrace(libkineto::ActivityLogger &logger) override
    {
        processTrace(
            logger, [](int32_t) -> const libkineto::ITraceActivity * { return nullptr; }, 0, 0);
    }
    void processTrace(libkineto::ActivityLogger &logger,
                      libkineto::getLinkedActivityCallback getLinked, int64_t startTime,
                      int64_t endTime) override;
    std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override;
    std::string getDeviceProperties() override;
    std::vector<libkineto::ResourceInfo> getResourceInfos() override;
    std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override
    {
        return nullptr;
    }
    void pushCorrelationId(uint64_t id) override
    {
        torch_id_pushed(id);
    }
    void pushUserCorrelationId(uint64_t id) override
    {
        torch_id_pushed(id);
    }

  private:
    void drain_and_read();
    void read_snapshot(int fd);
    void keep(const act_snap_op &op);
    void cleanup();
    void to_activity(const DeviceOp &d, ActivityType type, const libkineto::ITraceActivity *link,
                     libkineto::ActivityLogger &logger);
    bool wants(ActivityType t) const
    {
        return types_.count(t) != 0;
    }

    void fail(const std::string &why);
    void read_shared();

    std::set<ActivityType> types_;
    std::vector<std::string> errors_;
    std::string spool_dir_;
    bool recording_ = false;
    /* Under `acceltrace run`: the launcher's recorder is this process'
     * own; the cycle reads its device ops from that spool (two readers of
     * one spool) instead of a session of its own. */
    bool shared_ = false;
    uint64_t tl_start_ = 0, tl_stop_ = 0;
    int64_t offset_ns_ = 0; /* realtime - monotonic_raw */
    int64_t start_ns_ = 0;
    std::vector<DeviceOp> ops_;
    std::vector<Device> devices_;
    std::vector<Lane> lanes_;
    std::vector<std::unique_ptr<libkineto::GenericTraceActivity>> activities_;
    int32_t next_id_ = 1 << 30;
    libkineto::TraceSpan span_{0, 0, "acceltrace"};
};

static std::atomic<Session *> g_recording{nullptr};

void Session::start()
{
    if (!act_session_begin || !act_session_end) {
        fail("acceltrace: this libacceltrace has no in-process sessions "
             "(act_session_begin); the device lane stays empty");
        return;
    }
    Session *expected = nullptr;
    if (!g_recording.compare_exchange_strong(expected, this)) {
        fail("acceltrace: another torch.profiler cycle is recording with acceltrace; this one's "
             "device lane stays empty (one profiler at a time)");
        return;
    }
    char tmpl[] = "/tmp/acceltrace-torch-XXXXXX";
    /* 0700 whatever the program's umask (mkdtemp's mode is masked by it):
     * a directory we cannot write to would hold no spool. */
    bool made = mkdtemp(tmpl) != nullptr;
    if (!made || chmod(tmpl, 0700) != 0) {
        if (made)
            rmdir(tmpl);
        fail("acceltrace: cannot create a spool directory in /tmp (is it writable?); the "
             "device lane stays empty");
        g_recording = nullptr;
        return;
    }
    spool_dir_ = tmpl;
    act_options o{};
    o.struct_size = sizeof(o);
    o.spool_dir = spool_dir_.c_str();
    o.trace_name = "torch.profiler";
    int rc = act_session_begin(&o);
    if (rc == ACT_E_CONFLICT && *act_snapshot_path()) {
        /* `acceltrace run` records this process already: share its spool. */
        shared_ = true;
        cleanup();
        tl_start_ = act_snapshot_clock_now();
    } else if (rc != ACT_OK) {
        fail(std::string("acceltrace: the torch.profiler session did not start (") +
             act_strerror(rc) + "): the device lane stays empty");
        g_recording = nullptr;
        cleanup();
        return;
    }
    {
        State &st = state();
        std::lock_guard<std::mutex> g(st.mu);
        st.corr_by_ext.clear();
    }
    install_record_function_callback();
    state().started++;
    start_ns_ = clock_ns(CLOCK_REALTIME);
    state().active = true;
    recording_ = true;
    status_ = libkineto::TraceStatus::RECORDING;
}

void Session::stop()
{
    if (!recording_)
        return;
    state().active = false;
    drain_and_read();
    recording_ = false;
    g_recording = nullptr;
    status_ = libkineto::TraceStatus::PROCESSING;
}

/* The core drains the sources when the session ends (bounded by
 * ACCELTRACE_DRAIN_TIMEOUT) and then discards the spool; holding it open
 * keeps the drained file readable after that. */
void Session::drain_and_read()
{
    offset_ns_ = realtime_offset();
    if (shared_) {
        read_shared();
        return;
    }
    int fd = -1;
    const char *path = act_snapshot_path();
    if (path && *path)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    /* ACCELTRACE_TORCH_TRACE: acceltrace's own trace of this cycle too. */
    const char *own = secure_getenv("ACCELTRACE_TORCH_TRACE");
    int rc = act_session_end(own && *own ? own : nullptr);
    if (rc != ACT_OK)
        errors_.push_back(std::string("acceltrace: ending the session: ") + act_strerror(rc));
    if (fd < 0) {
        errors_.push_back("acceltrace: the session's spool file could not be opened");
    } else {
        read_snapshot(fd);
        ::close(fd);
    }
    cleanup();
}

static ActivityType activity_type(uint32_t kind, bool *ok)
{
    *ok = true;
    switch (kind) {
    case ACT_OP_KERNEL: return ActivityType::CONCURRENT_KERNEL;
    case ACT_OP_MEMCPY_HTOD:
    case ACT_OP_MEMCPY_DTOH:
    case ACT_OP_MEMCPY_DTOD:
    case ACT_OP_MAP:
    case ACT_OP_UNMAP: return ActivityType::GPU_MEMCPY;
    case ACT_OP_MEMSET: return ActivityType::GPU_MEMSET;
    case ACT_OP_COLLECTIVE: return ActivityType::COLLECTIVE_COMM;
    default: *ok = false; return ActivityType::CONCURRENT_KERNEL;
    }
}

/* Keep a device op, and the device and lane it is on (named as the
 * builder named them). */
void Session::keep(const act_snap_op &op)
{
    ops_.push_back(
        {op, op.name, op.detail, op.queue_label, op.launch_name, op.user_name ? op.user_name : ""});
    auto same_pid = [&](const Device &d) { return d.pid == op.device_pid; };
    if (std::find_if(devices_.begin(), devices_.end(), same_pid) == devices_.end())
        devices_.push_back({op.device_pid, safe(op.device_process, "device name"),
                            safe(*op.vendor ? op.vendor : "device", "device label")});
    auto same_lane = [&](const Lane &l) {
        return l.pid == op.device_pid && l.id == static_cast<int32_t>(op.lane_tid);
    };
    if (std::find_if(lanes_.begin(), lanes_.end(), same_lane) == lanes_.end())
        lanes_.push_back(
            {op.device_pid, static_cast<int32_t>(op.lane_tid), safe(op.lane_name, "stream name")});
}

void Session::read_snapshot(int fd)
{
    act_snapshot *snap = nullptr;
    int rc = act_snapshot_open_fd(fd, &snap);
    if (rc != ACT_OK) {
        errors_.push_back(std::string("acceltrace: reading the spool: ") + act_strerror(rc));
        return;
    }
    act_snap_op op;
    while (act_snapshot_next(snap, &op) == 1)
        keep(op);
    if (uint64_t skipped = act_snapshot_skipped(snap))
        errors_.push_back("acceltrace: " + std::to_string(skipped) +
                          " damaged spool records were skipped");
    act_snapshot_close(snap);
    if (ops_.empty())
        errors_.push_back("acceltrace: no device activity was recorded in this cycle (for "
                          "OpenCL, is OPENCL_LAYERS set to libacceltrace.so?)");
}

/* Each reason once on stderr too, with what to do: not only in
 * acceltrace.torch.last_errors(). */
void Session::fail(const std::string &why)
{
    errors_.push_back(why);
    static std::mutex mu;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> g(mu);
    if (said.insert(why).second)
        fprintf(stderr, "%s\n", why.c_str());
}

/* The cycle's device ops from the launcher's spool: launched between start
 * and stop, once their times are in (bounded wait for the callbacks). */
void Session::read_shared()
{
    tl_stop_ = act_snapshot_clock_now();
    for (int i = 0; i < 5000 && act_snapshot_pending() > 0; i++)
        usleep(1000);
    act_snapshot *snap = nullptr;
    int rc = act_snapshot_open(nullptr, &snap);
    if (rc != ACT_OK) {
        fail(std::string("acceltrace: reading acceltrace run's spool: ") + act_strerror(rc));
        return;
    }
    act_snap_op op;
    while (act_snapshot_next(snap, &op) == 1) {
        uint64_t at = op.launch_start_ns ? op.launch_start_ns : op.start_ns;
        if (at >= tl_start_ && at <= tl_stop_)
            keep(op);
    }
    act_snapshot_close(snap);
}

void Session::cleanup()
{
    if (!spool_dir_.empty()) {
        nftw(spool_dir_.c_str(), rm_entry, 8, FTW_DEPTH | FTW_PHYS);
        spool_dir_.clear();
    }
}

/* A device lane's sort index: above every host pid, as the builder's
 * (device pids are the device numbers, kineto's GPU convention, or already
 * the sort index when a host pid is that small). */
static int64_t sort_index(int64_t pid)
{
    constexpr int64_t kSortBase = 5000000;
    return pid < kSortBase ? kSortBase + pid : pid;
}

std::unique_ptr<libkineto::DeviceInfo> Session::getDeviceInfo()
{
    if (devices_.empty())
        return nullptr;
    const Device &d = devices_.front();
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{d.pid, sort_index(d.pid), d.name, d.label});
}

/* kineto splices this into "deviceProperties": what the runtime reported
 * of each device (its names; safe() strings need no escaping). */
std::string Session::getDeviceProperties()
{
    std::string out;
    for (const Device &d : devices_)
        out += std::string(out.empty() ? "" : ",") + "{\"name\": \"" + d.name +
               "\", \"vendor\": \"" + d.label + "\", \"pid\": " + std::to_string(d.pid) + "}";
    return out;
}

std::vector<libkineto::ResourceInfo> Session::getResourceInfos()
{
    std::vector<libkineto::ResourceInfo> out;
    for (const Lane &l : lanes_)
        if (!devices_.empty() && l.pid == devices_.front().pid)
            out.push_back(libkineto::ResourceInfo{l.id, l.id, l.pid, l.name});
    return out;
}

/*
 * One device op as kineto activities: the op on its device lane, and, when
 * the builder linked it to a launch, a PRIVATEUSE1_RUNTIME marker at the
 * launch on the host thread as the flow's start. Everything placed here
 * (pid, lane, launch, flow) is the builder's.
 */
void Session::to_activity(const DeviceOp &d, ActivityType type,
                          const libkineto::ITraceActivity *link, libkineto::ActivityLogger &logger)
{
    int64_t start = static_cast<int64_t>(d.op.start_ns) + offset_ns_;
    int64_t end = std::max(static_cast<int64_t>(d.op.end_ns) + offset_ns_, start);
    auto act =
        std::make_unique<libkineto::GenericTraceActivity>(span_, type, safe(d.name, "kernel name"));
    act->startTime = start;
    act->endTime = end;
    act->id = next_id_++;
    act->device = static_cast<int32_t>(d.op.device_pid);
    act->resource = static_cast<int32_t>(d.op.lane_tid);
    act->threadId = static_cast<int32_t>(d.op.lane_tid);
    act->linked = link;
    /* An OpenCL kernel's detail is its program ("program N"), a vendor's
     * its kernel type (devices.c's detail_key). */
    bool program = d.op.source == ACT_SOURCE_OPENCL && !d.detail.empty();
    if (type == ActivityType::CONCURRENT_KERNEL)
        act->addMetadataQuoted("type", program || d.detail.empty() ? std::string("kernel")
                                                                   : safe(d.detail, "kernel type"));
    if (type == ActivityType::CONCURRENT_KERNEL && program)
        act->addMetadataQuoted("program", safe(d.detail, "program"));
    /* kineto's fields: the stream (the vendor's, else the builder's lane)
     * and the device as the event's pid, which the TensorBoard plugin
     * matches against. */
    act->addMetadata("stream", static_cast<int64_t>(d.op.stream));
    act->addMetadata("device", static_cast<int32_t>(d.op.device_pid));
    if (!d.queue_label.empty())
        act->addMetadataQuoted("queue", safe(d.queue_label, "queue label"));
    act->addMetadata("correlation", d.op.corr);
    if (type == ActivityType::CONCURRENT_KERNEL)
        act->addMetadata("global size", "[" + std::to_string(d.op.gsize[0]) + ", " +
                                            std::to_string(d.op.gsize[1]) + ", " +
                                            std::to_string(d.op.gsize[2]) + "]");
    else if (d.op.bytes)
        act->addMetadata("bytes", d.op.bytes);
    if (d.op.flow_id) {
        /* Flow ids in the upper half of uint32, so they cannot meet CUPTI's
         * correlation ids (small numbers) if CUDA is profiled too. */
        uint32_t flow = 0x80000000u + static_cast<uint32_t>(d.op.flow_id);
        auto marker = std::make_unique<libkineto::GenericTraceActivity>(
            span_, ActivityType::PRIVATEUSE1_RUNTIME,
            safe(d.launch_name.empty() ? "launch" : d.launch_name, "launch name"));
        /* clock skew: an arrow must not point back in time */
        int64_t ls = std::min(static_cast<int64_t>(d.op.launch_start_ns) + offset_ns_, start);
        marker->startTime = ls;
        marker->endTime = std::max(static_cast<int64_t>(d.op.launch_end_ns) + offset_ns_, ls);
        marker->id = act->id;
        marker->device = static_cast<int32_t>(d.op.launch_pid);
        marker->resource = static_cast<int32_t>(d.op.launch_tid);
        marker->threadId = static_cast<int32_t>(d.op.launch_tid);
        marker->linked = link;
        marker->addMetadata("correlation", d.op.corr); /* both ends, as HTA joins them */
        marker->flow.id = act->flow.id = flow;
        marker->flow.type = act->flow.type = libkineto::kLinkAsyncCpuGpu;
        marker->flow.start = 1;
        logger.handleGenericActivity(*marker);
        activities_.push_back(std::move(marker));
    }
    logger.handleGenericActivity(*act);
    activities_.push_back(std::move(act));
}

void Session::processTrace(libkineto::ActivityLogger &logger,
                           libkineto::getLinkedActivityCallback getLinked, int64_t startTime,
                           int64_t endTime)
{
    /* getDeviceInfo/getResourceInfos describe one device; the others are
     * described here so that every device lane is named and sorted. */
    for (size_t i = 1; i < devices_.size(); i++) {
        const Device &d = devices_[i];
        logger.handleDeviceInfo(libkineto::DeviceInfo{d.pid, sort_index(d.pid), d.name, d.label},
                                start_ns_);
        for (const Lane &l : lanes_)
            if (l.pid == d.pid)
                logger.handleResourceInfo(libkineto::ResourceInfo{l.id, l.id, l.pid, l.name},
                                          start_ns_);
    }
    std::unordered_map<uint64_t, int64_t> corr_by_ext;
    {
        State &st = state();
        std::lock_guard<std::mutex> g(st.mu);
        corr_by_ext = st.corr_by_ext;
    }
    const bool window = startTime > 0 && endTime > startTime;
    uint64_t skipped = 0;
    /* (user range, device pid, lane) -> its span on that lane */
    std::map<std::tuple<uint64_t, uint32_t, uint32_t>, UserSpan> user_spans;
    for (const DeviceOp &d : ops_) {
        bool known;
        ActivityType type = activity_type(d.op.kind, &known);
        int64_t start = static_cast<int64_t>(d.op.start_ns) + offset_ns_;
        int64_t end = std::max(static_cast<int64_t>(d.op.end_ns) + offset_ns_, start);
        if (!known || !wants(type) || (window && (end < startTime || start > endTime))) {
            skipped++;
            continue;
        }
        const libkineto::ITraceActivity *link = nullptr;
        auto c = corr_by_ext.find(d.op.ext);
        if (d.op.ext && c != corr_by_ext.end() && getLinked)
            link = getLinked(static_cast<int32_t>(c->second));
        to_activity(d, type, link, logger);
        if (d.op.user_ext && wants(ActivityType::GPU_USER_ANNOTATION)) {
            auto key = std::make_tuple(d.op.user_ext, d.op.device_pid, d.op.lane_tid);
            auto it = user_spans.find(key);
            if (it != user_spans.end()) {
                it->second.start = std::min(it->second.start, start);
                it->second.end = std::max(it->second.end, end);
                continue;
            }
            /* the range's link, once per span */
            auto u = corr_by_ext.find(d.op.user_ext);
            const libkineto::ITraceActivity *ulink =
                u != corr_by_ext.end() && getLinked ? getLinked(static_cast<int32_t>(u->second))
                                                    : nullptr;
            user_spans.emplace(key, UserSpan{start, end, d.user_name, ulink});
        }
    }
    for (const auto &kv : user_spans) {
        auto act = std::make_unique<libkineto::GenericTraceActivity>(
            span_, ActivityType::GPU_USER_ANNOTATION, safe(kv.second.name, "range name"));
        act->startTime = kv.second.start;
        act->endTime = kv.second.end;
        act->id = next_id_++;
        act->device = static_cast<int32_t>(std::get<1>(kv.first));
        act->resource = static_cast<int32_t>(std::get<2>(kv.first));
        act->threadId = act->resource;
        act->linked = kv.second.link;
        logger.handleGenericActivity(*act);
        activities_.push_back(std::move(act));
    }
    if (skipped)
        errors_.push_back("acceltrace: " + std::to_string(skipped) +
                          " device ops were not emitted (type not requested or outside the "
                          "window)");
    state().processed++;
    publish_errors();
}

/* Kineto logs errors() at best; keep them where Python can ask. */
void Session::publish_errors()
{
    std::string all;
    for (const std::string &e : errors_)
        all += (all.empty() ? "" : "\n") + e;
    State &st = state();
    std::lock_guard<std::mutex> g(st.mu);
    st.last_errors = all;
}

/* ---- the profiler (factory of sessions) --------------------------------- */

class Profiler : public libkineto::IActivityProfiler
{
  public:
    const std::string &name() const override
    {
        return name_;
    }
    const std::set<ActivityType> &availableActivities() const override
    {
        return available_;
    }
    std::unique_ptr<libkineto::IActivityProfilerSession>
    configure(const std::set<ActivityType> &types, const libkineto::Config &) override
    {
        static const ActivityType wanted[] = {ActivityType::CONCURRENT_KERNEL,
                                              ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET,
                                              ActivityType::GPU_USER_ANNOTATION};
        for (ActivityType t : wanted)
            if (types.count(t)) {
                state().configured++;
                return std::make_unique<Session>(types);
            }
        return nullptr;
    }
    std::unique_ptr<libkineto::IActivityProfilerSession>
    configure(int64_t, int64_t, const std::set<ActivityType> &types,
              const libkineto::Config &config) override
    {
        return configure(types, config);
    }

  private:
    std::string name_{"acceltrace"};
    std::set<ActivityType> available_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                      ActivityType::GPU_MEMSET, ActivityType::COLLECTIVE_COMM,
                                      ActivityType::PRIVATEUSE1_RUNTIME};
};

} // namespace acceltrace_torch

/* ---- entry points for Python (acceltrace/torch/_plugin.py) -------------- */

extern "C" __attribute__((visibility("default"))) const char *act_torch_plugin_built_for(void)
{
    return ACT_TORCH_VERSION;
}

/* Registers the profiler once. Returns NULL, or why it refused. */
extern "C" __attribute__((visibility("default"))) const char *
act_torch_plugin_register(const char *torch_version)
{
    static std::string err;
    static std::once_flag once;
    if (!torch_version || std::string(torch_version) != ACT_TORCH_VERSION) {
        err = std::string("acceltrace torch plugin was built for torch " ACT_TORCH_VERSION
                          " and refuses to load into torch ") +
              (torch_version ? torch_version : "(unknown)");
        return err.c_str();
    }
    std::call_once(once, [] {
        auto factory = []() -> std::unique_ptr<libkineto::IActivityProfiler> {
            return std::make_unique<acceltrace_torch::Profiler>();
        };
#ifdef ACT_HAVE_PRIVATEUSE1_REGISTRY
        torch::profiler::impl::PrivateUse1ProfilerRegistry::instance().registerFactory(factory);
#else
        libkineto::api().registerProfilerFactory(factory);
#endif
    });
    return nullptr;
}

namespace acceltrace_torch
{
/* What torch asks of the PrivateUse1 backend once it has a name: acceltrace
 * names it only so that torch.profiler enables the PrivateUse1 activity, and
 * is no device. Without hooks, torch._C._get_accelerator() (and with it
 * dist.barrier()) raised "Please register PrivateUse1HooksInterface"; these
 * say "no device here", so torch goes on with the CPU. */
struct NoDeviceHooks final : at::PrivateUse1HooksInterface {
    bool isAvailable() const override
    {
        return false;
    }
    bool hasPrimaryContext(c10::DeviceIndex) const override
    {
        return false;
    }
    c10::DeviceIndex deviceCount() const override
    {
        return 0;
    }
};
} // namespace acceltrace_torch

/* Called after acceltrace named the PrivateUse1 backend (never when a real
 * backend owns it, which registers its own hooks). Returns 1 if it
 * registered the hooks, 0 if some were already there. */
extern "C" __attribute__((visibility("default"))) int act_torch_plugin_register_hooks(void)
{
    static acceltrace_torch::NoDeviceHooks hooks;
    if (at::isPrivateUse1HooksRegistered())
        return 0;
    at::RegisterPrivateUse1HooksInterface(&hooks);
    return 1;
}

namespace acceltrace_torch
{
/* torch's operators and record_function ranges as acceltrace ranges (under
 * `acceltrace run`, with no change to the program; docs/torch.md): a global
 * RecordFunction observer, the mechanism kineto's own uses. An aten op is a
 * cpu_op slice, a record_function a user_annotation; a kernel launched
 * inside either takes its External id, as kineto links them. */
static std::unique_ptr<at::ObserverContext> op_enter(const at::RecordFunction &fn)
{
    int op = fn.scope() != at::RecordScope::USER_SCOPE;
    act__op_push(fn.name(), op, fn.seqNr(), fn.forwardThreadId());
    return nullptr;
}

static void op_exit(const at::RecordFunction &, at::ObserverContext *)
{
    act_range_pop();
}
} // namespace acceltrace_torch

/* Observe torch's operators for this process' acceltrace recorder (called
 * by the import hook `run` gives Python programs). NULL, or why not. */
extern "C" __attribute__((visibility("default"))) const char *
act_torch_plugin_observe_ops(const char *torch_version)
{
    static std::string err;
    if (!torch_version || std::string(torch_version) != ACT_TORCH_VERSION) {
        err = std::string("acceltrace torch plugin was built for torch " ACT_TORCH_VERSION
                          " and refuses to observe torch ") +
              (torch_version ? torch_version : "(unknown)");
        return err.c_str();
    }
    if (!act__op_push)
        return "libacceltrace has no act__op_push (an older library)";
    static std::once_flag once;
    std::call_once(once, [] {
        at::addGlobalCallback(
            at::RecordFunctionCallback(acceltrace_torch::op_enter, acceltrace_torch::op_exit)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                         at::RecordScope::USER_SCOPE})
                .needsInputs(false));
    });
    return nullptr;
}

/* Counters for diagnostics and tests: out[0..4] = sessions configured,
 * started, processed; torch ids seen; torch ids paired with a range. */
extern "C" __attribute__((visibility("default"))) void act_torch_plugin_counters(uint64_t out[5])
{
    acceltrace_torch::State &st = acceltrace_torch::state();
    out[0] = st.configured.load();
    out[1] = st.started.load();
    out[2] = st.processed.load();
    out[3] = st.pushes.load();
    out[4] = st.linked_ids.load();
}

/* Errors of the last session that was processed, '\n'-separated (a copy
 * valid until the next call). */
extern "C" __attribute__((visibility("default"))) const char *act_torch_plugin_last_errors(void)
{
    static std::string copy;
    acceltrace_torch::State &st = acceltrace_torch::state();
    std::lock_guard<std::mutex> g(st.mu);
    copy = st.last_errors;
    return copy.c_str();
}

/* The plugin's sanitiser, for the test that it matches acceltrace.torch's
 * exactly. Writes the safe text and the notes (", "-joined) into the
 * caller's buffers; returns the safe text's length. */
extern "C" __attribute__((visibility("default"))) size_t
act_torch_plugin_sanitize(const char *in, char *out, size_t out_size, char *notes,
                          size_t notes_size)
{
    std::string n;
    std::string s = acceltrace_torch::sanitize(in ? in : "", &n);
    if (out_size)
        snprintf(out, out_size, "%s", s.c_str());
    if (notes_size)
        snprintf(notes, notes_size, "%s", n.c_str());
    return s.size();
}
