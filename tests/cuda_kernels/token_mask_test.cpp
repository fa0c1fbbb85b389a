// Grammar-constrained decoding's token masks on the device (kernels/cuda/token_mask_kernel.cuh)
// through their launcher, against a CPU reference written here (the host's masking,
// engine/generation.cpp Generation::mask_row: a token whose bit is clear gets -inf): vocabularies
// that are not multiples of 64 (1, 63, 65, 259, 1000, 4099) and whole words (64, 4096), rows that
// mix masked and unmasked ones, masks from empty to full, NaN and infinite logits, a
// tensor-parallel slice's bit offset, every schedule. Then the point of it: the top-k and row-sum
// kernels that run after the mask give what they give for the row masked on the host.
//
// Tolerance: none. Masking writes -inf or leaves the logit alone, so the bits must be identical
// (0 elements differ, measured on the emulator).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cuda/logit_row_sums.h"
#include "kernels/cuda/logits_select.h"
#include "kernels/cuda/token_mask.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int kVocabs[] = {1, 63, 64, 65, 259, 1000, 4096, 4099};

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<std::uint32_t>(values[i]);
  return bits;
}

long long words_for(long long bits) {
  return (bits + 63) / 64;
}

// Logits with a NaN, +inf, -inf, -0 and a subnormal among them: masking keeps an allowed
// logit's bits whatever they are.
std::vector<float> random_logits(std::size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> value(0.0f, 4.0f);
  std::vector<float> logits(n);
  for (float& v : logits) v = value(random);
  const std::uint32_t special[] = {0x7fc12345u, 0x7f800000u, 0xff800000u, 0x80000000u, 0x00000007u};
  for (std::size_t i = 5; i < n; i += 13) logits[i] = std::bit_cast<float>(special[(i / 13) % 5]);
  return logits;
}

// Mask m's density cycles through what a grammar gives: nothing allowed, one token, a few, about
// half, all but a few, everything; bits past the vocabulary are set, which must not matter.
std::vector<std::uint64_t> random_mask(long long words, int m, std::mt19937& random) {
  std::vector<std::uint64_t> mask(static_cast<std::size_t>(words), 0);
  const long long bits = words * 64;
  switch (m % 6) {
    case 0:
      break;
    case 1: {
      const long long t = static_cast<long long>(random() % static_cast<unsigned>(bits));
      mask[static_cast<std::size_t>(t / 64)] |= std::uint64_t{1} << (t % 64);
      break;
    }
    case 2:
      for (long long t = 0; t < bits; ++t)
        if (random() % 23 == 0)
          mask[static_cast<std::size_t>(t / 64)] |= std::uint64_t{1} << (t % 64);
      break;
    case 3:
      for (std::uint64_t& word : mask) word = (std::uint64_t{random()} << 32) | random();
      break;
    case 4:
      std::fill(mask.begin(), mask.end(), ~std::uint64_t{0});
      for (long long t = 0; t < bits; ++t)
        if (random() % 31 == 0)
          mask[static_cast<std::size_t>(t / 64)] &= ~(std::uint64_t{1} << (t % 64));
      break;
    default:
      std::fill(mask.begin(), mask.end(), ~std::uint64_t{0});
      break;
  }
  return mask;
}

bool allowed(const std::vector<std::uint64_t>& masks, long long words, int m, long long bit) {
  const std::uint64_t word = masks[static_cast<std::size_t>(m * words + bit / 64)];
  return ((word >> (bit % 64)) & 1u) != 0;
}

// The host's masking, per masked row: -inf where the mask's bit is clear.
std::vector<float> reference(std::vector<float> logits, int vocab,
                             const std::vector<std::uint64_t>& masks, long long words,
                             long long offset, const std::vector<std::int32_t>& mask_rows,
                             int rows) {
  for (std::size_t m = 0; m < mask_rows.size(); ++m) {
    const std::int32_t row = mask_rows[m];
    if (row < 0 || row >= rows) continue;
    for (int i = 0; i < vocab; ++i) {
      if (!allowed(masks, words, static_cast<int>(m), offset + i))
        logits[static_cast<std::size_t>(row) * vocab + i] = -kInf;
    }
  }
  return logits;
}

struct Case {
  int rows;
  std::vector<std::int32_t> mask_rows;  // which rows have a mask, in upload order
};

// Rows that mix masked and unmasked ones: the first and last, every other, one in the middle
// (the rows between keep their logits), masks given out of row order, and every row.
std::vector<Case> cases() {
  return {{1, {0}}, {2, {1}},       {5, {0, 2, 4}},
          {7, {3}}, {6, {5, 0, 3}}, {8, {0, 1, 2, 3, 4, 5, 6, 7}},
          {4, {}}};
}

