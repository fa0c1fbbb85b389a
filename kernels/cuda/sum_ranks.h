#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// The sum of an all-gather's `ranks` slices of `count` floats, in rank order:
// out[i] = (((g[0][i] + g[1][i]) + g[2][i]) + ...), g[r] = gathered + r * count, one IEEE float
// add per rank after the first (no FMA, no reassociation), so every rank of a tensor-parallel
// group gets identical bits and the result never depends on the grid. Pointers are device memory.
// Returns cudaErrorInvalidValue without launching when ranks < 1, count < 0, the gathered span
// exceeds any device, a pointer is null (with count > 0) or out overlaps gathered; cudaSuccess
// for count 0; else the launch status.
cudaError_t launch_sum_ranks(const float* gathered, int ranks, long long count, float* out,
                             cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
