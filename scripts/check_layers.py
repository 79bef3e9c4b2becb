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
"""
import os
import re
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


def main():
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
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} include(s) point up the layers (docs/architecture.md)")
        return 1
    print("check_layers: every include points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
