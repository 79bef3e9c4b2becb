#!/usr/bin/env bash
# fuzz.sh -- build the libFuzzer targets (fuzz/, clang with AddressSanitizer
# and UndefinedBehaviorSanitizer) and run each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Targets: spool (spool reader -> builder -> Chrome writer), summary (the
# trace reader behind `acceltrace summary`), escape (JSON string escaper),
# config (ACCELTRACE_* parsing). Each starts from its checked-in seed corpus
# fuzz/<target>/corpus/ (read only); new inputs go to build-fuzz/corpus/.
# Any crash, leak, sanitizer report or timeout exits non-zero; the input
# that caused it is kept as build-fuzz/artifacts/<target>-crash-*.
# `./build.sh test` runs this with 12 s per target (about 50 s in all).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-12}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(spool summary escape config)
BUILD=$ROOT/build-fuzz
JOBS=$(nproc 2>/dev/null || echo 2)

command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
CC=clang cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACT_FUZZ=ON \
  -DACT_BUILD_TESTS=OFF -DACT_BUILD_BENCH=OFF -DACT_SANITIZE=address,undefined,fuzzer-no-link >/dev/null
targets=()
for t in "${TARGETS[@]}"; do targets+=(--target "fuzz_$t"); done
cmake --build "$BUILD" -j"$JOBS" "${targets[@]}" >/dev/null

mkdir -p "$BUILD/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  work=$BUILD/corpus/$t
  mkdir -p "$work"
  echo "fuzz.sh: $t for ${SECS}s" >&2
  # -max_len: spool seeds are up to 16 KiB; -timeout: one input must never
  # take seconds; -rss_limit_mb: a hostile file must not make us balloon.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$BUILD/bin/fuzz_$t" -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
      "$work" "$ROOT/fuzz/$t/corpus" >"$BUILD/fuzz-$t.log" 2>&1; then
    echo "fuzz.sh: $t FAILED; log: $BUILD/fuzz-$t.log" >&2
    tail -40 "$BUILD/fuzz-$t.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units' "$BUILD/fuzz-$t.log" | sed "s/^/fuzz.sh: $t /" >&2 || true
  fi
done
exit $status
