// The row-wide sums of logits rows (kernels/cuda/logit_row_sums_kernel.cuh) through their
// launcher, against a host reference written here with the host sampler's arithmetic step for
// step (engine/sampler.cpp: log_probability's normaliser and the weights Sampler::cut_and_draw
// forms; these binaries do not link tern_engine): ragged vocabularies, temperatures 0.3 to 1.5
// and 0, -inf entries, rows of only -inf, NaN, and logits up to 1e4 in magnitude so that most
// weights underflow, every schedule.
//
// Tolerances: scaled_mass within logit_row_sums_relative_error(vocab) of the reference (the
// launcher's own bound: a GPU's expf against the host's, and another order of the double sum).
// log_sum_exp within one float ulp of the reference's result plus vocab * 2^-52 absolute: the sum
// is in double in another order (and a GPU's exp and log are within 1 double ulp), so log(total)
// moves by far less than a float ulp, but near a float rounding boundary it may round the other
// way.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "engine/logit_row_normalisers.h"
#include "kernels/cuda/logit_row_sums.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr float kInf = std::numeric_limits<float>::infinity();

// The host sampler's own sums (engine/logit_row_normalisers.h, header-only).
float reference_log_sum_exp(const std::vector<float>& logits) {
  return engine::log_sum_exp(logits);
}

double reference_scaled_mass(const std::vector<float>& logits, float inverse_temperature) {
  return engine::scaled_mass(logits, inverse_temperature);
}

float ulp_of(float value) {
  const float magnitude = std::fabs(value);
  return std::nextafter(magnitude, kInf) - magnitude;
}

// Row r of a case: its kind cycles through what the sums must handle.
std::vector<float> make_row(int vocab, int r, std::mt19937& random) {
  std::vector<float> row(static_cast<std::size_t>(vocab));
  std::normal_distribution<float> typical(0.0f, 3.0f);
  std::uniform_real_distribution<float> wide(-1e4f, 1e4f);
  for (int i = 0; i < vocab; ++i) {
    float& v = row[static_cast<std::size_t>(i)];
    switch (r % 7) {
      case 0:
      case 1:
        v = typical(random) + 5.0f;  // typical logits
        break;
      case 2:
        v = random() % 3 == 0 ? -kInf : typical(random);  // masked tokens
        break;
      case 3:
        v = wide(random);  // |x| up to 1e4: all but a few weights underflow
        break;
      case 4:
        v = -9000.0f - static_cast<float>(i % 113) * 0.37f;  // large negative, close together
        break;
      case 5:
        v = i % 2 == 0 ? typical(random) * 1e-3f : 1e-30f;  // small values: weights near 1
        break;
      default:
        v = typical(random) - 20.0f;
        break;
    }
  }
  return row;
}

// Temperatures cycle through the sampler's range; 0 (greedy) has inverse 0 and no mass.
float inverse_temperature_of(int r) {
  constexpr float kTemperatures[] = {0.3f, 0.7f, 1.0f, 1.5f, 0.0f};
  const float t = kTemperatures[r % 5];
  return t > 0.0f ? 1.0f / t : 0.0f;  // the sampler's float 1 / T
}

struct Case {
  int rows, vocab;
};

struct Errors {
  double worst_mass = 0;  // relative, against the reference
  double worst_mass_to_bound = 0;
  long long bit_equal_lse = 0;
  long long lse_rows = 0;
};

