#!/usr/bin/env bash
# dlprim-check.sh -- build a real out-of-tree PyTorch PrivateUse1 backend,
# pytorch_dlprim (python module pytorch_ocl, device "ocl", aten ops run as
# dlprimitives OpenCL kernels), on PoCL, and profile it with acceltrace
# (issue 31 section 5). Called by `./build.sh dlprim`.
#
#   scripts/dlprim-check.sh [--build-only]
#
# 1. Extracts the pinned sources (shared/vendor tarball: pytorch_dlprim
#    30e27c8 + its dlprimitives submodule ff2d590), applies
#    scripts/dlprim/patches/*.patch to dlprimitives/ and builds the backend
#    against the venv's CPU torch, in build/dlprim (never in the tree). The
#    build is cached: a stamp records the tarball, patches and torch; while
#    it matches nothing is rebuilt.
# 2. Trains a small CNN a few steps on ocl:0 and on the CPU; the losses,
#    outputs and weights must agree (~1e-6).
# 3. Runs the same workload (a) under `acceltrace run` and (b) under
#    torch.profiler with the acceltrace plugin (import acceltrace.torch),
#    and checks each trace (scripts/dlprim/check_trace.py): every
#    dlprimitives kernel present, linked to its launch and to the aten op
#    that launched it, HTA's breakdowns consistent, device times equal to
#    the backend's own profiler's.
#
# Environment: PYTHON (default .venv/bin/python), DLPRIM_TARBALL (default
# shared/vendor/... in the checkout, else /work/shared/vendor/...),
# DLPRIM_DIR (default build/dlprim), ACCELTRACE_BUILD (default build).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
NAME=pytorch_dlprim-30e27c8_dlprimitives-ff2d590.tar.gz
if [ -z "${DLPRIM_TARBALL:-}" ]; then
  DLPRIM_TARBALL=$ROOT/shared/vendor/$NAME
  [ -f "$DLPRIM_TARBALL" ] || DLPRIM_TARBALL=/work/shared/vendor/$NAME
