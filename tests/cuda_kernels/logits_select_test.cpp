// Argmax and top-k over logits (kernels/cuda/logits_select_kernel.cuh) through their launchers,
// against std::partial_sort with the documented order: ragged vocabularies, k from 1 to 64, rows
// with ties, -inf, NaN, -0, and long runs of candidates in one thread (the kernel's slow path),
// every schedule. Selection is exact, so the tolerance is zero: same indices, same value bits.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cuda/logits_select.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr float kInf = std::numeric_limits<float>::infinity();

// The documented order: NaN above everything, then larger values, then lower indices.
bool ranks_before(const std::vector<float>& row, std::int32_t a, std::int32_t b) {
  const bool a_nan = std::isnan(row[a]), b_nan = std::isnan(row[b]);
  if (a_nan != b_nan) return a_nan;
  if (!a_nan && row[a] != row[b]) return row[a] > row[b];
  return a < b;
}

// Row r of a logits matrix; its kind cycles through the cases the order has to handle.
std::vector<float> make_row(int vocab, int r, std::mt19937& random) {
  std::vector<float> row(static_cast<std::size_t>(vocab));
  std::uniform_real_distribution<float> value(-10.0f, 10.0f);
  std::uniform_int_distribution<int> level(-6, 6);
  for (int i = 0; i < vocab; ++i) {
    float& v = row[static_cast<std::size_t>(i)];
    switch (r % 6) {
      case 0:
        v = value(random);
        break;  // distinct
      case 1:
        v = static_cast<float>(level(random)) * 0.5f;
        break;  // many ties
      case 2:
        v = random() % 3 == 0 ? -kInf : static_cast<float>(level(random));
        break;
      case 3:
        v = -kInf;
        break;  // nothing finite
      case 4:
        v = i % 256 == 0 ? 1.0f : (i % 2 == 0 ? -0.0f : 0.0f);
        break;  // one thread's run
      default:
        v = i % 97 == 0 ? std::nanf("") : value(random);
        break;  // NaNs rank first
    }
  }
  return row;
}

struct Case {
  int rows, vocab;
};

std::vector<float> make_logits(const Case& c) {
  std::mt19937 random(static_cast<unsigned>(c.vocab * 131 + c.rows));
  std::vector<float> logits;
  for (int r = 0; r < c.rows; ++r) {
    const std::vector<float> row = make_row(c.vocab, r, random);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  return logits;
}

// The k best indices of row r, best first.
std::vector<std::int32_t> expected_top(const std::vector<float>& logits, const Case& c, int r,
                                       int k) {
  const std::vector<float> row(logits.begin() + static_cast<long>(r) * c.vocab,
                               logits.begin() + static_cast<long>(r + 1) * c.vocab);
  std::vector<std::int32_t> order(static_cast<std::size_t>(c.vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](std::int32_t a, std::int32_t b) { return ranks_before(row, a, b); });
  order.resize(static_cast<std::size_t>(k));
  return order;
}

constexpr Case kCases[] = {{1, 1}, {6, 1}, {6, 31}, {6, 1000}, {6, 32003}, {64, 257}};

TEST(CudaLogitsSelect, ArgmaxIsTheFirstMaximum) {
  TERN_REQUIRE_DEVICE();
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << "rows " << c.rows << " vocab " << c.vocab);
    const std::vector<float> logits = make_logits(c);
    const DeviceArray<float> d_logits(logits);
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      DeviceArray<std::int32_t> d_indices(static_cast<std::size_t>(c.rows) + 1);
      TERN_EXPECT_LAUNCHED(
          launch_argmax(d_logits.data(), c.rows, c.vocab, d_indices.data(), nullptr));
      const std::vector<std::int32_t> indices = d_indices.download();
      for (int r = 0; r < c.rows; ++r)
        ASSERT_EQ(indices[static_cast<std::size_t>(r)], expected_top(logits, c, r, 1)[0])
            << "row " << r;
      EXPECT_EQ(indices.back(), -1) << "wrote past the last row";
    });
  }
}

