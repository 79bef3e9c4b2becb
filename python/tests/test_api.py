"""The acceltrace Python package on its own (no torch): library discovery,
errors, sessions, ranges, marks, counters, metadata and rt()."""

import json
import os
import threading

import pytest

import acceltrace
from acceltrace import _errors, _lib

from conftest import need, need_trace_writer, run_python


# ---- without the library ------------------------------------------------------

def test_missing_library_is_a_clear_import_time_error():
    rc, out, err = run_python(
        "import acceltrace\n"
        "try:\n"
        "    acceltrace.library_version()\n"
        "except acceltrace.LibraryNotFoundError as e:\n"
        "    print('ERR', e)\n",
        env={"ACCELTRACE_LIBRARY": "/nonexistent/libacceltrace.so"})
    assert rc == 0, err
    assert out.startswith("ERR libacceltrace could not be loaded")
    assert "/nonexistent/libacceltrace.so (no such file)" in out
    assert "ACCELTRACE_LIBRARY" in out


def test_library_search_order():
    paths = _lib.candidate_paths() if not os.environ.get("ACCELTRACE_LIBRARY") else None
    if paths is not None:
        assert paths[0].endswith(os.path.join("build", "lib", "libacceltrace.so"))
        assert paths[1:] == ["libacceltrace.so.0", "libacceltrace.so"]


def test_error_classes_follow_the_codes():
    assert _errors.error_class(acceltrace.ACT_E_INVAL) is acceltrace.InvalidArgumentError
    assert issubclass(acceltrace.InvalidArgumentError, ValueError)
    assert issubclass(acceltrace.InvalidJSONError, ValueError)
    assert issubclass(acceltrace.TraceIOError, OSError)
    assert _errors.error_class(-999) is acceltrace.AcceltraceError
    e = _errors.make_error(-7, "act_metadata_set_json", lambda c: "invalid JSON")
    assert isinstance(e, acceltrace.InvalidJSONError)
    assert e.code == -7
    assert str(e) == "act_metadata_set_json failed: invalid JSON (-7)"


def test_names_are_checked_before_reaching_c():
    with pytest.raises(ValueError, match="NUL"):
        acceltrace.range("a\0b")
    with pytest.raises(TypeError, match="range name must be str"):
        acceltrace.range(42)


# ---- with the library ------------------------------------------------------------

def test_version_and_strerror(lib):
    need("act_version", "act_strerror")
    assert acceltrace.library_version() == acceltrace.__version__
    texts = {acceltrace.strerror(c) for c in range(-13, 0)}
    assert len(texts) == 13 and all(texts)
    assert acceltrace.library_path()


def test_annotations_outside_a_session_are_quiet(lib):
    need("act_range_push", "act_range_pop", "act_mark", "act_counter", "act_is_enabled")
    assert not acceltrace.is_enabled()
    with acceltrace.range("nobody records this"):
        acceltrace.mark("m")
        acceltrace.counter("c", 1.0)


def test_metadata_outside_a_session_raises(lib):
    need("act_metadata_set")
    with pytest.raises(acceltrace.DisabledError, match="act_metadata_set failed"):
        acceltrace.metadata("k", "v")


@acceltrace.range("decorated")
def _decorated(x):
    return x * 2


@acceltrace.range
def _bare():
    return "bare"


def _session_symbols(tmp_path):
    need("act_session_begin", "act_session_end", "act_range_push", "act_range_pop",
         "act_mark", "act_counter", "act_metadata_set", "act_metadata_set_json",
         "act_is_enabled")
    need_trace_writer(tmp_path)


def _events(trace, name):
    return [e for e in trace["traceEvents"] if e.get("name") == name and e.get("ph") != "M"]


def test_profile_writes_a_trace_with_everything(lib, tmp_path):
    _session_symbols(tmp_path)
    out = tmp_path / "t.json"
    with acceltrace.profile(output=out, trace_name="py-api") as p:
        assert p.running and acceltrace.is_enabled()
        with acceltrace.range("outer"):
            with acceltrace.range("inner"):
                assert _decorated(21) == 42
                assert _bare() == "bare"
            acceltrace.mark("checkpoint")
            acceltrace.counter("loss", 0.25)
        acceltrace.metadata("plain", 'say "hi" \\ \n')
        acceltrace.metadata("doc", {"lr": 0.1, "tags": ["a", "é"]})
        acceltrace.metadata_json("raw", '{"n": 1}')
    assert not acceltrace.is_enabled()
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert trace["traceName"] == "py-api"
    assert trace["plain"] == 'say "hi" \\ \n'  # acceltrace's writer is lossless
    assert trace["doc"] == {"lr": 0.1, "tags": ["a", "é"]}
    assert trace["raw"] == {"n": 1}
    (outer,), (inner,) = _events(trace, "outer"), _events(trace, "inner")
    assert outer["ph"] == inner["ph"] == "X"
    assert outer["ts"] <= inner["ts"]
    assert inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.001
    assert len(_events(trace, "decorated")) == 1
    assert len(_events(trace, "_bare")) == 1
    assert len(_events(trace, "checkpoint")) == 1
    assert len(_events(trace, "loss")) == 1


