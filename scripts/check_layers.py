#!/usr/bin/env python3
"""check_layers.py -- dependencies in src/ point one way (docs/architecture.md).

Every folder of src/ is a layer; a file may include headers of its own layer
and of the layers below it, never of a layer above. Run by ./build.sh test;
exits 1 naming each include that points up. There are no exceptions: a
dependency that needs one is a design problem to solve, not to list.

Layers, bottom to top (a layer may include every layer listed before it,
except where ALLOWED below says otherwise):
  core      recorder, spool file format, clock, configuration, logging
  init      start-up stages, hook groups, lifecycle (stop handlers)
  sources   opencl/, activity/ (+ cupti/, mspti/), nvtx/: they only record
  rt        the runtime-API tables (act_rt)
  timeline  reader and builder: records -> one joined timeline
  writers   Chrome trace, summary: they only read the timeline
  api       public entry points: annotate, start/stop, sessions, export
Sources and rt never include timeline or writers; timeline never includes
sources, rt or writers; writers never include sources or rt.

With --build DIR (after the build; ./build.sh test passes build/), calls
are checked too, from the library's object files (nm): a file may call a
function defined in its own layer or in a layer it may include, never one
above -- headers do not hide a call, and include/'s declarations do not
exempt their definitions. The one stated allowance is PUBLIC_CALLS below:
the public API that a lower layer calls as a program would. And no two
files may call each other in a loop (a circle: a cycle of the file call
graph, found as its strongly connected components), except the circles
listed in KNOWN_CIRCLES, which may only shrink: a new circle, or a larger
one, fails.
"""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
INCLUDE = os.path.join(ROOT, "include")

ALLOWED = {
    "core": set(),
    "init": {"core"},
    "sources": {"core", "init"},
    "rt": {"core", "init"},
    "timeline": {"core"},
    "writers": {"core", "timeline"},
    "api": {"core", "init", "sources", "rt", "timeline", "writers"},
}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# The public API (include/acceltrace.h, defined in api/) that a lower
# layer may call, and why. Nothing else of a higher layer is callable.
PUBLIC_CALLS = {
    # NVTX injection forwards a program's own annotations to ours: it calls
    # the annotation API exactly as the program would (docs/annotations.md).
    "sources/nvtx/": {"act_range_push", "act_range_pop", "act_range_start", "act_range_end",
                      "act_mark", "act_is_enabled"},
    # The OpenCL source reports device memory and its leak report as a
    # program reports counters and metadata (docs/opencl.md).
    "sources/opencl/": {"act_counter", "act_metadata_set_json"},
    # A backend's profiler_start/stop are act_start()/act_stop() by contract
    # (docs/rt.md; tests/rt/test_rt_profiler.c interposes them).
    "rt/": {"act_start", "act_stop"},
}

# Circles allowed to remain while they are being broken up; each entry
# names its files. Empty: none is left (the last, the recorder's files with
# the capture window, logging and configuration, went when the recorder
# learnt of the window through a listener, core/internal.h, and its files
# were layered: spool_file < ring < prefault < fork < lifecycle < chunks <
# strings, ranges). A listed circle that is gone fails too, so the list
# only shrinks.
KNOWN_CIRCLES = []


def layer_of(path):
    rel = os.path.relpath(path, SRC)
    if rel.startswith(".."):
        return None  # include/ (the public headers) or outside src: allowed
    top = rel.split(os.sep)[0]
    return top if top in ALLOWED else None


def resolve(name, here):
    """The file an #include "name" in directory `here` means (the build's
    include path: the including file's folder, src/, src/core, include/)."""
    for d in (here, SRC, os.path.join(SRC, "core"), INCLUDE):
        p = os.path.normpath(os.path.join(d, name))
        if os.path.exists(p):
            return p
    return None


def object_symbols(build):
    """{source path under src/: (defined functions, used symbols)} from the
    library's object files in `build`."""
    objdir = os.path.join(build, "src", "CMakeFiles", "act_objects.dir")
    if not os.path.isdir(objdir):
        sys.exit(f"check_layers: no object files in {objdir} (build first)")
    syms = {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            path = os.path.join(dirpath, f)
            src = os.path.relpath(path, objdir)[:-2]
            out = subprocess.run(["nm", "-P", path], capture_output=True, text=True,
                                 check=True).stdout
            defined, used = set(), set()
            for line in out.splitlines():
                parts = line.split()
                if len(parts) < 2:
                    continue
                if parts[1] == "U":
                    used.add(parts[0])
                elif parts[1] == "T":  # functions; data is not a call
                    defined.add(parts[0])
            syms[src] = (defined, used)
    return syms


def circles(edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def check_calls(build):
    syms = object_symbols(build)
    where = {}
    for src, (defined, _) in syms.items():
        for name in defined:
            where.setdefault(name, src)
    bad, edges = [], collections.defaultdict(set)
    for src, (_, used) in sorted(syms.items()):
        mine = src.split("/")[0]
        for name in sorted(used):
            target = where.get(name)
            if target is None or target == src:
                continue
            edges[src].add(target)
            theirs = target.split("/")[0]
            if theirs == mine or theirs in ALLOWED.get(mine, set()):
                continue
            stated = any(src.startswith(p) and name in names
                         for p, names in PUBLIC_CALLS.items())
            if not stated:
                bad.append(f"src/{src}: {mine} calls {name} (src/{target}, {theirs}), "
                           f"which is above it")
    known = [sorted(c) for c in KNOWN_CIRCLES]
    found = circles(edges)
    for k in known:
        if k not in found:
            bad.append("a known circle is gone, remove it from KNOWN_CIRCLES: " +
                       " -> ".join(f"src/{c}" for c in k))
    for comp in found:
        if comp in known:
            continue
        grew = [k for k in known if set(k) < set(comp)]
        why = " (a known circle grew)" if grew else ""
        bad.append("circle of files" + why + ": " + " -> ".join(f"src/{c}" for c in comp))
    return bad


def main():
    build = None
    if len(sys.argv) == 3 and sys.argv[1] == "--build":
        build = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: check_layers.py [--build DIR]")
    bad = []
    for dirpath, _, files in os.walk(SRC):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".def")):
                continue
            path = os.path.join(dirpath, f)
            mine = layer_of(path)
            if mine is None:
                bad.append(f"{os.path.relpath(path, ROOT)}: folder is not a known layer")
                continue
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for m in INC.finditer(text):
                target = resolve(m.group(1), dirpath)
                if target is None:
                    continue  # generated or toolkit header
                theirs = layer_of(target)
                if theirs is None or theirs == mine or theirs in ALLOWED[mine]:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {mine} includes "
                           f"{os.path.relpath(target, ROOT)} ({theirs}), which is above it")
    if build:
        bad += check_calls(build)
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} include(s), call(s) or circle(s) against the layers "
              "(docs/architecture.md)")
        return 1
    print("check_layers: every include" + (" and every call" if build else "") +
          " points down the layers" + (f"; circles left: {len(KNOWN_CIRCLES)} known"
                                       if build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
