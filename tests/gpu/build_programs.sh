#!/usr/bin/env bash
# build_programs.sh OUTDIR [LIBDIR] -- compile the CUDA programs of tests/gpu
# with nvcc into OUTDIR: streams and nvtx_threads (plain CUDA programs that
# know nothing of acceltrace) and, when LIBDIR (a build tree's lib/, with
# ../include beside it) holds libacceltrace.so,
# streams_inprocess (the same vector add recording itself through the C
# session API). Used by scripts/gpu-check.sh and by the gpu.nvcc_build test,
# which builds them on machines that have the toolkit but no GPU.
# nvcc is taken from $NVCC, else PATH, else /usr/local/cuda/bin.
set -euo pipefail
out=$1 libdir=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$out"
# NVCC_FLAGS may add e.g. -arch=native on the GPU machine; the default keeps
# nvcc's own target list (PTX included, so any newer GPU JIT-compiles it).
read -r -a extra <<<"${NVCC_FLAGS:-}"
"$nvcc" -O2 "${extra[@]}" -o "$out/streams" "$here/streams.cu"
"$nvcc" -O2 "${extra[@]}" -o "$out/nvtx_threads" "$here/nvtx_threads.cu" -lpthread
if [ -n "$libdir" ]; then
  # acceltrace_version.h is generated into the build tree beside lib/.
  "$nvcc" -O2 "${extra[@]}" -DACT_IN_PROCESS -I"$root/include" -I"$libdir/../include" \
    -o "$out/streams_inprocess" \
    "$here/streams.cu" -L"$libdir" -lacceltrace -Xlinker -rpath -Xlinker "$libdir"
fi