def test_ranges_on_threads_land_on_their_threads(lib, tmp_path):
    _session_symbols(tmp_path)
    out = tmp_path / "t.json"

    def work(i):
        with acceltrace.range("thread-%d" % i):
            pass
    with acceltrace.profile(output=out):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    trace = json.loads(out.read_text(encoding="utf-8"))
    tids = {_events(trace, "thread-%d" % i)[0]["tid"] for i in range(3)}
    assert len(tids) == 3


def test_trace_is_written_when_the_body_raises(lib, tmp_path):
    _session_symbols(tmp_path)
    out = tmp_path / "t.json"
    with pytest.raises(KeyError):
        with acceltrace.profile(output=out):
            with acceltrace.range("failing"):
                raise KeyError("boom")
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert len(_events(trace, "failing")) == 1
    assert not acceltrace.is_enabled()


def test_invalid_json_metadata_is_rejected(lib, tmp_path):
    _session_symbols(tmp_path)
    with acceltrace.profile(output=tmp_path / "t.json"):
        with pytest.raises(acceltrace.InvalidJSONError, match="act_metadata_set_json failed"):
            acceltrace.metadata_json("bad", "{not json")
        with pytest.raises(ValueError):
            acceltrace.metadata("nan", float("nan"))
    trace = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert "bad" not in trace


def test_integers_out_of_range_are_refused_not_wrapped(lib, tmp_path):
    with pytest.raises(OverflowError):
        acceltrace.strerror(2 ** 70)
    with pytest.raises(OverflowError):
        acceltrace.strerror(-2 ** 40)
    with pytest.raises(OverflowError):
        acceltrace.profile(output=tmp_path / "t.json", buffer_size=2 ** 70)
    with pytest.raises(OverflowError):
        acceltrace.profile(output=tmp_path / "t.json", buffer_size=2 ** 64)
    assert not acceltrace.is_enabled()


def test_metadata_depth_limit_and_big_integers(lib, tmp_path):
    _session_symbols(tmp_path)
    out = tmp_path / "t.json"
    deep = ok = []
    for _ in range(63):
        ok = [ok]
    deep = [ok]                      # 65 levels
    very = []
    for _ in range(5000):            # deeper than json.dumps recurses
        very = [very]
    with acceltrace.profile(output=out):
        acceltrace.metadata("ok", ok)  # 64 levels
        with pytest.raises(acceltrace.InvalidJSONError):
            acceltrace.metadata("deep", deep)
        with pytest.raises(acceltrace.InvalidJSONError):
            acceltrace.metadata("very", very)
        with pytest.raises(acceltrace.InvalidJSONError):
            acceltrace.metadata_json("deep_text", "[" * 65 + "]" * 65)
        acceltrace.metadata("big", 2 ** 100)
        acceltrace.metadata("neg", -2 ** 100)
    trace = json.loads(out.read_text(encoding="utf-8"))
    # Valid JSON that every reader loads (jansson refuses integers beyond
    # 64 bits): a real number, and a line in the errors that says so.
    assert trace["big"] == float(2 ** 100) and trace["neg"] == -float(2 ** 100)
    assert trace["ok"] == ok
    assert "deep" not in trace and "very" not in trace and "deep_text" not in trace
    assert len([e for e in trace["acceltrace"]["errors"] if "beyond 64 bits" in e]) == 2


