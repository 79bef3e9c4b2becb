"""_build -- the torch.profiler plugin built for the torch in use, on first
import, when no prebuilt one matches it (issue 31 section 3).

The plugin is one C++ file (plugins/torch/acceltrace_torch.cpp) compiled
against one torch's headers: kineto's classes change layout between
versions, so a wheel cannot carry one plugin for every torch. When
``_plugin`` finds none built for this torch, this module compiles it as
``torch.utils.cpp_extension`` builds extensions: with the C++ compiler
(``CXX``, else ``c++``), torch's include directories and its C++ ABI, linked
to torch's libraries and to the libacceltrace the package loaded; cached
per torch version, ABI and source (a hash of the sources and the library),
so it is built once; under a lock, so that ranks starting together build it
once; one line on stderr while it builds; a clear error, with the
compiler's last lines, when it cannot.

Where: ``ACCELTRACE_TORCH_BUILD_DIR``, else ``$XDG_CACHE_HOME/acceltrace``,
else ``~/.cache/acceltrace``; in it ``torch-plugin/<key>/``.
``ACCELTRACE_TORCH_BUILD=0`` turns building off.

The sources: in an installed package ``acceltrace/torch/_src`` (the .cpp
and the headers it includes) and ``acceltrace/include``; in a checkout the
tree's ``plugins/torch``, ``src``, ``include`` and ``build/include``.
"""

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from .. import _lib

PLUGIN_NAME = "libacceltrace_torch.so"
# What the .cpp includes of acceltrace's own (plugins/torch/CMakeLists.txt).
_HEADERS = ("core/record.h", "timeline/snapshot.h", "writers/sanitize.h")
_PUBLIC = ("acceltrace.h", "acceltrace_version.h")


class PluginBuildError(ImportError):
    """The plugin could not be built for this torch."""


def enabled():
    return os.environ.get("ACCELTRACE_TORCH_BUILD", "1").strip().lower() not in ("0", "no", "off",
                                                                                  "false")


