#!/usr/bin/env bash
# lint.sh -- static checks run by `./build.sh test`: clang-format (the
# checked-in .clang-format) must leave every C/C++ file unchanged, and
# cppcheck must find nothing in the library, the command and the Python
# extension.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || find src tools tests bench examples plugins -name '*.[ch]' -o -name '*.cpp')
if command -v clang-format >/dev/null; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "lint: clang-format clean (${#files[@]} files)"
fi
if command -v cppcheck >/dev/null; then
  cppcheck --quiet --enable=warning,portability,performance --std=c11 --inline-suppr \
    -I include -I src -I src/core -D__GNUC__ -DCL_TARGET_OPENCL_VERSION=300 \
    --suppress=unknownMacro:src/writers/summary_print.c --suppress=unknownMacro:src/writers/summary_cl.c --error-exitcode=1 src tools
  # The Python extension, with cppcheck's model of CPython's C API.
  cppcheck --quiet --library=python --enable=warning,portability,performance --std=c11 \
    --inline-suppr -I include -D__GNUC__ --error-exitcode=1 python/native
  echo "lint: cppcheck clean"
fi