void check_case(const Case& c, const std::vector<std::vector<float>>& rows,
                const std::vector<float>& inverse_temperatures, Errors& errors) {
  std::vector<float> logits;
  for (const std::vector<float>& row : rows) logits.insert(logits.end(), row.begin(), row.end());
  const DeviceArray<float> d_logits(logits);
  const DeviceArray<float> d_inverse(inverse_temperatures);
  const double bound = logit_row_sums_relative_error(c.vocab);
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    DeviceArray<float> d_lse(static_cast<std::size_t>(c.rows) + 1);
    DeviceArray<double> d_mass(static_cast<std::size_t>(c.rows) + 1);
    TERN_EXPECT_LAUNCHED(launch_logit_row_sums(d_logits.data(), c.rows, c.vocab, d_inverse.data(),
                                               d_lse.data(), d_mass.data(), nullptr));
    const std::vector<float> lse = d_lse.download();
    const std::vector<double> mass = d_mass.download();
    for (int r = 0; r < c.rows; ++r) {
      SCOPED_TRACE(testing::Message() << "row " << r);
      const std::vector<float>& row = rows[static_cast<std::size_t>(r)];
      const float expected_lse = reference_log_sum_exp(row);
      const float got_lse = lse[static_cast<std::size_t>(r)];
      if (std::isnan(expected_lse)) {
        EXPECT_TRUE(std::isnan(got_lse)) << got_lse;
      } else {
        const double allowed = ulp_of(expected_lse) + c.vocab * 0x1.0p-52;
        EXPECT_LE(std::fabs(static_cast<double>(got_lse) - expected_lse), allowed)
            << "got " << got_lse << " expected " << expected_lse;
        ++errors.lse_rows;
        if (std::bit_cast<std::uint32_t>(got_lse) == std::bit_cast<std::uint32_t>(expected_lse))
          ++errors.bit_equal_lse;
      }

      const float inverse = inverse_temperatures[static_cast<std::size_t>(r)];
      const double got_mass = mass[static_cast<std::size_t>(r)];
      if (!(inverse > 0.0f)) {
        EXPECT_TRUE(std::isnan(got_mass)) << got_mass;
        continue;
      }
      const double expected_mass = reference_scaled_mass(row, inverse);
      if (std::isnan(expected_mass)) {
        EXPECT_TRUE(std::isnan(got_mass)) << got_mass;
      } else if (expected_mass == 0) {
        EXPECT_EQ(got_mass, 0.0);  // nothing but -inf: no weights
      } else {
        const double relative = std::fabs(got_mass - expected_mass) / expected_mass;
        EXPECT_LE(relative, bound) << "got " << got_mass << " expected " << expected_mass;
#if defined(TERN_SIMT_EMULATED)
        // The emulator's expf is the host's, so the weights are the host's bits and only the
        // order of the double sums differs: (n - 1) * 2^-53 each, to first order.
        EXPECT_LE(relative, 2.0 * c.vocab * 0x1.0p-53) << "the weights are not the host's";
#endif
        errors.worst_mass = std::max(errors.worst_mass, relative);
        errors.worst_mass_to_bound = std::max(errors.worst_mass_to_bound, relative / bound);
      }
    }
    EXPECT_EQ(std::bit_cast<std::uint32_t>(lse.back()), 0xffffffffu) << "wrote past the last row";
    EXPECT_EQ(std::bit_cast<std::uint64_t>(mass.back()), ~0ull) << "wrote past the last row";
  });
}

TEST(CudaLogitRowSums, MatchTheHostSamplersSumsForRaggedRowsAndTemperatures) {
  TERN_REQUIRE_DEVICE();
  constexpr Case kCases[] = {{7, 1}, {7, 31}, {14, 1000}, {7, 2051}, {2, 151936}};
  Errors errors;
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << "rows " << c.rows << " vocab " << c.vocab);
    std::mt19937 random(static_cast<unsigned>(c.vocab * 7919 + c.rows));
    std::vector<std::vector<float>> rows;
    std::vector<float> inverse_temperatures;
    for (int r = 0; r < c.rows; ++r) {
      rows.push_back(make_row(c.vocab, r, random));
      inverse_temperatures.push_back(inverse_temperature_of(r));
    }
    check_case(c, rows, inverse_temperatures, errors);
  }
  std::printf(
      "[ measured ] scaled_mass: max relative error %.3g (%.3g of the bound); "
      "log_sum_exp: %lld of %lld rows bit-identical\n",
      errors.worst_mass, errors.worst_mass_to_bound, errors.bit_equal_lse, errors.lse_rows);
#if defined(TERN_SIMT_EMULATED)
  // The emulator's exp and log are the host's: only the order of the double sum differs, and for
  // these rows it never moves the float rounding of the log, so every result is the host's bits.
  EXPECT_EQ(errors.bit_equal_lse, errors.lse_rows);
#endif
}

TEST(CudaLogitRowSums, RowsOfNaNOrOnlyMinusInfinityGiveWhatTheHostFormGives) {
  TERN_REQUIRE_DEVICE();
  const int vocab = 300;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> rows(5, std::vector<float>(vocab, 0.0f));
  for (int i = 0; i < vocab; ++i) {
    rows[0][i] = -kInf;                                      // nothing finite: lse NaN, mass 0
    rows[1][i] = i == 257 ? nan : 0.01f * i;                 // one NaN: both NaN
    rows[2][i] = nan;                                        // only NaN
    rows[3][i] = i == 5 ? kInf : 1.0f;                       // +inf: inf - inf is NaN
    rows[4][i] = i == 299 ? 2.0f : (i % 2 ? -kInf : -0.0f);  // -0 and a last maximum
  }
  const std::vector<float> inverse_temperatures(rows.size(), 1.0f / 0.7f);
  Errors errors;
  check_case({static_cast<int>(rows.size()), vocab}, rows, inverse_temperatures, errors);
  // The host forms themselves, spelled out.
  EXPECT_TRUE(std::isnan(reference_log_sum_exp(rows[0])));
  EXPECT_EQ(reference_scaled_mass(rows[0], 1.0f), 0.0);
  EXPECT_TRUE(std::isnan(reference_log_sum_exp(rows[1])));
  EXPECT_TRUE(std::isnan(reference_scaled_mass(rows[1], 1.0f)));
}

