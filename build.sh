#!/usr/bin/env bash
# build.sh -- the project's set-up and entry point on a fresh Debian machine.
#
#   ./build.sh demo   install what is missing, build, trace the bundled OpenCL
#                     example on PoCL, write trace.json and print the summary
#   ./build.sh test   install what is missing, lint, build and run every test
#                     (plain, AddressSanitizer+UBSan, ThreadSanitizer builds,
#                     pytest, the transparency suite, a bounded libFuzzer run
#                     of each target; a Release and a clang build with a quick
#                     subset), all with warnings as errors (-DACT_WERROR=ON)
#   ./build.sh build  install what is missing and build (build/)
#   ./build.sh bench  build and run the benchmarks (see BENCHMARKS.md)
#   ./build.sh dlprim build, build a real PrivateUse1 backend (pytorch_dlprim,
#                     device ocl, on PoCL; cached in build/dlprim) and check
#                     acceltrace's traces of it (scripts/dlprim-check.sh)
#
# Installing is idempotent: packages already present are not touched, so a
# second run goes straight to the build.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
JOBS=$(nproc 2>/dev/null || echo 2)

DEB_PACKAGES=(build-essential cmake pkg-config git python3 python3-venv
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
  libcmocka-dev libjansson-dev libyajl-dev zlib1g-dev libdeflate-dev libisal-dev zsh man-db clang clang-format clang-tidy cppcheck libclang-rt-14-dev
  liblttng-ust-dev lttng-tools clpeak piglit ccache libsqlite3-dev sqlite3
  protobuf-compiler)

install_deps() {
  local missing=()
  for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "build.sh: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ -f "$ROOT/scripts/python-env.sh" ]; then
    # shellcheck source=/dev/null
    . "$ROOT/scripts/python-env.sh"
  fi
}

configure_build() { # dir [cmake args...]
  local dir=$1; shift
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$JOBS" >/dev/null || cmake --build "$dir" -j1
}

# The builds users and packagers run: Release (optimiser warnings such as
# maybe-uninitialized only show there) and clang, warnings as errors, with
# a quick subset of the suite (unit tests and the bundled example traced).
other_builds() {
  # init.*: loading the library (its TLS, two copies in one process) is
  # what differs most between compilers and build types.
  local quick='^unit\.|^init\.|^trace\.vecops$|^vendor\.mspti\.trace$'
  configure_build build-release -DCMAKE_BUILD_TYPE=Release -DACT_WERROR=ON \
    -DACT_BUILD_BENCH=OFF -DACT_TORCH_PLUGIN=OFF
  (cd build-release && ctest --output-on-failure -j"$JOBS" -R "$quick" -LE concurrency)
  CC=clang CXX=clang++ configure_build build-clang -DACT_WERROR=ON -DACT_BUILD_BENCH=OFF \
    -DACT_TORCH_PLUGIN=OFF
  (cd build-clang && ctest --output-on-failure -j"$JOBS" -R "$quick" -LE concurrency)
}

cmd=${1:-}
case "$cmd" in
  build)
    install_deps
    configure_build build
    ;;
  demo)
    install_deps
    configure_build build
    out=${2:-trace.json}
    build/bin/acceltrace run --force -o "$out" -- build/bin/vecops
    echo "trace written to $out (open it in https://ui.perfetto.dev)" >&2
    ;;
  test)
    install_deps
    # Static checks first: clang-format and cppcheck (scripts/lint.sh), and
    # no include pointing up the layers (docs/architecture.md).
    "$ROOT/scripts/lint.sh"
    python3 "$ROOT/scripts/check_layers.py"
    # Developer builds: warnings are errors (-DACT_WERROR=ON, as CI).
    configure_build build -DACT_WERROR=ON
    # Calls too, from the objects just built: none up the layers, no new
    # circle of files (scripts/check_layers.py).
    python3 "$ROOT/scripts/check_layers.py" --build build
    (cd build && ctest --output-on-failure -j"$JOBS")
    other_builds
    # The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
    configure_build build-asan -DACT_SANITIZE=address,undefined -DACT_BUILD_BENCH=OFF -DACT_WERROR=ON
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$JOBS" -LE nosan)
    # The concurrency tests under ThreadSanitizer.
    configure_build build-tsan -DACT_SANITIZE=thread -DACT_BUILD_BENCH=OFF -DACT_WERROR=ON
    (cd build-tsan && ctest --output-on-failure -j"$JOBS" -L concurrency)
    if [ -x "$ROOT/scripts/test-extra.sh" ]; then "$ROOT/scripts/test-extra.sh"; fi
    # Transparency: pyopencl's and piglit's own OpenCL tests untraced, under
    # the layer and under --preload; identical outcomes, clean traces.
    "$ROOT/.venv/bin/python" "$ROOT/scripts/transparency.py" --build build
    # Hostile input: each libFuzzer target for 12 s (any crash or report fails).
    if [ -x "$ROOT/scripts/fuzz.sh" ]; then "$ROOT/scripts/fuzz.sh" 12; fi
    ;;
  bench)
    install_deps
    configure_build build
    (cd build && ctest -L bench --output-on-failure) || true
    if [ -x build/bin/act_bench_all ]; then build/bin/act_bench_all "${@:2}"; fi
    ;;
  dlprim)
    install_deps
    configure_build build
    "$ROOT/scripts/dlprim-check.sh"
    ;;
  *)
    echo "usage: ./build.sh demo|test|build|bench|dlprim" >&2
    exit 2
    ;;
esac
