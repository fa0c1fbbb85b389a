// The row gather (kernels/cuda/gather_rows_kernel.cuh) through its launcher, against the copy of
// CpuBatchOps::gather_logit_rows: the last token of each chunk that wants logits of a ragged
// plan, random and repeated indices, widths with partial warps and blocks, 1 to 64 rows, packed
// and padded rows, indices out of range, every schedule.

#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/gather_rows.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr int kWidths[] = {1, 31, 33, 4096};
constexpr long long kFromRows = 64;
constexpr std::uint32_t kQuietNan = 0x7fc00000u;

// Random floats, with a NaN carrying a payload, -0 and a subnormal among them: a copy keeps
// every bit.
std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  std::vector<float> values(n);
  for (float& v : values) v = value(random);
  for (std::size_t i = 0; i < n; i += 11) {
    const std::uint32_t special[] = {0x7fc12345u, 0x80000000u, 0x00000007u};
    values[i] = std::bit_cast<float>(special[(i / 11) % 3]);
  }
  return values;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = std::bit_cast<std::uint32_t>(values[i]);
  return bits;
}

struct Chunk {
  long long token_count;
  bool wants_logits;
};

// The rows CpuBatchOps::gather_logit_rows copies: the last token of each chunk that wants
// logits, in plan order. The chunks below hold 64 tokens: prefill chunks and decodes.
std::vector<std::int32_t> last_tokens_of_chunks_that_want_logits() {
  const Chunk plan[] = {{17, true}, {1, true},  {9, false}, {1, true},
                        {30, true}, {1, false}, {1, true},  {4, true}};
  std::vector<std::int32_t> rows;
  long long token_begin = 0;
  for (const Chunk& chunk : plan) {
    if (chunk.wants_logits)
      rows.push_back(static_cast<std::int32_t>(token_begin + chunk.token_count - 1));
    token_begin += chunk.token_count;
  }
  return rows;
}

std::vector<std::vector<std::int32_t>> index_sets() {
  std::mt19937 random(5);
  std::vector<std::int32_t> repeated(64);  // 64 rows out of 64, with repeats
  for (std::int32_t& row : repeated) row = static_cast<std::int32_t>(random() % kFromRows);
  return {{static_cast<std::int32_t>(kFromRows - 1)},
          last_tokens_of_chunks_that_want_logits(),
          repeated,
          {3, -1, 0, static_cast<std::int32_t>(kFromRows), INT_MIN, INT_MAX, 63}};
}

// The CPU's memcpy per row; an index out of range gives a row of quiet NaN.
std::vector<float> expected_rows(const std::vector<float>& from, long long from_stride,
                                 const std::vector<std::int32_t>& index, std::vector<float> to,
                                 long long to_stride, int width) {
  for (std::size_t r = 0; r < index.size(); ++r) {
    float* out = to.data() + static_cast<long long>(r) * to_stride;
    if (index[r] >= 0 && index[r] < kFromRows) {
      std::memcpy(out, from.data() + index[r] * from_stride, sizeof(float) * width);
    } else {
      for (int i = 0; i < width; ++i) out[i] = std::bit_cast<float>(kQuietNan);
    }
  }
  return to;
}

// Identical bits required (a copy; 0 elements differ, measured on the emulator), and nothing
// written past each row's `width` values or after the last row.
TEST(CudaGatherRows, CopiesTheIndexedRowsBitForBitAndWritesNothingElse) {
  TERN_REQUIRE_DEVICE();
  for (const int width : kWidths) {
    for (const long long padding : {0, 3}) {
      const long long from_stride = width + 2 * padding;
      const long long to_stride = width + padding;
      const std::vector<float> from =
          random_values(static_cast<std::size_t>(kFromRows * from_stride), 1 + width);
      DeviceArray<float> d_from(from);
      for (const std::vector<std::int32_t>& index : index_sets()) {
        const auto count = static_cast<int>(index.size());
        const std::vector<float> to =
            random_values(static_cast<std::size_t>((count + 1) * to_stride), 2);
        const std::vector<float> expected =
            expected_rows(from, from_stride, index, to, to_stride, width);
        DeviceArray<std::int32_t> d_index(index);
        cuda_test::for_each_pass([&](const cuda_test::Pass&) {
          DeviceArray<float> d_to(to);
          TERN_EXPECT_LAUNCHED(launch_gather_rows(d_from.data(), kFromRows, from_stride,
                                                  d_index.data(), count, d_to.data(), to_stride,
                                                  width, nullptr));
          EXPECT_EQ(bits_of(d_to.download()), bits_of(expected))
              << "width " << width << " rows " << count << " strides " << from_stride << ", "
              << to_stride;
        });
      }
    }
  }
}

// With no rows to read from, every index is out of range: rows of NaN, and `from` may be null.
TEST(CudaGatherRows, WithNoSourceRowsEveryRowIsNan) {
  TERN_REQUIRE_DEVICE();
  const std::vector<std::int32_t> index = {0, 1, -1};
  DeviceArray<std::int32_t> d_index(index);
  DeviceArray<float> d_to(3 * 5);
  TERN_EXPECT_LAUNCHED(
      launch_gather_rows(nullptr, 0, 5, d_index.data(), 3, d_to.data(), 5, 5, nullptr));
  for (const float value : d_to.download())
    EXPECT_EQ(std::bit_cast<std::uint32_t>(value), kQuietNan);
}

TEST(CudaGatherRows, RefusesBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  constexpr int kWidth = 33;
  const std::vector<float> values = random_values(8 * kWidth, 3);
  DeviceArray<float> from(values);
  DeviceArray<float> to(values);
  DeviceArray<std::int32_t> index(std::vector<std::int32_t>{0, 1, 2, 3});
  const float* f = from.data();
  float* t = to.data();
  const std::int32_t* i = index.data();
  auto gather = [&](const float* src, long long rows, long long src_stride, const std::int32_t* idx,
                    int count, float* dst, long long dst_stride, int width) {
    return launch_gather_rows(src, rows, src_stride, idx, count, dst, dst_stride, width, nullptr);
  };
  EXPECT_EQ(gather(f, 8, kWidth, i, -1, t, kWidth, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, i, 4, t, kWidth, 0), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, -1, kWidth, i, 4, t, kWidth, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth - 1, i, 4, t, kWidth, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, i, 4, t, kWidth - 1, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(nullptr, 8, kWidth, i, 4, t, kWidth, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, nullptr, 4, t, kWidth, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, i, 4, nullptr, kWidth, kWidth), cudaErrorInvalidValue);
  // The output over the source rows, or over the indices.
  EXPECT_EQ(gather(f, 8, kWidth, i, 4, const_cast<float*>(f) + 7 * kWidth, kWidth, kWidth),
            cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, i, 4, reinterpret_cast<float*>(index.data()), 1, 1),
            cudaErrorInvalidValue);
  // More than 65535 blocks of 256 across a row; spans no device holds.
  EXPECT_EQ(gather(f, 8, 65536LL * 256, i, 4, t, 65536LL * 256, 65536 * 256),
            cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, 1LL << 62, i, 4, t, kWidth, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, i, 4, t, 1LL << 62, kWidth), cudaErrorInvalidValue);
  EXPECT_EQ(gather(f, 8, kWidth, i, 0, t, kWidth, kWidth), cudaSuccess);
  EXPECT_EQ(gather(nullptr, 8, kWidth, nullptr, 0, nullptr, kWidth, kWidth), cudaSuccess);
  EXPECT_EQ(bits_of(to.download()), bits_of(values));
}

}  // namespace
}  // namespace tern::kernels::cuda