TEST(CudaLogitRowSums, ARowGivesTheSameBitsAloneAndInABatch) {
  TERN_REQUIRE_DEVICE();
  const int vocab = 1000;
  std::mt19937 random(17);
  std::vector<float> logits;
  std::vector<float> inverse_temperatures;
  const int rows = 9;
  for (int r = 0; r < rows; ++r) {
    const std::vector<float> row = make_row(vocab, r, random);
    logits.insert(logits.end(), row.begin(), row.end());
    inverse_temperatures.push_back(inverse_temperature_of(r));
  }
  const DeviceArray<float> d_logits(logits);
  const DeviceArray<float> d_inverse(inverse_temperatures);
  DeviceArray<float> batch_lse(rows);
  DeviceArray<double> batch_mass(rows);
  TERN_EXPECT_LAUNCHED(launch_logit_row_sums(d_logits.data(), rows, vocab, d_inverse.data(),
                                             batch_lse.data(), batch_mass.data(), nullptr));
  const std::vector<float> lse = batch_lse.download();
  const std::vector<double> mass = batch_mass.download();
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    for (int r = 0; r < rows; ++r) {
      DeviceArray<float> one_lse(1);
      DeviceArray<double> one_mass(1);
      TERN_EXPECT_LAUNCHED(launch_logit_row_sums(d_logits.data() + r * vocab, 1, vocab,
                                                 d_inverse.data() + r, one_lse.data(),
                                                 one_mass.data(), nullptr));
      EXPECT_EQ(std::bit_cast<std::uint32_t>(one_lse.download()[0]),
                std::bit_cast<std::uint32_t>(lse[static_cast<std::size_t>(r)]))
          << "row " << r;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(one_mass.download()[0]),
                std::bit_cast<std::uint64_t>(mass[static_cast<std::size_t>(r)]))
          << "row " << r;
    }
  });
}

TEST(CudaLogitRowSums, NoInverseTemperaturesGiveNoMass) {
  TERN_REQUIRE_DEVICE();
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 0.25f};
  const DeviceArray<float> d_logits(logits);
  DeviceArray<float> d_lse(2);
  DeviceArray<double> d_mass(2);
  TERN_EXPECT_LAUNCHED(
      launch_logit_row_sums(d_logits.data(), 2, 3, nullptr, d_lse.data(), d_mass.data(), nullptr));
  const std::vector<float> lse = d_lse.download();
  const std::vector<double> mass = d_mass.download();
  for (int r = 0; r < 2; ++r) {
    const std::vector<float> row(logits.begin() + 3 * r, logits.begin() + 3 * r + 3);
    EXPECT_LE(std::fabs(lse[r] - reference_log_sum_exp(row)), ulp_of(reference_log_sum_exp(row)));
    EXPECT_TRUE(std::isnan(mass[r]));
  }
}

