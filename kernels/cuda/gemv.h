#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/matmul_types.h"

TERN_CUDA_NAMESPACE_BEGIN

// y[t * w.rows + r] = dot(row r of w, token t of x) for t < tokens: the decode GEMV, one warp
// per weight row streaming it once for up to 8 tokens (more tokens take more thread blocks).
// Integer formats read x.q8_1 (launch_quantize_activations_q8_1), float formats x.f32.
// Every element has the same bits as launch_gemm gives it, whatever the batch
// (kernels/cuda/matmul_chunks.cuh). cudaErrorInvalidValue, with nothing launched, for what
// check_matmul_arguments refuses; tokens == 0 does nothing.
cudaError_t launch_gemv(const DeviceWeights& w, const DeviceActivations& x, int tokens, float* y,
                        cudaStream_t stream);

TERN_CUDA_NAMESPACE_END