TEST(CudaLogitsSelect, TopKIsSortedBestFirstWithLowerIndicesFirstAmongTies) {
  TERN_REQUIRE_DEVICE();
  for (const Case& c : kCases) {
    const std::vector<float> logits = make_logits(c);
    const DeviceArray<float> d_logits(logits);
    for (const int k : {1, 2, 40, 64}) {
      if (k > c.vocab) continue;
      SCOPED_TRACE(testing::Message() << "rows " << c.rows << " vocab " << c.vocab << " k " << k);
      cuda_test::for_each_pass([&](const cuda_test::Pass&) {
        const std::size_t slots = static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(k);
        DeviceArray<float> d_values(slots + 1);
        DeviceArray<std::int32_t> d_indices(slots + 1);
        TERN_EXPECT_LAUNCHED(launch_top_k(d_logits.data(), c.rows, c.vocab, k, d_values.data(),
                                          d_indices.data(), nullptr));
        const std::vector<float> values = d_values.download();
        const std::vector<std::int32_t> indices = d_indices.download();
        for (int r = 0; r < c.rows; ++r) {
          const std::vector<std::int32_t> expected = expected_top(logits, c, r, k);
          for (int j = 0; j < k; ++j) {
            const std::size_t at = static_cast<std::size_t>(r) * k + j;
            ASSERT_EQ(indices[at], expected[static_cast<std::size_t>(j)])
                << "row " << r << " rank " << j;
            const float logit = logits[static_cast<std::size_t>(r) * c.vocab + indices[at]];
            ASSERT_EQ(std::bit_cast<std::uint32_t>(values[at]), std::bit_cast<std::uint32_t>(logit))
                << "row " << r << " rank " << j;
          }
        }
        EXPECT_EQ(indices.back(), -1) << "wrote past the last row";
        EXPECT_EQ(std::bit_cast<std::uint32_t>(values.back()), 0xffffffffu);
      });
    }
  }
}

TEST(CudaLogitsSelect, LaunchersRefuseBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const Case c{2, 100};
  const DeviceArray<float> d_logits(make_logits(c));
  DeviceArray<float> d_values(2 * kMaxTopK);
  DeviceArray<std::int32_t> d_indices(2 * kMaxTopK);
  const auto top_k = [&](int rows, int vocab, int k) {
    return launch_top_k(d_logits.data(), rows, vocab, k, d_values.data(), d_indices.data(),
                        nullptr);
  };
  EXPECT_EQ(top_k(-1, 100, 2), cudaErrorInvalidValue);
  EXPECT_EQ(top_k(2, 0, 1), cudaErrorInvalidValue);
  EXPECT_EQ(top_k(2, -5, 1), cudaErrorInvalidValue);
  EXPECT_EQ(top_k(2, 100, 0), cudaErrorInvalidValue);
  EXPECT_EQ(top_k(2, 100, -3), cudaErrorInvalidValue);
  EXPECT_EQ(top_k(2, 100, kMaxTopK + 1), cudaErrorInvalidValue);
  EXPECT_EQ(top_k(2, 31, 40), cudaErrorInvalidValue);  // k > vocab: the caller clamps
  EXPECT_EQ(top_k(0, 100, 2), cudaSuccess);
  EXPECT_EQ(launch_argmax(d_logits.data(), -1, 100, d_indices.data(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_argmax(d_logits.data(), 2, 0, d_indices.data(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_argmax(d_logits.data(), 0, 100, d_indices.data(), nullptr), cudaSuccess);
  for (const std::int32_t index : d_indices.download())
    ASSERT_EQ(index, -1) << "a refused launch wrote";
  for (const float v : d_values.download())
    ASSERT_EQ(std::bit_cast<std::uint32_t>(v), 0xffffffffu) << "a refused launch wrote";
}

}  // namespace
}  // namespace tern::kernels::cuda