TEST(CudaLogitRowSums, LauncherRefusesBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const DeviceArray<float> d_logits(std::vector<float>(200, 1.0f));
  const DeviceArray<float> d_inverse(std::vector<float>(2, 1.0f));
  DeviceArray<float> d_lse(2);
  DeviceArray<double> d_mass(2);
  const auto sums = [&](int rows, int vocab) {
    return launch_logit_row_sums(d_logits.data(), rows, vocab, d_inverse.data(), d_lse.data(),
                                 d_mass.data(), nullptr);
  };
  EXPECT_EQ(sums(-1, 100), cudaErrorInvalidValue);
  EXPECT_EQ(sums(2, 0), cudaErrorInvalidValue);
  EXPECT_EQ(sums(2, -3), cudaErrorInvalidValue);
  EXPECT_EQ(sums(0, 100), cudaSuccess);
  EXPECT_EQ(launch_logit_row_sums(nullptr, 2, 100, d_inverse.data(), d_lse.data(), d_mass.data(),
                                  nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_logit_row_sums(d_logits.data(), 2, 100, d_inverse.data(), nullptr, d_mass.data(),
                                  nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_logit_row_sums(d_logits.data(), 2, 100, d_inverse.data(), d_lse.data(), nullptr,
                                  nullptr),
            cudaErrorInvalidValue);
  for (const float v : d_lse.download())
    ASSERT_EQ(std::bit_cast<std::uint32_t>(v), 0xffffffffu) << "a refused launch wrote";
  for (const double v : d_mass.download())
    ASSERT_EQ(std::bit_cast<std::uint64_t>(v), ~0ull) << "a refused launch wrote";
}

TEST(CudaLogitRowSums, TheBoundCoversTheExpUlpsAndGrowsWithTheVocabulary) {
  // 3 float ulps of a weight (2 for CUDA's expf, 1 for the host's) at the least, and the double
  // sums' (n - 1) * 2^-53 each, twice.
  EXPECT_GE(logit_row_sums_relative_error(1), 3 * 0x1.0p-23);
  EXPECT_LT(logit_row_sums_relative_error(1), 1e-6);
  EXPECT_GE(logit_row_sums_relative_error(1 << 20) - logit_row_sums_relative_error(1),
            2.0 * ((1 << 20) - 1) * 0x1.0p-53);
  EXPECT_LT(logit_row_sums_relative_error(1 << 20), 1e-6);
}

}  // namespace
// A tensor-parallel row: each of 3 slices' parts of the sums, against the whole row's maximum,
// added up on the host give the whole row's log-sum-exp (host form) and scaled mass within the
// whole row's bound.
TEST(CudaLogitRowSums, SlicesPartsAgainstTheRowMaximumAddUpToTheWholeRow) {
  TERN_REQUIRE_DEVICE();
  constexpr int kRows = 6;
  constexpr int kSlice = 683;  // 3 slices of a 2049-token row
  std::mt19937 random(7);
  std::vector<std::vector<float>> rows;
  std::vector<float> inverse;
  for (int r = 0; r < kRows; ++r) {
    rows.push_back(make_row(3 * kSlice, r == 1 ? 0 : r, random));  // no NaN rows here
    inverse.push_back(inverse_temperature_of(r));
  }
  std::vector<float> row_max;
  for (const auto& row : rows) {
    float largest = -kInf;
    for (const float x : row) largest = std::max(largest, x);
    row_max.push_back(largest);
  }
  const DeviceArray<float> d_max(row_max);
  const DeviceArray<float> d_inverse(inverse);
  std::vector<double> exp_sum(kRows, 0.0), mass(kRows, 0.0);
  for (int slice = 0; slice < 3; ++slice) {
    std::vector<float> logits;
    for (const auto& row : rows) {
      logits.insert(logits.end(), row.begin() + slice * kSlice, row.begin() + (slice + 1) * kSlice);
    }
    const DeviceArray<float> d_logits(logits);
    DeviceArray<double> d_exp(kRows);
    DeviceArray<double> d_mass(kRows);
    TERN_EXPECT_LAUNCHED(launch_logit_row_partial_sums(d_logits.data(), kRows, kSlice, d_max.data(),
                                                       d_inverse.data(), d_exp.data(),
                                                       d_mass.data(), nullptr));
    const std::vector<double> part_exp = d_exp.download();
    const std::vector<double> part_mass = d_mass.download();
    for (int r = 0; r < kRows; ++r) {
      exp_sum[static_cast<std::size_t>(r)] += part_exp[static_cast<std::size_t>(r)];
      mass[static_cast<std::size_t>(r)] += part_mass[static_cast<std::size_t>(r)];
    }
  }
  const double bound = logit_row_sums_relative_error(3 * kSlice);
  for (int r = 0; r < kRows; ++r) {
    const auto at = static_cast<std::size_t>(r);
    const float expected_lse = reference_log_sum_exp(rows[at]);
    const float got_lse = static_cast<float>(std::log(exp_sum[at])) + row_max[at];
    EXPECT_LE(std::fabs(static_cast<double>(got_lse) - expected_lse),
              ulp_of(expected_lse) + 3 * kSlice * 0x1.0p-52)
        << "row " << r;
    if (!(inverse[at] > 0.0f)) {
      EXPECT_TRUE(std::isnan(mass[at])) << "row " << r;
      continue;
    }
    const double expected_mass = reference_scaled_mass(rows[at], inverse[at]);
    EXPECT_LE(std::fabs(mass[at] - expected_mass) / expected_mass, bound) << "row " << r;
  }
  EXPECT_EQ(
      launch_logit_row_partial_sums(nullptr, 1, 4, nullptr, nullptr, nullptr, nullptr, nullptr),
      cudaErrorInvalidValue);
}

}  // namespace tern::kernels::cuda
