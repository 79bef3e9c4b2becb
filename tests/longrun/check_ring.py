#!/usr/bin/env python3
"""check_ring.py -- the flight recorder (`acceltrace run --ring=SIZE`).

usage: check_ring.py ACCELTRACE RING_APP exit|segv|trigger|opencl VALIDATE_TRACE

ring_app records 200 000 "step" ranges (a nested "inner" each, a mark
"m<k>" every 1000 steps) inside an outer range "run", after metadata and a
mark "early"; with a 256K ring of 32K chunks that wraps the ring dozens of
times.

exit:    the trace at exit holds only the last moments: no "early" mark,
         no early "m<k>" marks, the last mark the program printed and "last"
         present; "run" began before the window (flagged, counted) and ends
         at its pop; the metadata set first survived (its definition was
         carried over); every step is whole; the ring counters say what was
         overwritten; the spool's allocated size stays about the ring's; the
         trace validates.
segv:    the program dies of SIGSEGV: the launcher exits 139 and the trace of
         the crashed process holds the same last moments, "run" truncated.
opencl:  each step launches a kernel on PoCL (20 000 launches): the same, and
         the kernels of the window are on a device process whose device and
         queue are named (their definitions, long overwritten, were carried
         over), linked to their launches by flows, with the External id of
         their "inner" range; launches lost to the ring are counted.
trigger: `acceltrace trigger` while the program records: the trigger's trace
         holds the ring's content at that moment (valid, recent marks only),
         and the final trace still the last moments.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ACT, APP, MODE, VALIDATE = sys.argv[1:5]
RING = ["--ring=256K", "--chunk-size=32K"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return json.load(f)


def validate(path, truncated=False):
    extra = ["--expect-truncated"] if truncated else []
    r = subprocess.run([sys.executable, VALIDATE, path, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{path} does not validate: {r.stdout}{r.stderr}")


def marks(doc):
    return [e["name"] for e in doc["traceEvents"] if e.get("ph") == "i"]


def check_devices(doc):
    ev = doc["traceEvents"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    if len(kernels) < 200:
        fail(f"{len(kernels)} kernels in the window")
    pnames = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    tnames = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    for k in kernels:
        if "OpenCL" not in pnames.get(k["pid"], "") or "queue" not in tnames.get((k["pid"], k["tid"]), ""):
            fail(f"kernel on an unnamed device or queue: {k}, {pnames}")
    # A kernel whose launch was overwritten (its op was recorded later, in a
    # newer chunk of the callback thread) has no flow and is counted; every
    # other one has its flow and the External id of its "inner" range.
    inner = {e["args"]["External id"] for e in ev if e.get("name") == "inner"
             and e.get("cat") == "user_annotation"}
    linked = [k for k in kernels if k["args"].get("External id") in inner]
    a = doc["acceltrace"]
    if a.get("flows", 0) + a.get("ring_flows_dropped", 0) != len(kernels):
        fail(f"{len(kernels)} kernels, {a.get('flows')} flows, {a.get('ring_flows_dropped')} dropped")
    if len(linked) < a.get("flows", 0) - 2:
        fail(f"only {len(linked)} of {a.get('flows')} linked kernels name their inner range")
    if a.get("unlinked_device_ops") or a.get("unresolved_external_ids"):
        fail(f"errors in a ring capture: {a}")


def check_window(doc, last_mark, crashed, steps=2000):
    a = doc["acceltrace"]
    if a.get("ring_size") != 256 * 1024:
        fail(f"ring_size {a.get('ring_size')}")
    if a.get("ring_chunks_overwritten", 0) < 20 or a.get("ring_records_overwritten", 0) < 100000:
        fail(f"the ring did not wrap: {a}")
    if sum(a["dropped"].values()):
        fail(f"records dropped in ring mode: {a['dropped']}")
    m = marks(doc)
    if "early" in m or "m0" in m or "m100" in m:
        fail(f"marks from long before the window: {m[:5]}")
    if last_mark and last_mark != "-" and last_mark not in m:
        fail(f"{last_mark} missing from {m[-5:]}")
    if last_mark and "last" not in m:
        fail("the last mark is missing")
    ks = [int(x[1:]) for x in m if re.fullmatch(r"m\d+", x)]
    if (last_mark != "-" and not ks) or (ks and max(ks) - min(ks) > 60):
        fail(f"the window holds marks {min(ks, default=None)}..{max(ks, default=None)}")
    runs = [e for e in doc["traceEvents"] if e.get("name") == "run" and e.get("ph") == "X"]
    if len(runs) != 1 or not runs[0]["args"].get("before_window"):
        fail(f"'run' not shown as begun before the window: {runs}")
    if crashed and not runs[0]["args"].get("truncated"):
        fail(f"'run' of a crashed process not truncated: {runs[0]}")
    if a.get("ranges_before_window", 0) < 1 or a.get("unbalanced_pops") != 0:
        fail(f"counters: {a}")
    # the host ranges (the kernels' user ranges are drawn on the device
    # lanes too: gpu_user_annotation)
    host = [e for e in doc["traceEvents"] if e.get("cat") != "gpu_user_annotation"]
    step_ev = [e for e in host if e.get("name") == "step"]
    inner = [e for e in host if e.get("name") == "inner"]
    if len(step_ev) < steps or abs(len(step_ev) - len(inner)) > 1:
        fail(f"{len(step_ev)} steps, {len(inner)} inner")
    first = min(e["ts"] for e in doc["traceEvents"] if e.get("ph") in ("X", "i"))
    if doc.get("dataset") != "ring-test":
        fail("the metadata set before the window is gone")
    if any("string id" in e for e in a.get("errors", [])):
        fail(f"unresolved strings: {a['errors']}")
    return first


def run(tmp, *args, stdout=subprocess.PIPE):
    return subprocess.Popen(
        [ACT, "run", *RING, "--keep-spool", "--no-summary", "-o", os.path.join(tmp, "t.json"),
         "--", APP, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=tmp)


def spool_size(stderr):
    m = re.search(r"spool kept in (\S+)", stderr)
    if not m:
        fail(f"no spool directory in {stderr}")
    total = 0
    for p in glob.glob(os.path.join(m.group(1), "*.acts")):
        total += os.stat(p).st_blocks * 512
        os.unlink(p)
    for p in glob.glob(os.path.join(m.group(1), "*")):
        os.unlink(p)
    os.rmdir(m.group(1))
    return total


def main():
    with tempfile.TemporaryDirectory() as tmp:
        if MODE in ("exit", "segv"):
            p = run(tmp, MODE, "200000")
            out, err = p.communicate(timeout=50)
            want = 139 if MODE == "segv" else 0
            if p.returncode != want:
                fail(f"exit status {p.returncode}, want {want}: {err}")
            last = re.search(r"last mark (m\d+)", out).group(1)
            size = spool_size(err)
            # The ring plus the header and a page or two of slack.
            if size > 256 * 1024 + 64 * 1024:
                fail(f"spool occupies {size} bytes for a 256K ring")
            path = os.path.join(tmp, "t.json")
            validate(path, MODE == "segv")
            check_window(load(path), last, MODE == "segv")
        elif MODE == "opencl":
            p = run(tmp, "cl", "20000")
            out, err = p.communicate(timeout=50)
            if p.returncode != 0:
                fail(f"exit status {p.returncode}: {err}")
            spool_size(err)
            path = os.path.join(tmp, "t.json")
            r = subprocess.run([sys.executable, VALIDATE, path, "--expect-device-ops"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{path} does not validate: {r.stdout}{r.stderr}")
            doc = load(path)
            check_window(doc, "-", False, steps=300)  # a launch per step: fewer fit
            check_devices(doc)
        else:
            p = run(tmp, "wait", "200000", "2.5")
            if p.stdout.readline().strip() != "ready":
                fail("the program did not start")
            time.sleep(0.5)
            r = subprocess.run([ACT, "trigger", str(p.pid)], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"trigger: {r.stdout}{r.stderr}")
            trig = os.path.join(tmp, "t.trigger-1.json")
            for _ in range(500):
                if os.path.exists(trig):
                    break
                time.sleep(0.01)
            out, err = p.communicate(timeout=50)
            if p.returncode != 0:
                fail(f"exit status {p.returncode}: {err}")
            spool_size(err)
            validate(trig, True)  # the process is still running: not sealed
            t1 = load(trig)
            first1 = check_window(t1, None, False)
            last = re.search(r"last mark (m\d+)", out).group(1)
            path = os.path.join(tmp, "t.json")
            validate(path)
            first = check_window(load(path), last, False)
            if first <= first1:
                fail("the final window does not begin after the trigger's")
    print("ok")


main()