fi
DIR=${DLPRIM_DIR:-$ROOT/build/dlprim}
BUILD=${ACCELTRACE_BUILD:-$ROOT/build}
PATCHES=("$ROOT"/scripts/dlprim/patches/*.patch)
JOBS=$(nproc 2>/dev/null || echo 2)

say() { echo "dlprim-check: $*"; }
die() { echo "dlprim-check: FAIL: $*" >&2; exit 1; }

[ -f "$DLPRIM_TARBALL" ] || die "no source tarball $DLPRIM_TARBALL (see shared/vendor/README.md)"
[ -x "$PY" ] || die "no python $PY (./build.sh build sets up .venv)"

# ---- 1. extract, patch, build (cached) --------------------------------
torch_ver=$("$PY" -c 'import torch; print(torch.__version__)')
torch_cmake=$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "share/cmake/Torch"))')
py_inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
py_lib=$("$PY" -c 'import sysconfig, os; print(os.path.join(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")))')
stamp_want=$( {
  sha256sum "$DLPRIM_TARBALL" | cut -d' ' -f1
  for p in "${PATCHES[@]}"; do echo "$(basename "$p") $(sha256sum "$p" | cut -d' ' -f1)"; done
  echo "torch $torch_ver python $py_inc"
} )
stamp=$DIR/.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_want" ] && [ -f "$DIR/obj/pytorch_ocl/pt_ocl.so" ]; then
  say "backend already built for these pins and patches ($DIR)"
else
  say "building pytorch_dlprim against torch $torch_ver in $DIR (several minutes)"
  rm -rf "$DIR/src" "$DIR/obj" "$stamp"
  mkdir -p "$DIR/src"
  tar xzf "$DLPRIM_TARBALL" -C "$DIR/src"
  rmdir "$DIR/src/pytorch_dlprim/dlprimitives" 2>/dev/null || true
  mv "$DIR/src/dlprimitives" "$DIR/src/pytorch_dlprim/dlprimitives"
  for p in "${PATCHES[@]}"; do
    say "patch $(basename "$p")"
    patch -s -p1 -d "$DIR/src/pytorch_dlprim/dlprimitives" <"$p" || die "patch $p does not apply"
  done
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  t0=$(date +%s)
  cmake -S "$DIR/src/pytorch_dlprim" -B "$DIR/obj" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$torch_cmake" -DPYTHON_INCLUDE_DIR="$py_inc" \
    -DPYTHON_LIBRARY="$py_lib" "${launcher[@]}" >"$DIR/cmake.log" 2>&1 ||
    { tail -30 "$DIR/cmake.log"; die "cmake failed (see $DIR/cmake.log)"; }
  cmake --build "$DIR/obj" -j"$JOBS" >"$DIR/build.log" 2>&1 ||
    { grep -m20 -B2 -A5 'error' "$DIR/build.log" || tail -40 "$DIR/build.log"; die "build failed (see $DIR/build.log)"; }
  say "built in $(($(date +%s) - t0)) s"
  printf '%s' "$stamp_want" >"$stamp"
fi
if [ "${1:-}" = "--build-only" ]; then exit 0; fi

# ---- 2-3. train on ocl:0 against the CPU, untraced and traced ----------
[ -x "$BUILD/bin/acceltrace" ] && [ -f "$BUILD/lib/libacceltrace.so" ] ||
  die "no acceltrace build in $BUILD (./build.sh build)"
SRC_KERNELS=$DIR/src/pytorch_dlprim/dlprimitives/src/kernels
RUNS=$DIR/runs
rm -rf "$RUNS"
mkdir -p "$RUNS" "$DIR/kcache"
# This checkout's package first (the venv may hold another checkout's,
# editable), then the backend; the dlprimitives kernel binaries are
# cached in the build folder, not in ~/.dlprimitives.
export PYTHONPATH=$ROOT/python:$DIR/obj${PYTHONPATH:+:$PYTHONPATH}
export DLPRIM_CACHE_DIR=$DIR/kcache
WORKLOAD=$ROOT/scripts/dlprim/workload.py
fails=0

judge() { # dir label: the workload's ocl-vs-CPU figures
  "$PY" - "$1" "$2" <<'PYEOF' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1] + "/result.json"))
# float32, different summation orders: a few ulps of values ~2 (losses,
# logits), ~1e-7 absolute for the weights
tol = {"loss_maxdiff": 2e-6, "logits_maxdiff": 2e-6, "weights_maxdiff": 1e-6}
bad = {k: r[k] for k, t in tol.items() if not r[k] <= t}
steps = r["warmup_steps"] + r["profiled_steps"]
print("  %-4s %s: %d steps on %s (PrivateUse1 %r) match the CPU: loss %.1e, logits %.1e, "
      "weights %.1e (tolerances %s)" % ("FAIL" if bad else "ok", sys.argv[2], steps, r["device"],
      r["privateuse1_name"], r["loss_maxdiff"], r["logits_maxdiff"], r["weights_maxdiff"],
      "/".join("%g" % t for t in tol.values())))
if r.get("plugin_errors"):
    print("  FAIL plugin errors: %s" % r["plugin_errors"])
    bad["plugin"] = r["plugin_errors"]
sys.exit(1 if bad else 0)
PYEOF
}

timed() { # seconds of wall time of "$@", into $secs
  local t0 t1
  t0=$(date +%s.%N)
  "$@"
  local rc=$?
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  return $rc
}

say "untraced run (PoCL compiles each kernel once, cached in $DIR/kcache)"
timed "$PY" "$WORKLOAD" "$RUNS/plain" >"$RUNS/plain.log" 2>&1 ||
  { tail -20 "$RUNS/plain.log"; die "the workload failed untraced"; }
plain_s=$secs
echo "untraced ($plain_s s):"
judge "$RUNS/plain" untraced

# traced KIND LABEL CMD...: run the workload so (into $RUNS/KIND), judge its
# numbers against the CPU, check its trace; $secs is how long it ran.
traced() {
  local kind=$1 label=$2
  shift 2
  mkdir -p "$RUNS/$kind"
  timed "$@" >"$RUNS/$kind.log" 2>&1 || { tail -20 "$RUNS/$kind.log"; die "the workload failed under $label"; }
  echo "($kind) $label ($secs s):"
  judge "$RUNS/$kind" "$label"
  "$PY" "$ROOT/scripts/dlprim/check_trace.py" "$RUNS/$kind/trace.json" --kind "$kind" \
    --csv "$RUNS/$kind/backend.csv" --kernels-src "$SRC_KERNELS" --json "$RUNS/$kind/figures.json" ||
    fails=$((fails + 1))
}

say "(a) under acceltrace run"
traced run "acceltrace run" "$BUILD/bin/acceltrace" run --force -o "$RUNS/run/trace.json" -- \
  "$PY" "$WORKLOAD" "$RUNS/run"
run_s=$secs

say "(b) under torch.profiler with import acceltrace.torch"
traced torch "torch.profiler + acceltrace.torch" env OPENCL_LAYERS="$BUILD/lib/libacceltrace.so" \
  "$PY" "$WORKLOAD" "$RUNS/torch" --torch-profiler
torch_s=$secs

# ---- import order: acceltrace.torch first leaves PrivateUse1 to ocl ----
say "import acceltrace.torch before pytorch_ocl"
# (in a subshell of its own: the process may abort, and the shell's
# "Aborted" line goes to the subshell's stderr)
probe_rc=$( ( "$PY" "$WORKLOAD" "$RUNS/probe" --import-order-probe >"$RUNS/probe.out" \
  2>"$RUNS/probe.err"; echo $? ) 2>/dev/null )
if [ "$probe_rc" = 0 ]; then
  probe=$(tail -1 "$RUNS/probe.out")
else
  what=$(grep -m1 'what()' "$RUNS/probe.err" || grep -m1 -i error "$RUNS/probe.err" || true)
  what=$(echo "${what#*what():}" | sed "s/^ *//")
  probe="the process died (exit $probe_rc) loading pytorch_ocl: ${what}"
fi
case "$probe" in
  *'"privateuse1_name": "ocl"'*'"ocl0": "accepted"'*) echo "  ok   either import order: $probe" ;;
  *) echo "  FAIL acceltrace.torch imported first: $probe"; fails=$((fails + 1)) ;;
