#pragma once

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

// The row-wide sums a sampler needs from a logits row besides its top candidates
// (engine/logit_candidates.h), so that the row itself need not leave the device. Per row r of
// [rows][vocab] float logits (device memory, like every pointer here), m = the row's largest logit
// (a NaN is passed over, as std::max passes it over in the host sampler):
//
//  log_sum_exp[r] = (float)log(sum_i exp((double)(x_i - m))) + m: engine log_probability()'s
//      normaliser, step for step (the difference in float, exp, the sum and log in double, the
//      log rounded to float before m is added). A row with a NaN gives NaN; so does a row of
//      only -inf (m = -inf makes every difference NaN, as on the host) and a row holding +inf.
//
//  scaled_mass[r], where inverse_temperature[r] > 0: the sum over x_i other than -inf of
//      (double)expf(s_i - s_max), s_i = x_i * inverse_temperature[r] and s_max = m *
//      inverse_temperature[r] each rounded to float, the difference in float: the very float
//      weights Sampler::cut_and_draw forms from a full row, summed in double. The largest weight
//      is expf(0) = 1, so a row with a finite maximum has a mass of at least 1; a row of only
//      -inf has none (0); a NaN (or +inf) gives NaN. Where inverse_temperature[r] is not > 0
//      (greedy, or NaN), and for every row when inverse_temperature is null: NaN.
//
// The sums run in a fixed order per row (each of a block's threads over a fixed stride of the
// row, then a fixed tree): a row's results do not depend on the other rows or the schedule.
// Returns cudaErrorInvalidValue without launching when rows < 0, vocab <= 0 or (for rows > 0)
// logits, log_sum_exp or scaled_mass is null; rows == 0 launches nothing.
cudaError_t launch_logit_row_sums(const float* logits, int rows, int vocab,
                                  const float* inverse_temperature, float* log_sum_exp,
                                  double* scaled_mass, cudaStream_t stream);

// The same sums over a slice of each row (a tensor-parallel rank's vocabulary columns, `vocab`
// of them per row), against the whole row's largest logit row_max[r] (the maximum of every
// rank's), left for the host to add up across the ranks: exp_sum[r] = the slice's part of
// log_sum_exp's sum, sum of exp((double)(x_i - m)); scaled_mass[r] = the slice's part of the
// scaled mass, with s_max = m * inverse_temperature[r]. Every term is the one the host forms
// from the whole row, so the ranks' parts, added in any order, are within
// logit_row_sums_relative_error(whole vocabulary) of the host's sums. Same errors as above
// (row_max, exp_sum and scaled_mass must not be null for rows > 0).
cudaError_t launch_logit_row_partial_sums(const float* logits, int rows, int vocab,
                                          const float* row_max, const float* inverse_temperature,
                                          double* exp_sum, double* scaled_mass,
                                          cudaStream_t stream);

// A bound on |scaled_mass - S| / S for a row of `vocab` logits with a finite maximum, where S is
// the host sampler's own double sum of the same float terms, in vocabulary order, with
// std::exp(float). It covers this build's expf against the host's (2 ulp for CUDA's expf, 0.502
// for glibc's; the emulator's is the host's own) and the different order of the double sums.
// log_sum_exp has no such bound in this API: it differs from the host's by at most one float
// ulp of the result plus about vocab * 2^-52 absolute (a GPU's exp and log in double are within
// 1 ulp, and the order of the sum differs), and is usually bit-identical.
double logit_row_sums_relative_error(int vocab);

TERN_CUDA_NAMESPACE_END
