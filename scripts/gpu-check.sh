#!/usr/bin/env bash
# gpu-check.sh [BUILD_DIR] -- prove the CUDA row on a real NVIDIA GPU.
#
# On a machine with an NVIDIA GPU and the CUDA toolkit: configures and builds
# acceltrace (Release, no tests, no benchmarks, no torch plugin) in BUILD_DIR
# (default build-gpu), compiles the CUDA programs of tests/gpu with nvcc, runs
# each untraced and under `acceltrace run --cuda`, runs the vector add again
# recording itself through the C session API (the in-process path), and checks
# every trace with tests/gpu/check_gpu_trace.py (which uses the project's
# validator). Prints one line per check, "PASS ..." or "FAIL ...", then
# "N passed, N failed"; exits 1 when a check failed.
#
# Without a GPU it says so and exits 0, having checked nothing.
# Record a run's results in docs/vendors.md ("Checked on a real GPU").
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-gpu}
PASSED=0 FAILED=0

gpu_list() { # prints the GPUs nvidia-smi sees; fails when there are none
  local smi
  smi=$(command -v nvidia-smi) || { echo "nvidia-smi not found"; return 1; }
  local out
  out=$("$smi" -L 2>&1) || { echo "nvidia-smi -L: ${out:-exit status $?}"; return 1; }
  grep -q '^GPU ' <<<"$out" || { echo "nvidia-smi lists no GPU: $out"; return 1; }
  echo "$out"
}

if ! why=$(gpu_list); then
  echo "gpu-check: no NVIDIA GPU on this machine ($why); nothing was checked."
  exit 0
fi

result() { # result NAME STATUS [DETAIL]
  if [ "$2" = 0 ]; then
    echo "PASS $1"
    PASSED=$((PASSED + 1))
  else
    echo "FAIL $1${3:+: $3}"
    FAILED=$((FAILED + 1))
  fi
}

checker() { # checker KIND TRACE LABEL: the trace checks, one line each
  local line
  while IFS= read -r line; do
    case $line in
      PASS*) echo "PASS $3: ${line#PASS }"; PASSED=$((PASSED + 1)) ;;
      FAIL*) echo "FAIL $3: ${line#FAIL }"; FAILED=$((FAILED + 1)) ;;
      *) echo "     $line" ;;
    esac
  done < <(python3 "$ROOT/tests/gpu/check_gpu_trace.py" "$1" "$2" 2>&1)
}

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" = 0 ]
  exit $?
}

echo "gpu-check: $(date -u +%Y-%m-%dT%H:%MZ)"
echo "$why"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
  sed 's/^/gpu-check: GPU, driver, memory: /'
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export NVCC
echo "gpu-check: $("$NVCC" --version 2>&1 | grep -i release || echo "nvcc not found at $NVCC")"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DACT_BUILD_TESTS=OFF \
     -DACT_BUILD_BENCH=OFF -DACT_TORCH_PLUGIN=OFF >"$log/cmake" 2>&1 &&
   cmake --build "$BUILD" -j"$(nproc)" >>"$log/cmake" 2>&1; then
  result "build (Release, no tests, no torch)" 0
else
  result "build (Release, no tests, no torch)" 1 "$(tail -5 "$log/cmake")"
  finish
fi
grep -q 'CUPTI source enabled' "$log/cmake" && cupti=0 || cupti=1
result "CUPTI source compiled in (cupti.h found)" $cupti "set CUDA_HOME"
if "$ROOT/tests/gpu/build_programs.sh" "$BUILD/gpu" "$BUILD/lib" >"$log/nvcc" 2>&1; then
  result "nvcc builds tests/gpu programs" 0
else
  result "nvcc builds tests/gpu programs" 1 "$(tail -5 "$log/nvcc")"
  finish
fi
AT=$BUILD/bin/acceltrace
TRACES=$BUILD/gpu/traces
mkdir -p "$TRACES"

for prog in streams nvtx_threads; do
  kind=${prog%%_*}
  timeout 120 "$BUILD/gpu/$prog" >"$log/$prog.plain" 2>"$log/$prog.plain.err"
  rc0=$?
  result "$prog: runs untraced (exit $rc0)" $rc0 "$(tail -3 "$log/$prog.plain.err")"
  timeout 180 "$AT" run --cuda --force --no-summary -o "$TRACES/$prog.json" -- \
    "$BUILD/gpu/$prog" >"$log/$prog.traced" 2>"$log/$prog.traced.err"
  rc1=$?
  # The program's own stderr is what remains without acceltrace's lines.
  grep -v '^acceltrace: ' "$log/$prog.traced.err" >"$log/$prog.traced.err.own"
  same=1
  [ "$rc1" = "$rc0" ] && cmp -s "$log/$prog.plain" "$log/$prog.traced" &&
    cmp -s "$log/$prog.plain.err" "$log/$prog.traced.err.own" && same=0
  result "$prog: output and exit status unchanged under run --cuda (exit $rc1)" $same \
    "$(diff "$log/$prog.plain" "$log/$prog.traced" | head -4
       diff "$log/$prog.plain.err" "$log/$prog.traced.err.own" | head -4)"
  checker "$kind" "$TRACES/$prog.json" "$prog run --cuda"
done

# The in-process path: the same vector add, recording itself (C session API).
timeout 180 "$BUILD/gpu/streams_inprocess" "$TRACES/streams_inprocess.json" \
  >"$log/inproc.out" 2>"$log/inproc.err"
rc=$?
same=1
[ "$rc" = 0 ] && cmp -s "$log/streams.plain" "$log/inproc.out" && same=0
result "streams in-process (act_session_begin/end): same output, exit $rc" $same \
  "$(tail -3 "$log/inproc.err")"
checker streams "$TRACES/streams_inprocess.json" "streams in-process"
echo "gpu-check: traces in $TRACES"
finish
