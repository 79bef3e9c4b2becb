"""The annotation calls of the Python package (range, push/pop, mark, counter,
metadata) through both bindings: the compiled extension (acceltrace._native)
and the ctypes fallback (ACCELTRACE_PYTHON_BINDING=ctypes). Both must write
the same trace, raise the same errors and keep the library's range stack
balanced. Their speed is a benchmark (bench/python_annotate.py), not a test."""

import json

import acceltrace

from conftest import need_trace_writer


def _window_counts(trace):
    return trace["acceltrace"]["outside_window"]


def test_ranges_outside_the_capture_window_are_balanced(lib, tmp_path):
    """A range entered and left while the capture window is closed moves the
    library's range stack both ways (its push and its pop are each counted
    outside the window), as the same range written in C does; a range that
    began outside the window and ends inside it is not written."""
    need_trace_writer(tmp_path)
    out = tmp_path / "t.json"
    with acceltrace.profile(output=out, capture_api=True):
        for _ in range(3):
            with acceltrace.range("before"):
                pass
        with acceltrace.range("straddles"):
            acceltrace.capture_start()
        with acceltrace.range("inside"):
            pass
    trace = json.loads(out.read_text(encoding="utf-8"))
    counts = _window_counts(trace)
    assert counts["range_push"] == 4
    assert counts["range_pop"] == 4
    assert trace["acceltrace"]["unbalanced_pops"] == 0
    names = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert names == ["inside"]
