#include "kernels/cuda/logit_row_sums.h"

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/logit_row_sums_kernel.cuh"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int kThreads = 256;

}  // namespace

cudaError_t launch_logit_row_sums(const float* logits, int rows, int vocab,
                                  const float* inverse_temperature, float* log_sum_exp,
                                  double* scaled_mass, cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (logits == nullptr || log_sum_exp == nullptr || scaled_mass == nullptr)
    return cudaErrorInvalidValue;
  TERN_LAUNCH(logit_row_sums_kernel<kThreads>, rows, kThreads, 0, stream, logits, vocab,
              static_cast<const float*>(nullptr), inverse_temperature, log_sum_exp,
              static_cast<double*>(nullptr), scaled_mass);
  return cudaGetLastError();
}

cudaError_t launch_logit_row_partial_sums(const float* logits, int rows, int vocab,
                                          const float* row_max, const float* inverse_temperature,
                                          double* exp_sum, double* scaled_mass,
                                          cudaStream_t stream) {
  if (rows < 0 || vocab <= 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (logits == nullptr || row_max == nullptr || exp_sum == nullptr || scaled_mass == nullptr)
    return cudaErrorInvalidValue;
  TERN_LAUNCH(logit_row_sums_kernel<kThreads>, rows, kThreads, 0, stream, logits, vocab, row_max,
              inverse_temperature, static_cast<float*>(nullptr), exp_sum, scaled_mass);
  return cudaGetLastError();
}

// With u = 2^-53 and n = vocab terms y_i <= 1 (the largest is expf(0) = 1 exactly, so S >= 1):
//  - each term: the device's expf within 2 ulp of e^d, the host's within 1 (glibc: 0.502), so the
//    two floats differ by at most 3 ulp <= 3 * 2^-23 relative for normal results, or 3 * 2^-149
//    absolute for subnormal ones: the exact sums of the terms differ by at most
//    e = 2^-21 (4 ulp, a margin over 3) relative plus n * 2^-147 absolute, i.e. relative to S >= 1;
//  - each double sum of n non-negative terms, in any order, is within g = (n - 1)u / (1 - (n - 1)u)
//    of its exact sum (Higham, Accuracy and Stability of Numerical Algorithms, 4.2).
// So scaled_mass / S lies within [(1 - e)(1 - g) / (1 + g), (1 + e)(1 + g) / (1 - g)]; the
// bound is the upper side minus 1 (the larger one), widened by 1/1000 of itself for its own
// roundings.
double logit_row_sums_relative_error(int vocab) {
  const double n = vocab > 1 ? static_cast<double>(vocab) : 1.0;
  const double terms = 0x1.0p-21 + n * 0x1.0p-147;
  const double sum = (n - 1) * 0x1.0p-53 / (1 - (n - 1) * 0x1.0p-53);
  return ((1 + terms) * (1 + sum) / (1 - sum) - 1) * 1.001;
}

TERN_KERNEL_TABLE_PART(logit_row_sums, TERN_KERNEL_ENTRY(logit_row_sums_kernel<kThreads>))

TERN_CUDA_NAMESPACE_END
