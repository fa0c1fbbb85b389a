#!/usr/bin/env bash
# scripts/test_gpu.sh (`make test-gpu`) fails at once, naming docs/gpu.md and building nothing,
# where no GPU is usable, and passes its GPU check where `nvidia-smi -L` lists one. Fake
# nvidia-smi scripts stand in for the driver, so this runs on any machine.
# Usage: test_gpu_script_test.sh SOURCE_DIR
set -uo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

fake_smi() {  # fake_smi NAME EXIT_CODE OUTPUT
  printf '#!/bin/sh\nprintf "%%s" "%s"\nexit %s\n' "$3" "$2" > "$work/$1"
  chmod +x "$work/$1"
}

# expect_no_gpu CASE NVIDIA_SMI REASON: the full run (not --check) must stop before configuring.
expect_no_gpu() {
  local output status
  output=$(cd "$work" && NVIDIA_SMI=$2 "$source_dir/scripts/test_gpu.sh" "$work/build-gpu" 2>&1)
  status=$?
  [ "$status" -ne 0 ] || fail "$1: exit code 0 without a GPU"
  grep -qF 'make test-gpu needs an NVIDIA GPU and driver; see docs/gpu.md' <<<"$output" \
    || fail "$1: no 'needs an NVIDIA GPU' message in: $output"
  grep -qF "$3" <<<"$output" || fail "$1: the reason '$3' is not in: $output"
  [ ! -e "$work/build-gpu" ] || fail "$1: configured $work/build-gpu before failing"
}

expect_no_gpu "no nvidia-smi" "$work/absent/nvidia-smi" "not found"
fake_smi failing 9 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
expect_no_gpu "no driver" "$work/failing" "failed with exit code 9: NVIDIA-SMI has failed"
fake_smi empty 0 ""
expect_no_gpu "no GPU listed" "$work/empty" "lists no GPU"
fake_smi other 0 "No devices found."
expect_no_gpu "no devices found" "$work/other" "lists no GPU"

fake_smi one_gpu 0 "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)"
output=$(NVIDIA_SMI=$work/one_gpu "$source_dir/scripts/test_gpu.sh" --check 2>&1) \
  || fail "--check with one GPU listed failed: $output"
grep -qF 'GPU 0: NVIDIA H100' <<<"$output" || fail "--check does not name the GPU: $output"

# The Makefile target is the script, and it is phony.
grep -qE '^\.PHONY:.* test-gpu( |$)' "$source_dir/Makefile" || fail "test-gpu is not in .PHONY"
grep -qE '^[[:space:]]+scripts/test_gpu\.sh ' "$source_dir/Makefile" \
  || fail "the Makefile's test-gpu does not run scripts/test_gpu.sh"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "test-gpu fails fast without a GPU"
