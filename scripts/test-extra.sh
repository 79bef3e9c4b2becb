#!/usr/bin/env bash
# test-extra.sh -- the Python part of `./build.sh test`: runs pytest over
# python/tests with the project's virtual environment (scripts/python-env.sh
# made it) against the plain build in build/ (its libacceltrace.so and, when
# torch was found at configure time, the torch plugin).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ ! -x .venv/bin/python ]; then
  # shellcheck source=/dev/null
  . scripts/python-env.sh
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider python/tests "$@"
