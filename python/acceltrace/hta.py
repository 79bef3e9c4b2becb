"""HolisticTraceAnalysis (HTA) on acceltrace traces.

acceltrace traces follow kineto's fields (integer ``args.stream`` and
``args.device`` on device ops, ``correlation`` on both ends of a launch,
``distributedInfo`` for the rank), so HTA reads them as it reads
torch.profiler's. One thing HTA cannot be told: its launch analyses
(queue length, kernel-launch statistics) look for launch calls by fixed
CUDA/HIP names (``cudaLaunchKernel``, ``cudaMemcpyAsync``,
``cudaMemsetAsync``, ...; ``hta/common/trace_symbol_table.py``) and have no
setting for others. :func:`teach_launch_names` maps the launch calls of
the other runtimes onto those names inside an analyser's data frames only;
the trace file keeps its own names.

And one thing HTA gets wrong on any trace with fractional microseconds
(kineto's nanosecond times as well as these): it rounds them to microseconds with
the start rounded up and the end down (``round_down_time_stamps``), so
every event shorter than a microsecond that does not cross a microsecond
boundary comes out -1 us long, and on a trace of many short kernels its
temporal breakdown fails an assertion (idle time longer than the whole).
:func:`TraceAnalysis` has HTA round both ends down instead while it reads
the traces: a monotone rounding, which keeps order, nesting and
adjacency and makes no duration negative (HTA_DISABLE_NS_ROUNDING=1 is
still obeyed).

    from acceltrace.hta import TraceAnalysis
    analyzer = TraceAnalysis(trace_dir="traces/")
    analyzer.get_queue_length_summary()
"""

import contextlib

# HTA's name -> the launch calls of other runtimes that do the same.
LAUNCH_ALIASES = {
    "cudaLaunchKernel": (
        "clEnqueueNDRangeKernel",
        "clEnqueueTask",
        "clEnqueueNativeKernel",
    ),
    "cudaMemcpyAsync": (
        "clEnqueueReadBuffer",
        "clEnqueueWriteBuffer",
        "clEnqueueCopyBuffer",
        "clEnqueueReadBufferRect",
        "clEnqueueWriteBufferRect",
        "clEnqueueCopyBufferRect",
        "clEnqueueReadImage",
        "clEnqueueWriteImage",
        "clEnqueueCopyImage",
        "clEnqueueCopyImageToBuffer",
        "clEnqueueCopyBufferToImage",
        "clEnqueueMapBuffer",
        "clEnqueueMapImage",
        "clEnqueueUnmapMemObject",
        "clEnqueueSVMMemcpy",
        "clEnqueueSVMMap",
        "clEnqueueSVMUnmap",
    ),
    "cudaMemsetAsync": (
        "clEnqueueFillBuffer",
        "clEnqueueFillImage",
        "clEnqueueSVMMemFill",
    ),
}


# HTA's category of launch calls (its critical path and call stacks take
# cpu_op, cuda_runtime and cuda_driver events only) -> the categories
# acceltrace writes for the runtimes it traces.
RUNTIME_ALIASES = ("opencl_runtime", "privateuse1_runtime", "runtime")


def teach_runtime_category(analyzer):
    """Let ``analyzer`` take the runtime calls of OpenCL, the torch plugin
    and other runtimes as HTA takes CUDA's (``cuda_runtime``), inside its
    data frames only: its critical path analysis then finds the launch of
    every kernel. Returns how many events it mapped."""
    trace = analyzer.t
    symbols = trace.symbol_table
    symbols.add_symbols(["cuda_runtime"])
    index = symbols.get_sym_id_map()
    ids = [index[c] for c in RUNTIME_ALIASES if c in index]
    mapped = 0
    for df in trace.traces.values():
        if ids:
            hit = df["cat"].isin(ids)
            mapped += int(hit.sum())
            df.loc[hit, "cat"] = index["cuda_runtime"]
    return mapped


def teach_launch_names(analyzer):
    """Let ``analyzer`` (an ``hta.trace_analysis.TraceAnalysis``) count the
    launch calls of OpenCL (and the torch plugin's launch markers, which
    carry the same names) as launches. Returns how many events it mapped."""
    trace = analyzer.t
    symbols = trace.symbol_table
    symbols.add_symbols(list(LAUNCH_ALIASES))
    index = symbols.get_sym_id_map()
    mapped = 0
    for df in trace.traces.values():
        for alias, names in LAUNCH_ALIASES.items():
            ids = [index[n] for n in names if n in index]
            if not ids:
                continue
            hit = df["name"].isin(ids)
            mapped += int(hit.sum())
            df.loc[hit, "name"] = index[alias]
    return mapped


def floor_time_stamps(df):
    """Round a parsed trace's float ``ts`` and ``ts + dur`` (us) down to
    whole microseconds, in place: what HTA's ``round_down_time_stamps``
    is for, without its negative durations (see the module's note)."""
    import numpy as np
    from hta.configs import env_options

    if df["ts"].dtype != np.dtype("float64") or env_options.disable_ns_rounding():
        return
    end = np.floor(df["ts"] + df["dur"])
    df["ts"] = np.floor(df["ts"])
    df["end"] = end
    df["dur"] = end - df["ts"]


@contextlib.contextmanager
def _monotone_rounding():
    """HTA's parser rounds with floor_time_stamps while inside."""
    from hta.common import trace_parser

    saved = getattr(trace_parser, "round_down_time_stamps", None)
    if saved is None:  # another HTA: leave it as it is
        yield
        return
    trace_parser.round_down_time_stamps = floor_time_stamps
    try:
        yield
    finally:
        trace_parser.round_down_time_stamps = saved


def TraceAnalysis(trace_dir, **kwargs):
    """``hta.trace_analysis.TraceAnalysis`` over ``trace_dir`` (one trace
    per rank), read with monotone microsecond rounding and with
    :func:`teach_launch_names` and :func:`teach_runtime_category` applied."""
    from hta.trace_analysis import TraceAnalysis as _HtaTraceAnalysis

    with _monotone_rounding():
        analyzer = _HtaTraceAnalysis(trace_dir=trace_dir, **kwargs)
    teach_launch_names(analyzer)
    teach_runtime_category(analyzer)
    return analyzer
