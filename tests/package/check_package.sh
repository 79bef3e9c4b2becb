#!/usr/bin/env bash
# check_package.sh wheel|prefix SRC_DIR BUILD_DIR -- acceltrace installed the
# way users install it, used with no checkout in reach.
#
#   wheel   builds the wheel (pip wheel, scikit-build-core, no build isolation
#           so the torch plugin is built against the project venv's torch)
#           from a copy of the source, deletes the copy, installs the wheel
#           into a fresh venv and runs from there: the `acceltrace` entry
#           point, `python -m acceltrace`, the Python package, the plugin.
#   prefix  configures, builds and `cmake --install`s a copy of the source,
#           deletes the copy and its build tree, moves the prefix elsewhere
#           and runs from there: bin/acceltrace, the package from
#           lib/python3/dist-packages; checks SONAME, headers, .pc, CMake
#           package.
#
# Both trace the bundled example (vecops, copied from BUILD_DIR: it is only
# the traced program) and a Python program under `acceltrace run` and with
# in-process profiling, check every trace (tests/package/check_trace.py) and
# that nothing of acceltrace was loaded from outside the installation
# (user_program.py reads /proc/self/maps). The version must be CMakeLists'
# everywhere. Exits 77 (skip) without the project venv, 1 with CI set.
set -euo pipefail
mode=$1 src=$(cd "$2" && pwd) build=$(cd "$3" && pwd)
here=$src/tests/package
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^project(acceltrace VERSION \([0-9][0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "FAIL: no version in CMakeLists.txt"; exit 1; }
venv_py=$src/.venv/bin/python
jobs=$(nproc 2>/dev/null || echo 2)
step() { echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }
skip() {
  if [ -n "${CI:-}" ]; then fail "$* (CI is set: a missing part is a failure)"; fi
  echo "SKIP: $*"
  exit 77
}
quiet() { # quiet LOG CMD...: run, show the log's tail only when it fails
  local log=$1; shift
  "$@" >"$log" 2>&1 || { grep -v 'WARNING: Location' "$log" | tail -40; fail "$* ($log)"; }
}
# Nothing from the developer's environment may point back into a checkout.
clean=(env -u ACCELTRACE_LIBRARY -u ACCELTRACE_LIBRARY_DIR -u ACCELTRACE_TORCH_PLUGIN -u ACCELTRACE_PYTHON_BINDING
       -u OPENCL_LAYERS -u LD_LIBRARY_PATH -u LD_PRELOAD -u PYTHONPATH -u PYTHONHOME)

# One compilation serves both modes (issue 34): the two configure and build
# their copy exactly as a user would, but through a compiler cache private to
# this build tree. Both copies lie at the same place under their own $tmp
# (src/, b/) and CCACHE_BASEDIR makes the compile commands relative to it, so
# package.prefix's objects are package.wheel's (CMakeLists.txt orders the two
# and keeps them apart). Without ccache each builds in full, as before.
# The generator and the compilers are the wheel's too (ccache hashes the
# compiler's name): scikit-build-core takes Ninja where it is installed and
# the compilers Python was built with (sysconfig CC/CXX) unless CC/CXX say.
generator=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=$build/package-ccache CCACHE_BASEDIR=$tmp CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=1G
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  if [ -z "${CC:-}${CXX:-}" ] && [ -x "$venv_py" ]; then
    read -r CC CXX < <("$venv_py" -c 'import sysconfig as s; print(*((s.get_config_var(v) or "x").split()[0] for v in ("CC", "CXX")))') || true
    if command -v "$CC" >/dev/null && command -v "$CXX" >/dev/null; then export CC CXX; else unset CC CXX; fi
  fi
fi

copy_source() {
  mkdir "$tmp/src"
  tar -C "$src" --exclude='./build*' --exclude=./.venv --exclude=./.git \
      --exclude='__pycache__' --exclude='./trace*.json' --exclude='*.trace.json' --exclude=./dist \
      -cf - . | tar -C "$tmp/src" -xf -
}

# What the user runs, copied so that no checkout path is on its sys.path.
cp "$build/bin/vecops" "$here/user_program.py" "$tmp/"
cc -shared -fPIC -O1 -o "$tmp/libocl_helper.so" "$src/python/tests/ocl_helper.c" -lOpenCL ||
  fail "cannot build the OpenCL helper"

case $mode in
  wheel)
    [ -x "$venv_py" ] && "$venv_py" -c 'import scikit_build_core, torch' 2>/dev/null ||
      skip "no project venv with scikit-build-core and torch (scripts/python-env.sh)"
    step "pip wheel from a copy of the source"
    copy_source
    quiet "$tmp/wheel.log" "$venv_py" -m pip wheel --no-build-isolation --no-deps \
      --config-settings=build-dir="$tmp/b" -w "$tmp/dist" "$tmp/src"
    rm -rf "$tmp/src" "$tmp/b"
    # The extension (limited API 3.10) makes it a cp310-abi3 wheel.
    whl=$(echo "$tmp"/dist/acceltrace-"$version"-cp310-abi3-linux_*.whl)
    [ -f "$whl" ] || fail "no wheel acceltrace-$version-cp310-abi3-linux_*: $(ls "$tmp/dist")"
    step "fresh venv, pip install $(basename "$whl")"
    "$venv_py" -m venv "$tmp/venv"
    quiet "$tmp/install.log" "$tmp/venv/bin/pip" install --no-index --no-deps "$whl"
    root=$tmp/venv
    at=("$root/bin/acceltrace")
    py=("$root/bin/python")
    step "the wheel needs only the base system (NEEDED entries, ldd)"
    pkg=$("$root/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/acceltrace
    # glibc, the C++ runtime (plugin), what the wheel carries itself, and
    # torch's libraries (the plugin runs inside a process that imported torch).
    allowed='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libz|libjansson|libacceltrace|libtorch_cpu|libc10)\.so'
    [ -f "$pkg/_native.abi3.so" ] || fail "the wheel carries no acceltrace/_native.abi3.so"
    for f in "$pkg"/bin/* "$pkg"/lib/*.so "$pkg"/lib/*.so.[0-9] "$pkg"/_native.abi3.so; do
      readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -Ev "$allowed" &&
        fail "$f needs a library outside the base system"
    done
    for f in "$pkg/bin/acceltrace" "$pkg/lib/libacceltrace.so" "$pkg/lib/libacceltrace_preload.so"; do
      # Its RUNPATH, $ORIGIN expanded, names the wheel's lib/ (where its
      # libjansson lies), and the loader really takes that copy.
      rp=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
      rp=${rp//\$ORIGIN/$(dirname "$f")}
      found=
      IFS=: read -ra dirs <<<"$rp"
      for d in "${dirs[@]}"; do
        if [ -e "$d/libjansson.so.4" ] && [ "$(cd "$d" && pwd -P)" = "$(cd "$pkg/lib" && pwd -P)" ]; then
          found=1
        fi
      done
      [ -n "$found" ] || fail "$f: RUNPATH '$rp' does not name the wheel's lib/ with libjansson"
      out=$("${clean[@]}" ldd "$f")
      ! grep -q 'not found' <<<"$out" || fail "ldd $f: $out"
      grep -q "libjansson.so.4 => $(cd "$pkg/lib" && pwd -P)/\|libjansson.so.4 => $pkg/" <<<"$out" ||
        fail "$f does not use the wheel's libjansson: $out"
    done
    ;;
  prefix)
    step "configure, build, cmake --install a copy of the source"
    copy_source
    quiet "$tmp/cmake.log" cmake -S "$tmp/src" -B "$tmp/b" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DACT_BUILD_TESTS=OFF -DACT_BUILD_BENCH=OFF -DACT_TORCH_PLUGIN=OFF
    quiet "$tmp/build.log" cmake --build "$tmp/b" -j"$jobs"
    quiet "$tmp/inst.log" cmake --install "$tmp/b" --prefix "$tmp/P"
    rm -rf "$tmp/src" "$tmp/b"
    mv "$tmp/P" "$tmp/moved" # an installed tree works wherever it lies
    root=$tmp/moved
    at=("$root/bin/acceltrace")
    py=(env PYTHONPATH="$root/lib/python3/dist-packages" python3)
    step "layout: SONAME, headers, pkg-config, CMake package"
    real=$(readlink -f "$root/lib/libacceltrace.so")
    [ "$(basename "$real")" = "libacceltrace.so.$version" ] || fail "libacceltrace.so -> $real"
    readelf -d "$real" | grep -q 'SONAME.*\[libacceltrace.so.0\]' || fail "SONAME of $real"
    [ "$(readlink -f "$root/lib/libacceltrace.so.0")" = "$real" ] || fail "libacceltrace.so.0"
    for h in acceltrace.h acceltrace_rt.h acceltrace_version.h; do
      [ -f "$root/include/$h" ] || fail "no include/$h"
    done
    grep -q "ACT_VERSION_STRING \"$version\"" "$root/include/acceltrace_version.h" ||
      fail "acceltrace_version.h does not say $version"
    [ "$(PKG_CONFIG_PATH=$root/lib/pkgconfig pkg-config --modversion acceltrace)" = "$version" ] ||
      fail "pkg-config --modversion acceltrace is not $version"
    [ -f "$root/lib/cmake/acceltrace/acceltraceConfig.cmake" ] || fail "no CMake package"
    ;;
  *) fail "usage: check_package.sh wheel|prefix SRC_DIR BUILD_DIR" ;;
esac

cd "$tmp"
export ACT_EXPECT_ROOT=$root ACT_OCL_HELPER=$tmp/libocl_helper.so
check() { python3 "$here/check_trace.py" "$@" || fail "trace $1"; }

step "versions"
[ "$("${clean[@]}" "${at[@]}" version)" = "acceltrace $version" ] || fail "acceltrace version"
[ "$("${clean[@]}" "${py[@]}" -c 'import acceltrace; print(acceltrace.__version__)')" = "$version" ] ||
  fail "acceltrace.__version__ is not $version"
# The annotation calls go through the compiled extension installed with the
# package, which binds the installed library (user_program.py checks that
# nothing is mapped from outside the installation).
[ "$("${clean[@]}" "${py[@]}" -c 'import acceltrace; print(acceltrace.binding())')" = extension ] ||
  fail "acceltrace.binding() is not 'extension': $("${clean[@]}" "${py[@]}" -c \
    'import acceltrace, acceltrace._binding as b; print(b.WHY_NOT_EXTENSION)')"

step "acceltrace run -- ./vecops (the bundled example)"
"${clean[@]}" "${at[@]}" run --no-summary -f -o t-example.json -- ./vecops >/dev/null
check t-example.json "$version"

step "acceltrace run -- python user_program.py (OpenCL layer, acceltrace.range)"
"${clean[@]}" "${at[@]}" run --no-summary -f -o t-run.json -- "${py[@]}" user_program.py run
check t-run.json "$version" "user step"

step "python -m acceltrace run -- ./vecops"
"${clean[@]}" "${py[@]}" -m acceltrace run --no-summary -f -o t-m.json -- ./vecops >/dev/null
check t-m.json "$version"

step "in-process: acceltrace.profile in user_program.py"
layer=$("${clean[@]}" "${py[@]}" -c 'import acceltrace; print(acceltrace.library_path())')
"${clean[@]}" OPENCL_LAYERS="$layer" "${py[@]}" user_program.py inprocess t-inproc.json
check t-inproc.json "$version" "user step"

if [ "$mode" = wheel ]; then
  step "-o NAME.json.gz: compressed by the wheel's own ISA-L (dlopen'ed through the RUNPATH)"
  [ -f "$pkg/lib/libisal.so.2" ] || fail "the wheel carries no lib/libisal.so.2"
  "${clean[@]}" LD_DEBUG=files "${at[@]}" run --no-summary -f -o t-gz.json.gz -- ./vecops \
    >/dev/null 2>"$tmp/ld-debug.log"
  isal=$(sed -n 's/.*calling init: \(.*libisal\.so\.2\).*/\1/p' "$tmp/ld-debug.log" | head -1)
  [ -n "$isal" ] && [ "$(readlink -f "$isal")" = "$(readlink -f "$pkg/lib/libisal.so.2")" ] ||
    fail "gzip output did not load the wheel's libisal.so.2: $(grep isal "$tmp/ld-debug.log")"
  check t-gz.json.gz "$version"
  step "torch.profiler with the plugin from the wheel (torch made visible from the project venv)"
  site=$("$root/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$venv_py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/project-venv-torch.pth"
  "${clean[@]}" OPENCL_LAYERS="$layer" "${py[@]}" user_program.py torch t-torch.json
  check t-torch.json "$version" "user step" --torch
  step "a wheel without a plugin for this torch: built on first import, then cached"
  # As a wheel built for another torch (or with build isolation) is: no
  # prebuilt plugin. acceltrace.torch compiles it from the wheel's sources.
  rm -f "$pkg/lib/libacceltrace_torch.so" "$pkg/lib/libacceltrace_torch.so.json"
  for round in build cached; do
    "${clean[@]}" XDG_CACHE_HOME="$tmp/cache" OPENCL_LAYERS="$layer" "${py[@]}" user_program.py \
      torch t-jit.json 2>"$tmp/jit-$round.err" || { tail -30 "$tmp/jit-$round.err"; fail "torch ($round)"; }
    check t-jit.json "$version" "user step" --torch
    said=$(grep -c 'building the torch.profiler plugin' "$tmp/jit-$round.err" || true)
    [ "$said" = "$([ $round = build ] && echo 1 || echo 0)" ] ||
      fail "round $round: 'building' said $said times: $(cat "$tmp/jit-$round.err")"
  done
  ls "$tmp"/cache/acceltrace/torch-plugin/*/libacceltrace_torch.so >/dev/null ||
    fail "no plugin in the cache"
fi
echo "package $mode ok ($version)"
