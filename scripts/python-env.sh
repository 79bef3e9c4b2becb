# python-env.sh -- the project's Python virtual environment (.venv), sourced
# by build.sh's install_deps before the build so that CMake finds the torch
# it builds the torch.profiler plugin against (plugins/torch) and the test
# step finds pytest.
#
# Idempotent and quick when already done: a stamp file records what was
# installed; nothing is re-installed while it matches. torch is pinned: the
# CPU build of 2.13.0 is what the plugin and tests are written for (never an
# unpinned torch, which would pull whatever is newest).
# The package itself is installed editable (python/ stays the source), so it
# finds the library of this checkout's build tree. scikit-build-core (pinned,
# as in ../pyproject.toml) lets the wheel tests build the self-contained wheel
# without build isolation, so that it builds the torch plugin against this
# torch (tests/package).
act_python_env() {
  local root=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
  local venv=$root/.venv
  local want="torch==2.13.0 pytest numpy scikit-build-core==1.1.0 pyopencl==2026.1.4 opencv-python-headless==4.12.0.88 HolisticTraceAnalysis==0.5.0 pandas<3 torch-tb-profiler==0.4.3 nvtx==0.2.16 protobuf==7.36.2 duckdb==2.0.1 pyarrow==26.0.1 dask[distributed]==2026.8.0 matplotlib==3.11.2 ijson==3.6.0; editable $root/python"
  local stamp=$venv/.acceltrace-env
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  echo "python-env: setting up $venv ($want)" >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q torch==2.13.0 pytest numpy scikit-build-core==1.1.0
  # pyopencl and OpenCV: real dlopen-based OpenCL users for the --preload,
  # late-session and transparency tests (their wheels bundle what they
  # need; both run on PoCL). The trace analysers the tests run on
  # acceltrace traces (issue 13). torch==2.13.0 is repeated so that no
  # dependency can pull another torch. pandas<3: HTA 0.5.0 fails on pandas
  # 3 ("Invalid value ... for dtype 'int8'" in
  # transform_correlation_to_index); 2.x works.
  "$venv/bin/pip" install -q torch==2.13.0 pyopencl==2026.1.4 opencv-python-headless==4.12.0.88 \
    HolisticTraceAnalysis==0.5.0 'pandas<3' torch-tb-profiler==0.4.3
  # nvtx: the NVTX Python package, the peer bench/python_annotate.py
  # measures acceltrace's Python annotations against (no tool attached).
  "$venv/bin/pip" install -q nvtx==0.2.16
  # protobuf: decodes the .pftrace writer's output against Perfetto's proto
  # in tests/trace_check/check_pftrace.py (the version tensorboard pulls).
  "$venv/bin/pip" install -q protobuf==7.36.2
  # The analysis extra (python/pyproject.toml): `acceltrace recipe`'s
  # engines (DuckDB, Dask), its Parquet cache, its streaming JSON reader
  # (ijson) and its pictures.
  "$venv/bin/pip" install -q duckdb==2.0.1 pyarrow==26.0.1 'dask[distributed]==2026.8.0' \
    matplotlib==3.11.2 ijson==3.6.0
  "$venv/bin/pip" install -q --no-build-isolation -e "$root/python"
  printf '%s' "$want" >"$stamp"
}
act_python_env