def test_relative_spool_dir_is_an_invalid_argument(lib, tmp_path, monkeypatch):
    _session_symbols(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(acceltrace.InvalidArgumentError):
        acceltrace.profile(output=tmp_path / "t.json", spool_dir="rel/spool").start()
    assert not (tmp_path / "rel").exists()
    assert not acceltrace.is_enabled()


def test_start_stop_and_state_errors(lib, tmp_path):
    _session_symbols(tmp_path)
    out = tmp_path / "t.json"
    p = acceltrace.start(out)
    with pytest.raises(acceltrace.StateError):
        acceltrace.start(tmp_path / "other.json")
    with pytest.raises(acceltrace.StateError):
        p.start()
    with acceltrace.range("between"):
        pass
    assert acceltrace.stop() == os.fspath(out)
    with pytest.raises(acceltrace.StateError):
        acceltrace.stop()
    assert len(_events(json.loads(out.read_text(encoding="utf-8")), "between")) == 1


def test_two_sessions_at_once_are_refused_by_the_library(lib, tmp_path):
    _session_symbols(tmp_path)
    with acceltrace.profile(output=tmp_path / "a.json"):
        with pytest.raises(acceltrace.AcceltraceError) as info:
            acceltrace.profile(output=tmp_path / "b.json").start()
        assert info.value.code is not None and info.value.code < 0


def test_capture_range(lib, tmp_path):
    _session_symbols(tmp_path)
    need("act_start", "act_stop")
    out = tmp_path / "t.json"
    with acceltrace.profile(output=out, capture_api=True):
        with acceltrace.range("before"):
            pass
        acceltrace.capture_start()
        with acceltrace.range("inside"):
            pass
        acceltrace.capture_stop()
        with acceltrace.range("after"):
            pass
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert len(_events(trace, "inside")) == 1
    assert _events(trace, "before") == [] and _events(trace, "after") == []


def test_rt_is_the_same_object_every_call(lib):
    need("act_rt", "act_rt_for")
    a = acceltrace.rt()
    assert a is acceltrace.rt()
    assert acceltrace.rt("opencl") is acceltrace.rt("opencl")
    assert a.name in ("opencl", "cuda", "ascend")
    assert isinstance(a.error_string(0), str) and a.error_string(0)


def test_rt_null_never_reaches_the_runtime(lib):
    need("act_rt_for")
    from acceltrace import _rt
    r = acceltrace.rt("opencl")
    assert r.host_register(0, 4096, r.HOST_REG_PINNED) == _rt.ERROR_INVALID_PARAM
    assert r.host_unregister(0) == _rt.ERROR_INVALID_PARAM
    assert r.stream_create(0) == _rt.ERROR_INVALID_PARAM
    assert r.stream_destroy(0) == _rt.ERROR_INVALID_PARAM
    assert "param" in r.error_string(_rt.ERROR_INVALID_PARAM).lower()


def test_rt_opencl_on_pocl(lib):
    need("act_rt_for")
    import ctypes
    import mmap
    from acceltrace import _rt
    r = acceltrace.rt("opencl")
    try:
        n = r.device_count()
    except _rt.RtError as exc:
        missing("no OpenCL device (PoCL): %s" % exc)
    assert n >= 1
    free, total = r.mem_get_info(0)
    assert total > 0 and (free is None or free <= total)
    with pytest.raises(_rt.RtError, match="mem_get_info failed"):
        r.mem_get_info(n + 5)
    # Page-aligned memory, each flag combination; size 0; double unregister.
    page = mmap.mmap(-1, 4096)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    for flags in (r.HOST_REG_PINNED, r.HOST_REG_MAPPED, r.HOST_REG_PINNED | r.HOST_REG_MAPPED):
        assert r.host_register(addr, 4096, flags) == 0, r.error_string(
            r.host_register(addr, 4096, flags))
        assert r.host_unregister(addr) == 0
    assert r.host_register(addr, 0, r.HOST_REG_PINNED) != 0
    assert r.host_unregister(addr) == _rt.ERROR_NOT_REGISTERED
    # A stream written into a pointer-sized slot, as with npurt.
    slot = ctypes.c_void_p()
    assert r.stream_create(ctypes.addressof(slot)) == 0
    assert slot.value
    assert r.synchronize() == 0
    assert r.stream_destroy(slot.value) == 0
    del slot
    page.close()


def test_rt_for_an_unknown_backend_is_an_error(lib):
    need("act_rt_for")
    with pytest.raises(acceltrace.AcceltraceError, match="no runtime-API table"):
        acceltrace.rt("no-such-backend")


def test_prototypes_match_the_public_header():
    """Every function of include/acceltrace.h is declared to ctypes with the
    header's number of parameters (the package is written against it)."""
    import re
    from conftest import REPO
    with open(os.path.join(REPO, "include", "acceltrace.h"), encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    decls = dict(re.findall(r"^[\w\s\*]*?\b(act_\w+)\(([^)]*)\);", text, flags=re.M))
    assert decls, "no declarations found"
    for name, params in decls.items():
        assert name in _lib._PROTOTYPES, name
        n = 0 if params.strip() in ("", "void") else params.count(",") + 1
        assert len(_lib._PROTOTYPES[name][1]) == n, name