esac
"$BUILD/bin/acceltrace" summary --format=json "$RUNS/run/trace.json" >"$RUNS/run/summary.json"

# ---- figures -----------------------------------------------------------
"$PY" - "$RUNS" "$plain_s" "$run_s" "$torch_s" "$probe" <<'PYEOF'
import json, sys
runs, plain_s, run_s, torch_s, probe = sys.argv[1:6]
res = {k: json.load(open("%s/%s/result.json" % (runs, k))) for k in ("plain", "run", "torch")}
fig = {k: json.load(open("%s/%s/figures.json" % (runs, k))) for k in ("run", "torch")}
summ = json.load(open(runs + "/run/summary.json"))
rows = {r["name"]: r for r in summ["device"]["rows"]}
def ms(v): return "%.1f ms" % (1e3 * sum(v) / len(v))
print("\nfigures (PoCL CPU device, %s profiled steps after %s warm-up):" % (
    res["plain"]["profiled_steps"], res["plain"]["warmup_steps"]))
print("  step time, profiled steps: untraced %s, acceltrace run %s, torch.profiler %s" % (
    ms(res["plain"]["ocl_step_s"][2:]), ms(res["run"]["ocl_step_s"][2:]),
    ms(res["torch"]["ocl_step_s"][2:])))
print("  process wall time: untraced %.2f s, acceltrace run %.2f s, torch.profiler %.2f s" % (
    float(plain_s), float(run_s), float(torch_s)))
for k, label in (("run", "(a) run"), ("torch", "(b) torch.profiler")):
    f = fig[k]
    print("  %s: %d device ops (%d kernels, %d names) in the trace; profiled window %d ops = "
          "backend profiler %d; device time %.1f us vs backend %.1f us; max |diff| duration "
          "%.3f us, start %.3f us; HTA temporal %s" % (
              label, f["device_ops"], f["kernels"], len(f["kernel_names"]), f["window_ops"],
              f["backend_events"], f.get("window_device_us", 0), f.get("backend_device_us", 0),
              f.get("max_dur_diff_us", -1), f.get("max_start_diff_us", -1),
              {k2.replace("(us)", ""): round(v) for k2, v in f["hta_temporal_us"].items()}))
host = {r["name"]: r for r in summ["host"]["rows"]}
print("  one kernel name, several programs: %d programs built (clBuildProgram), %d kernel names;"
      " the trace's kernels carry their program, the summary a row per (name, program):" % (
          host.get("clBuildProgram", {}).get("count", 0), len(fig["run"]["kernel_names"])))
for name, v in sorted(fig["run"]["shared_names"].items(), key=lambda kv: -kv[1]["launches"]):
    split = [r for n, r in rows.items() if n == name or n.startswith(name + " (program ")]
    print("    %-24s %d launches from %d programs, %d summary rows; launched by %d aten ops;"
          " backend labels %s" % (name, v["launches"], v["programs"], len(split), v["aten_ops"],
                                  ",".join(v["backend_labels"])))
print("  acceltrace.torch imported before pytorch_ocl: %s" % probe)
PYEOF

if [ $fails -ne 0 ]; then die "$fails check(s) failed (see above; logs in $RUNS)"; fi
say "all checks passed"
