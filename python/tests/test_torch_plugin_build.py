"""The torch.profiler plugin built on first import for the torch in use
(issue 31 section 3; python/acceltrace/torch/_build.py).

A wheel cannot carry a plugin for every torch (kineto's classes change
between versions): when none matches, acceltrace.torch compiles the one
C++ file for this torch, once, into a cache, under a lock, saying so on
stderr; a compiler that fails gives its output. The same path from a fresh
venv and a wheel is checked by tests/package/check_package.sh.
"""

import json
import os

import pytest

torch = pytest.importorskip("torch")

from acceltrace.torch import _build  # noqa: E402

from conftest import run_python  # noqa: E402


def test_built_once_for_this_torch_and_loaded(tmp_path):
    env = {"ACCELTRACE_TORCH_BUILD_DIR": str(tmp_path)}
    code = "import torch\nfrom acceltrace.torch import _build\nprint(_build.build(torch))\n"
    rc, out, err = run_python(code, env=env)
    assert rc == 0, err[-3000:]
    path = out.strip().splitlines()[-1]
    assert path.startswith(str(tmp_path)) and os.path.exists(path)
    assert "building the torch.profiler plugin for torch %s" % torch.__version__ in err
    with open(path + ".json") as f:
        assert json.load(f)["torch_version"] == torch.__version__
    # cached: the second import builds nothing
    rc, out2, err2 = run_python(code, env=env)
    assert rc == 0 and out2.strip().splitlines()[-1] == path and "building" not in err2
    # and it is a working plugin for this torch
    rc, out3, err3 = run_python(
        "import torch\nimport acceltrace.torch as at\n"
        "from torch.profiler import profile, ProfilerActivity as A\n"
        "with profile(activities=[A.CPU, A.PrivateUse1]):\n    torch.ones(4) + 1\n"
        "print(at.plugin_loaded(), at.plugin_path(), at.counters()['processed'])\n",
        env={"ACCELTRACE_TORCH_PLUGIN": path})
    assert rc == 0, err3[-3000:]
    assert out3.split() == ["True", path, "1"]


def test_a_compiler_that_fails_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCELTRACE_TORCH_BUILD_DIR", str(tmp_path))
    with pytest.raises(_build.PluginBuildError) as e:
        _build.build(torch, cxx="sh -c 'echo no-such-header.h: not found >&2; exit 3'")
    msg = str(e.value)
    assert "failed (exit 3)" in msg and "no-such-header.h: not found" in msg
    assert not any(f.endswith(".so") for _, _, fs in os.walk(tmp_path) for f in fs)


def test_a_missing_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCELTRACE_TORCH_BUILD_DIR", str(tmp_path))
    with pytest.raises(_build.PluginBuildError, match="cannot run the C\\+\\+ compiler"):
        _build.build(torch, cxx="/nonexistent/c++")


def test_the_cxx_standard_is_torchs():
    """torch 2.14's headers need C++20 (-std=c++17 failed with 40+ errors):
    the plugin is built with the standard torch gives its extensions."""
    import torch.utils.cpp_extension as ce
    with open(ce.__file__, encoding="utf-8") as f:
        want = "c++20" if "-std=c++20" in f.read() else "c++17"
    assert _build.cxx_standard(os.path.dirname(torch.__file__)) == want


def test_building_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("ACCELTRACE_TORCH_BUILD", "0")
    assert not _build.enabled()
    monkeypatch.setenv("ACCELTRACE_TORCH_BUILD", "1")
    assert _build.enabled()