// Identical bits to the reference in every row, masked or not, and nothing written in the row
// after the last (a guard row).
TEST(CudaTokenMask, MasksTheNamedRowsAsTheHostDoesAndLeavesTheOthers) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(20261201);
  long long masked_elements = 0;
  for (const int vocab : kVocabs) {
    // 0: the whole row's mask; 37 and 128: a tensor-parallel slice starting there.
    for (const long long offset : {0LL, 37LL, 128LL}) {
      const long long words = words_for(offset + vocab) + (offset == 37 ? 1 : 0);
      for (const Case& c : cases()) {
        const auto masked_rows = static_cast<int>(c.mask_rows.size());
        const std::vector<float> logits =
            random_logits(static_cast<std::size_t>(c.rows + 1) * static_cast<std::size_t>(vocab),
                          static_cast<unsigned>(vocab + c.rows));
        std::vector<std::uint64_t> masks;
        for (int m = 0; m < masked_rows; ++m) {
          const std::vector<std::uint64_t> mask = random_mask(words, m + vocab, random);
          masks.insert(masks.end(), mask.begin(), mask.end());
        }
        const std::vector<float> expected =
            reference(logits, vocab, masks, words, offset, c.mask_rows, c.rows);
        for (std::size_t i = 0; i < logits.size(); ++i)
          masked_elements +=
              std::bit_cast<std::uint32_t>(logits[i]) != std::bit_cast<std::uint32_t>(expected[i]);
        const DeviceArray<std::uint64_t> d_masks(masks);
        const DeviceArray<std::int32_t> d_rows(c.mask_rows);
        cuda_test::for_each_pass([&](const cuda_test::Pass&) {
          DeviceArray<float> d_logits(logits);
          TERN_EXPECT_LAUNCHED(launch_token_mask(d_logits.data(), c.rows, vocab, d_masks.data(),
                                                 words, offset, d_rows.data(), masked_rows,
                                                 nullptr));
          ASSERT_EQ(bits_of(d_logits.download()), bits_of(expected))
              << "vocab " << vocab << " offset " << offset << " rows " << c.rows << " masked "
              << masked_rows;
        });
      }
    }
  }
  EXPECT_GT(masked_elements, 0);
  std::printf("token masks: %lld logits set to -inf over all cases\n", masked_elements);
}

// A mask row index outside [0, rows) writes nothing; the valid ones beside it still apply.
TEST(CudaTokenMask, ARowIndexOutsideTheRowsWritesNothing) {
  TERN_REQUIRE_DEVICE();
  constexpr int kRows = 3;
  constexpr int kVocab = 65;
  const std::vector<float> logits = random_logits((kRows + 1) * kVocab, 9);
  const std::vector<std::int32_t> mask_rows = {-1, 1, kRows, 1 << 30};
  const std::vector<std::uint64_t> masks(mask_rows.size() * 2, 0);  // allow nothing
  const std::vector<float> expected = reference(logits, kVocab, masks, 2, 0, mask_rows, kRows);
  const DeviceArray<std::uint64_t> d_masks(masks);
  const DeviceArray<std::int32_t> d_rows(mask_rows);
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    DeviceArray<float> d_logits(logits);
    TERN_EXPECT_LAUNCHED(launch_token_mask(d_logits.data(), kRows, kVocab, d_masks.data(), 2, 0,
                                           d_rows.data(), 4, nullptr));
    EXPECT_EQ(bits_of(d_logits.download()), bits_of(expected));
  });
}

