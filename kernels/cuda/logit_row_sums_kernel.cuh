#pragma once

// The row-wide sums of logits rows that device-side sampling needs besides the top candidates
// (engine/logit_candidates.h), shared source: nvcc compiles it through logit_row_sums.cu, the
// host compiler against the SIMT emulator (docs/gpu.md). One block per row.

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace logit_row_sums_detail {

// The largest of one value per thread, the same in every thread. fmaxf drops a NaN (as the host
// sampler's std::max does): a NaN shows in the sums instead. Every thread calls it once.
template <int kThreads>
__device__ __forceinline__ float block_max(float value) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  TERN_SHARED(float, warp_max, kThreads / 32);
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = value;
  __syncthreads();
  float best = warp_max[0];
  for (int w = 1; w < kThreads / 32; ++w) best = fmaxf(best, warp_max[w]);
  return best;
}

// Two sums of one value each per thread, valid in thread 0: a fixed tree (warp butterflies, then
// the warps in order), so a row's sums never depend on the schedule or on the other rows.
template <int kThreads>
__device__ __forceinline__ void block_sums(double& first, double& second) {
  for (int offset = 16; offset > 0; offset /= 2) {
    first += __shfl_xor_sync(0xffffffffu, first, offset);
    second += __shfl_xor_sync(0xffffffffu, second, offset);
  }
  TERN_SHARED(double, warp_first, kThreads / 32);
  TERN_SHARED(double, warp_second, kThreads / 32);
  if (threadIdx.x % 32 == 0) {
    warp_first[threadIdx.x / 32] = first;
    warp_second[threadIdx.x / 32] = second;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    first = warp_first[0];
    second = warp_second[0];
    for (int w = 1; w < kThreads / 32; ++w) {
      first += warp_first[w];
      second += warp_second[w];
    }
  }
}

}  // namespace logit_row_sums_detail

// Row blockIdx.x of [rows][vocab] logits: log_sum_exp and scaled_mass as logit_row_sums.h
// defines them; with `row_max`, against that maximum instead of the row's own, and with
// `exp_sum`, the sum of exp((double)(x - m)) before its log (a rank's part of a row).
// Thread t takes elements t, t + kThreads, ... in that order.
template <int kThreads>
__global__ void logit_row_sums_kernel(const float* __restrict__ logits, int vocab,
                                      const float* __restrict__ row_max,
                                      const float* __restrict__ inverse_temperature,
                                      float* __restrict__ log_sum_exp, double* __restrict__ exp_sum,
                                      double* __restrict__ scaled_mass) {
  const float* row = logits + static_cast<long long>(blockIdx.x) * vocab;
  float max_logit;
  if (row_max != nullptr) {  // the same for every thread of the block
    max_logit = row_max[blockIdx.x];
  } else {
    float own_max = -INFINITY;
    for (int i = threadIdx.x; i < vocab; i += kThreads) own_max = fmaxf(own_max, row[i]);
    max_logit = logit_row_sums_detail::block_max<kThreads>(own_max);
  }
  // -0 and +0 tie in fmaxf; +0 gives the same differences and sums as the host's either way.
  if (max_logit == 0.0f) max_logit = 0.0f;

  // Only a positive inverse temperature has a scaled mass (NaN and 0 do not pass).
  const float inverse = inverse_temperature != nullptr ? inverse_temperature[blockIdx.x] : 0.0f;
  const bool scaled = inverse > 0.0f;
  const float max_scaled = __fmul_rn(max_logit, inverse);

  // log_probability()'s terms: the float difference, exp in double. cut_and_draw's: each logit
  // but -inf scaled in float, the float difference, expf. Explicit roundings: no FMA contraction.
  double total = 0.0;
  double mass = 0.0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float logit = row[i];
    total += exp(static_cast<double>(__fsub_rn(logit, max_logit)));
    if (scaled && logit != -INFINITY)
      mass += static_cast<double>(expf(__fsub_rn(__fmul_rn(logit, inverse), max_scaled)));
  }
  logit_row_sums_detail::block_sums<kThreads>(total, mass);
  if (threadIdx.x == 0) {
    if (log_sum_exp != nullptr)
      log_sum_exp[blockIdx.x] = static_cast<float>(log(total)) + max_logit;
    if (exp_sum != nullptr) exp_sum[blockIdx.x] = total;
    scaled_mass[blockIdx.x] = scaled ? mass : static_cast<double>(NAN);
  }
}

TERN_CUDA_NAMESPACE_END
