#!/usr/bin/env bash
# `make test-gpu`: the CUDA build's tests on a real NVIDIA GPU (docs/gpu.md, "On a real GPU").
#   1. fails at once, before building anything, where no GPU is usable: the device tests skip
#      without one, and a run of skips must not read as a pass;
#   2. configures BUILD_DIR (default build-gpu) with -DTERN_CUDA=ON and builds everything;
#   3. runs `ctest -L gpu` (the CUDA kernels on the device), then, with
#      TERN_TEST_CUDA_BACKEND=cuda, `ctest -R Cuda -LE gpu` (the device runtime and the CUDA
#      backend end to end, which read that variable to use the real device instead of
#      cuda-emulated). Both run serially: each CUDA backend test takes most of the GPU's memory;
#   4. fails if any of those tests was skipped.
# Usage: scripts/test_gpu.sh [--check] [BUILD_DIR]
#   --check   only the GPU check of step 1.
# Environment: BUILD_TYPE (Release), CMAKE_ARGS, CTEST_ARGS (extra ctest arguments), NVIDIA_SMI
# (the nvidia-smi to ask; the tests of this script point it elsewhere).
set -uo pipefail

check_only=false
if [ "${1:-}" = "--check" ]; then
  check_only=true
  shift
fi
build_dir=${1:-build-gpu}
nvidia_smi=${NVIDIA_SMI:-nvidia-smi}

no_gpu() {
  echo "make test-gpu needs an NVIDIA GPU and driver; see docs/gpu.md" >&2
  echo "($1)" >&2
  exit 1
}

# `nvidia-smi -L` prints one "GPU N: NAME (UUID: ...)" line per device the driver sees; with no
# driver it is missing or fails, and in a container without --gpus it lists nothing.
command -v "$nvidia_smi" > /dev/null 2>&1 || no_gpu "$nvidia_smi not found: no NVIDIA driver on this machine"
gpus=$("$nvidia_smi" -L 2>&1)
status=$?
[ "$status" -eq 0 ] || no_gpu "$nvidia_smi -L failed with exit code $status: $(head -n 1 <<<"$gpus")"
grep -q '^GPU [0-9]' <<<"$gpus" || no_gpu "$nvidia_smi -L lists no GPU"
echo "test-gpu: on $(grep -c '^GPU [0-9]' <<<"$gpus") GPU(s):"
grep '^GPU [0-9]' <<<"$gpus"
$check_only && exit 0

cd "$(dirname "$0")/.." || exit 1
scripts/setup.sh --check > /dev/null || scripts/setup.sh || exit 1
# shellcheck disable=SC2086  # CMAKE_ARGS and CTEST_ARGS are lists of arguments
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DTERN_CUDA=ON \
  ${CMAKE_ARGS:-} || exit 1
cmake --build "$build_dir" || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
run_ctest() {
  # shellcheck disable=SC2086
  ctest --test-dir "$build_dir" --output-on-failure --no-tests=error "$@" ${CTEST_ARGS:-} \
    2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
}
echo "test-gpu: the CUDA kernels on the device (ctest -L gpu)"
run_ctest -L gpu
echo "test-gpu: the device runtime and the CUDA backend on the device" \
  "(TERN_TEST_CUDA_BACKEND=cuda ctest -R Cuda -LE gpu)"
# The tests of machines without a GPU are left out here, and so are the tensor-parallel cases on
# a machine of one GPU (they need two): scripts/gpu_tests_left_out.txt lists both, as gtest
# patterns, which become ctest regular expressions.
kinds=no-gpu
if [ "$(grep -c '^GPU [0-9]' <<<"$gpus")" -lt 2 ]; then
  echo "test-gpu: one GPU: the tensor-parallel tests (two GPUs) are left out"
  kinds="no-gpu|two-gpus"
fi
left_out=$(grep -E "^[^#].*[[:space:]]($kinds)\$" scripts/gpu_tests_left_out.txt |
  awk '{print $1}' | sed 's/\*/.*/g; s/^\.\*//; s/\.\*$//' | paste -sd '|')
TERN_TEST_CUDA_BACKEND=cuda run_ctest -R Cuda -LE gpu -E "$left_out"

skipped=$(grep -E '\*\*\*(Skipped|Not Run)' "$log")
if [ -n "$skipped" ]; then
  echo "test-gpu: these tests did not run on the GPU (a skip here is a failure):" >&2
  echo "$skipped" >&2
  failed=1
fi
[ "$failed" -eq 0 ] && echo "test-gpu: all GPU tests passed"
exit "$failed"
