#!/usr/bin/env bash
# check_no_gpu.sh -- scripts/gpu-check.sh on a machine without a GPU says so,
# exits 0 and checks (and builds) nothing. A fake nvidia-smi first on PATH
# answers as the real one does without a usable GPU, so the test means the
# same on a machine that has one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }
for case in nodriver nodevice; do
  case $case in
    nodriver) printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it couldn'"'"'t communicate with the NVIDIA driver."\nexit 9\n' ;;
    nodevice) printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' ;;
  esac >"$tmp/bin/nvidia-smi"
  chmod +x "$tmp/bin/nvidia-smi"
  rc=0
  PATH="$tmp/bin:$PATH" "$root/scripts/gpu-check.sh" "$tmp/build" >"$tmp/out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "$case: exit status $rc, expected 0"
  grep -q '^gpu-check: no NVIDIA GPU on this machine' "$tmp/out" || fail "$case: does not say there is no GPU"
  grep -q 'nothing was checked' "$tmp/out" || fail "$case: does not say nothing was checked"
  if grep -Eq '^(PASS|FAIL)|passed' "$tmp/out"; then fail "$case: pretends to have checked something"; fi
  [ ! -e "$tmp/build" ] || fail "$case: configured a build without a GPU"
  [ "$(wc -l <"$tmp/out")" = 1 ] || fail "$case: more than one line"
done
echo "no-GPU path ok"
