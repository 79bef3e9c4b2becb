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

    from acceltrace.hta import TraceAnalysis
    analyzer = TraceAnalysis(trace_dir="traces/")
    analyzer.get_queue_length_summary()
"""

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


def TraceAnalysis(trace_dir, **kwargs):
    """``hta.trace_analysis.TraceAnalysis`` over ``trace_dir`` (one trace
    per rank), with :func:`teach_launch_names` applied."""
    from hta.trace_analysis import TraceAnalysis as _HtaTraceAnalysis

    analyzer = _HtaTraceAnalysis(trace_dir=trace_dir, **kwargs)
    teach_launch_names(analyzer)
    return analyzer
