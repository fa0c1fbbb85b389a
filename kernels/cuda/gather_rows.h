#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// CpuBatchOps::gather_logit_rows on the device, with the rows named by index in device memory:
// to[r][:] = from[row_index[r]][:] for r < count, rows of `width` floats, from_stride and
// to_stride floats apart (identical bits). An index outside [0, from_rows) reads nothing and
// gives a row of quiet NaN: such an index is a backend bug, and NaN carries through the output
// norm and matmul into every logit of that row, where zeros would norm to zeros and pass as a
// uniform distribution. Pointers are device memory. Returns cudaErrorInvalidValue without
// launching when count < 0, width < 1, from_rows < 0, a stride < width, the grid would be too
// large, a pointer is null (with count > 0), or `to` overlaps `from` or row_index; cudaSuccess
// for count == 0; else the launch status.
cudaError_t launch_gather_rows(const float* from, long long from_rows, long long from_stride,
                               const std::int32_t* row_index, int count, float* to,
                               long long to_stride, int width, cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