def cache_root():
    env = os.environ.get("ACCELTRACE_TORCH_BUILD_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "acceltrace")


def sources():
    """(cpp, include dirs) of the plugin's sources, or a PluginBuildError."""
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(here)
    libdir = _lib.installed_path("lib", ".")  # a prefix install: P/lib -> P/include
    installed = (os.path.join(here, "_src", "acceltrace_torch.cpp"),
                 [os.path.join(here, "_src"), os.path.join(pkg, "include")] +
                 ([os.path.join(os.path.dirname(libdir), "include")] if libdir else []))
    repo = _lib._REPO
    checkout = (os.path.join(repo, "plugins", "torch", "acceltrace_torch.cpp"),
                [os.path.join(repo, "src"), os.path.join(repo, "include"),
                 os.path.join(repo, "build", "include")])
    for cpp, incs in (installed, checkout):
        if os.path.exists(cpp) and all(any(os.path.exists(os.path.join(d, h)) for d in incs)
                                       for h in _HEADERS + _PUBLIC):
            return cpp, incs
    raise PluginBuildError("the plugin's sources are not in this installation (%s)"
                           % installed[0])


def _digest(paths, extra):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    h.update(extra.encode())
    return h.hexdigest()[:16]


def cxx_standard(tdir):
    """The C++ standard torch builds its extensions with (what its
    ``torch.utils.cpp_extension`` passes): torch 2.14's headers need C++20
    (std::strong_ordering, requires-clauses); older ones take C++17."""
    try:
        with open(os.path.join(tdir, "utils", "cpp_extension.py"), encoding="utf-8") as f:
            return "c++20" if "-std=c++20" in f.read() else "c++17"
    except OSError:
        return "c++17"


def _torch_facts(torch):
    tdir = os.path.dirname(os.path.abspath(torch.__file__))
    return {
        "version": torch.__version__,
        "dir": tdir,
        "std": cxx_standard(tdir),
        "abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
        "registry": os.path.exists(os.path.join(
            tdir, "include", "torch", "csrc", "profiler", "standalone",
            "privateuse1_profiler.h")),
    }


def command(cpp, incs, out, facts, libacceltrace, cxx=None):
    """The compiler command line (a list)."""
    cxx = shlex.split(cxx or os.environ.get("CXX") or "c++")
    tinc = os.path.join(facts["dir"], "include")
    tlib = os.path.join(facts["dir"], "lib")
    cmd = cxx + ["-std=" + facts["std"], "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
                 "-DACT_TORCH_VERSION=\"%s\"" % facts["version"], "-DUSE_KINETO",
                 "-DFMT_HEADER_ONLY=1", "-D_GLIBCXX_USE_CXX11_ABI=%d" % facts["abi"]]
    if facts["registry"]:
        cmd.append("-DACT_HAVE_PRIVATEUSE1_REGISTRY")
    cmd += ["-isystem", tinc, "-isystem", os.path.join(tinc, "kineto"),
            "-isystem", os.path.join(tinc, "torch", "csrc", "api", "include")]
    for d in incs:
        cmd += ["-I", d]
    libdir = os.path.dirname(os.path.abspath(libacceltrace))
    cmd += [cpp, "-o", out, libacceltrace, os.path.join(tlib, "libtorch_cpu.so"),
            os.path.join(tlib, "libc10.so"), "-Wl,-rpath," + libdir, "-Wl,-rpath," + tlib]
    return cmd


def _say(msg):
    try:
        sys.stderr.write("acceltrace: %s\n" % msg)
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - never the program's problem
        pass


def build(torch, cxx=None):
    """The path of a plugin built for this torch (built now if not cached);
    PluginBuildError when it cannot be."""
    cpp, incs = sources()
    facts = _torch_facts(torch)
    lib = _lib.path()
    headers = [next(os.path.join(d, h) for d in incs if os.path.exists(os.path.join(d, h)))
               for h in _HEADERS + _PUBLIC]
    key = "%s-abi%d-%s" % (facts["version"].replace(os.sep, "_"), facts["abi"],
                           _digest([cpp] + headers,
                                   os.path.realpath(lib) + (cxx or "") + facts["std"]))
    dest = os.path.join(cache_root(), "torch-plugin", key)
    out = os.path.join(dest, PLUGIN_NAME)
    if os.path.exists(out + ".json") and os.path.exists(out):
        return out
    try:
        os.makedirs(dest, exist_ok=True)
        lock = open(os.path.join(dest, ".lock"), "w")
    except OSError as exc:
        raise PluginBuildError("cannot use the build folder %s: %s" % (dest, exc)) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it
        if os.path.exists(out + ".json") and os.path.exists(out):
            return out
        _say("building the torch.profiler plugin for torch %s (once; cached in %s)..."
             % (facts["version"], dest))
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=dest)
        os.close(fd)
        cmd = command(cpp, incs, tmp, facts, lib, cxx)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as exc:
            os.unlink(tmp)
            raise PluginBuildError("cannot run the C++ compiler %r: %s (set CXX)"
                                   % (cmd[0], exc)) from None
        if r.returncode != 0:
            os.unlink(tmp)
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-30:])
            raise PluginBuildError(
                "building the torch.profiler plugin for torch %s failed (exit %d):\n  %s\n%s"
                % (facts["version"], r.returncode, " ".join(shlex.quote(c) for c in cmd), tail))
        os.replace(tmp, out)
        with open(out + ".json.tmp", "w", encoding="utf-8") as f:
            json.dump({"torch_version": facts["version"], "torch_dir": facts["dir"],
                       "built": "on import"}, f)
        os.replace(out + ".json.tmp", out + ".json")
        _say("built %s" % out)
    return out


def clear():
    """Remove every cached plugin build (``acceltrace.torch`` rebuilds on
    next use)."""
    shutil.rmtree(os.path.join(cache_root(), "torch-plugin"), ignore_errors=True)
