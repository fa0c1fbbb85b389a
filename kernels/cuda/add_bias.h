#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// CpuBatchOps::add_bias on the device: rows[t][i] += bias[i] for t < tokens and i < width, the
// rows row_stride floats apart, with the CPU's single float add (identical bits). Pointers are
// device memory. Returns cudaErrorInvalidValue without launching when tokens < 0, width < 1,
// row_stride < width, the grid would be too large, a pointer is null (with tokens > 0) or bias
// lies within the rows it is added to; cudaSuccess for no tokens; else the launch status.
cudaError_t launch_add_bias(float* rows, long long row_stride, long long tokens, const float* bias,
                            int width, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