// What the mask is for: the top-k and row-sum kernels after it give, bit for bit, what they give
// for the row masked on the host (whose top k a std::partial_sort gives too), so the host
// sampler's candidates of a masked row are exact. Rows 0 and 2 masked, row 1 not.
TEST(CudaTokenMask, TopKAndRowSumsAfterTheMaskAreThoseOfTheHostMaskedRow) {
  TERN_REQUIRE_DEVICE();
  for (const int vocab : {259, 1000, 4099}) {
    constexpr int kRows = 3;
    constexpr int kTopK = 64;
    std::mt19937 random(static_cast<unsigned>(vocab));
    std::normal_distribution<float> value(0.0f, 3.0f);
    std::vector<float> logits(static_cast<std::size_t>(kRows) * vocab);
    for (float& v : logits) v = value(random);
    const long long words = words_for(vocab);
    const std::vector<std::int32_t> mask_rows = {2, 0};
    std::vector<std::uint64_t> masks(static_cast<std::size_t>(words), 0);
    for (int t = 5; t < vocab; t += 97) {  // a few tokens, fewer than 64
      masks[static_cast<std::size_t>(t / 64)] |= std::uint64_t{1} << (t % 64);
    }
    const std::vector<std::uint64_t> half = random_mask(words, 3, random);
    masks.insert(masks.end(), half.begin(), half.end());
    const std::vector<float> host_masked =
        reference(logits, vocab, masks, words, 0, mask_rows, kRows);
    const std::vector<float> inverse_temperatures = {1.0f / 0.7f, 1.0f, 1.0f / 1.3f};
    const DeviceArray<std::uint64_t> d_masks(masks);
    const DeviceArray<std::int32_t> d_rows(mask_rows);
    const DeviceArray<float> d_inverse(inverse_temperatures);
    const auto summarise = [&](const DeviceArray<float>& d_logits, std::vector<float>& values,
                               std::vector<std::int32_t>& ids, std::vector<float>& lse,
                               std::vector<double>& mass) {
      DeviceArray<float> d_values(kRows * kTopK);
      DeviceArray<std::int32_t> d_ids(kRows * kTopK);
      DeviceArray<float> d_lse(kRows);
      DeviceArray<double> d_mass(kRows);
      TERN_EXPECT_LAUNCHED(launch_top_k(d_logits.data(), kRows, vocab, kTopK, d_values.data(),
                                        d_ids.data(), nullptr));
      TERN_EXPECT_LAUNCHED(launch_logit_row_sums(d_logits.data(), kRows, vocab, d_inverse.data(),
                                                 d_lse.data(), d_mass.data(), nullptr));
      values = d_values.download();
      ids = d_ids.download();
      lse = d_lse.download();
      mass = d_mass.download();
    };
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      DeviceArray<float> d_logits(logits);
      TERN_EXPECT_LAUNCHED(launch_token_mask(d_logits.data(), kRows, vocab, d_masks.data(), words,
                                             0, d_rows.data(), 2, nullptr));
      std::vector<float> values, lse, want_values, want_lse;
      std::vector<std::int32_t> ids, want_ids;
      std::vector<double> mass, want_mass;
      summarise(d_logits, values, ids, lse, mass);
      const DeviceArray<float> d_host_masked(host_masked);
      summarise(d_host_masked, want_values, want_ids, want_lse, want_mass);
      EXPECT_EQ(ids, want_ids) << "vocab " << vocab;
      EXPECT_EQ(bits_of(values), bits_of(want_values));
      EXPECT_EQ(bits_of(lse), bits_of(want_lse));
      for (int r = 0; r < kRows; ++r) {
        EXPECT_EQ(std::bit_cast<std::uint64_t>(mass[static_cast<std::size_t>(r)]),
                  std::bit_cast<std::uint64_t>(want_mass[static_cast<std::size_t>(r)]))
            << "row " << r;
        // The host's own sort of the masked row: larger first, lower id among equals.
        std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
        for (int i = 0; i < vocab; ++i) order[static_cast<std::size_t>(i)] = i;
        const float* row = host_masked.data() + static_cast<std::size_t>(r) * vocab;
        std::partial_sort(order.begin(), order.begin() + kTopK, order.end(),
                          [&](std::int32_t a, std::int32_t b) {
                            return row[a] > row[b] || (row[a] == row[b] && a < b);
                          });
        for (int j = 0; j < kTopK; ++j) {
          ASSERT_EQ(ids[static_cast<std::size_t>(r * kTopK + j)],
                    order[static_cast<std::size_t>(j)])
              << "vocab " << vocab << " row " << r << " rank " << j;
        }
      }
      // Row 2's mask (the first) allows a few tokens: its candidates end in -inf, which tells the
      // sampler they hold the whole row.
      EXPECT_EQ(values[3 * kTopK - 1], -kInf);
      EXPECT_NE(values[2 * kTopK], -kInf);
    });
  }
}

TEST(CudaTokenMask, RefusesBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  constexpr int kVocab = 65;
  const std::vector<float> logits = random_logits(2 * kVocab, 3);
  DeviceArray<float> d_logits(logits);
  const DeviceArray<std::uint64_t> d_masks(std::vector<std::uint64_t>(4, 0));
  const DeviceArray<std::int32_t> d_rows(std::vector<std::int32_t>{0, 1});
  float* l = d_logits.data();
  const std::uint64_t* m = d_masks.data();
  const std::int32_t* r = d_rows.data();
  auto mask = [&](float* logits_at, int rows, int vocab, const std::uint64_t* masks,
                  long long words, long long offset, const std::int32_t* mask_rows, int count) {
    return launch_token_mask(logits_at, rows, vocab, masks, words, offset, mask_rows, count,
                             nullptr);
  };
  EXPECT_EQ(mask(l, -1, kVocab, m, 2, 0, r, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, 0, m, 2, 0, r, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, 0, r, -1), cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, 0, r, 65536), cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, m, 1, 0, r, 2), cudaErrorInvalidValue);   // 65 tokens need 2 words
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, 64, r, 2), cudaErrorInvalidValue);  // bits to 129: 3 words
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, -1, r, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mask(nullptr, 2, kVocab, m, 2, 0, r, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, nullptr, 2, 0, r, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, 0, nullptr, 2), cudaErrorInvalidValue);
  // The logits over the masks or the row indices.
  EXPECT_EQ(mask(l, 2, kVocab, reinterpret_cast<const std::uint64_t*>(l), 2, 0, r, 2),
            cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, 0, reinterpret_cast<const std::int32_t*>(l + 3), 2),
            cudaErrorInvalidValue);
  EXPECT_EQ(mask(l, 2, kVocab, m, 2, 0, r, 0), cudaSuccess);
  EXPECT_EQ(mask(nullptr, 0, kVocab, nullptr, 2, 0, nullptr, 0), cudaSuccess);
  EXPECT_EQ(bits_of(d_logits.download()), bits_of(logits)) << "a refused launch wrote";
}

}  // namespace
}  // namespace tern::kernels::cuda
