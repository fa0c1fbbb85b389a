#!/usr/bin/env bash
# The tern binary must start on a machine without the NVIDIA driver or CUDA libraries: cudart is
# linked statically, and nothing loads libcuda, cuBLAS or NCCL at startup (docs/gpu.md).
#   tern_needs_no_cuda_driver_test.sh TERN_BINARY
set -euo pipefail
binary=${1:?usage: tern_needs_no_cuda_driver_test.sh TERN_BINARY}
command -v readelf >/dev/null || { echo "SKIP: needs readelf (binutils)"; exit 77; }
needed=$(readelf -d "$binary" | awk '/\(NEEDED\)/ { print $NF }' | tr -d '[]')
echo "$binary needs:"
echo "$needed" | sed 's/^/  /'
if echo "$needed" | grep -E '^lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-ml)\.so'; then
  echo "FAIL: tern links a CUDA library dynamically: it would not start without it"
  exit 1
fi
echo "ok: no CUDA library is needed at load time"
