"""Kernels of different programs that share a name are told apart (issue 31
section 5: pytorch_dlprim builds 27 programs for 19 kernel names; its
`exec` came from several).

Each OpenCL kernel carries its program, "program N" (the process's Nth
program created), as the `program` arg; the summary keeps one row per
(program, name) and shows the program only where a name is shared.
"""

import json
import os
import subprocess
import sys
import textwrap

from test_analysers import BIN, need_build, need_module

SCRIPT = textwrap.dedent('''\
    import numpy as np
    import pyopencl as cl
    ctx = cl.create_some_context(interactive=False)
    q = cl.CommandQueue(ctx)
    a = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] += 1.0f; }").build()
    b = cl.Program(ctx, "__kernel void k(__global float *y) { y[get_global_id(0)] *= 2.0f; }").build()
    c = cl.Program(ctx, "__kernel void solo(__global float *y) { y[get_global_id(0)] = 0.0f; }").build()
    d = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    ka, kb = cl.Kernel(a, "k"), cl.Kernel(b, "k")
    for _ in range(2):
        ka(q, (1024,), None, d)
    for _ in range(3):
        kb(q, (1024,), None, d)
    cl.Kernel(c, "solo")(q, (1024,), None, d)
    q.finish()
    ''')


def test_kernels_of_two_programs_sharing_a_name(tmp_path):
    need_build()
    need_module("pyopencl")
    p = tmp_path / "progs.py"
    p.write_text(SCRIPT)
    out = str(tmp_path / "t.json")
    r = subprocess.run([os.path.join(BIN, "acceltrace"), "run", "-f", "-o", out, "--torch=off",
                        "--", sys.executable, str(p)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    progs = {}
    for k in kernels:
        progs.setdefault(k["name"], []).append(k["args"]["program"])
    assert sorted(set(progs["k"])) == ["program 1", "program 2"]
    assert sorted(progs["k"]).count("program 1") == 2 and progs["solo"] == ["program 3"]
    # the summary: one row per program where the name is shared, the bare
    # name where it is not; the same from the trace file
    for text in (r.stderr, subprocess.run([os.path.join(BIN, "acceltrace"), "summary", out],
                                          capture_output=True, text=True).stdout):
        rows = [line.split() for line in text.splitlines()]
        names = {" ".join(w[:3]) for w in rows if w[:1] == ["k"]}
        assert names == {"k (program 1)", "k (program 2)"}, text
        assert any(w[:1] == ["solo"] and w[1:2] != ["(program"] for w in rows), text
