// The embedding gather (kernels/cuda/embedding_kernel.cuh) through its launcher, against the CPU's
// dequantize_row: every table format, ragged hidden sizes, 1 to 64 tokens with repeated ids, ids
// out of range, every schedule.

#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cuda/embedding.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

constexpr long long kVocab = 23;
constexpr int kTokenCounts[] = {1, 5, 64};

std::size_t row_bytes(TensorType type, int hidden) {
  return static_cast<std::size_t>(*tensor_bytes(type, static_cast<std::uint64_t>(hidden)));
}

// A scale as GGUF files hold them: a finite half, every fifth one subnormal.
std::uint16_t random_scale(std::mt19937& random, int n) {
  std::uniform_real_distribution<float> value(-0.5f, 0.5f);
  return f32_to_f16(n % 5 == 4 ? value(random) * 1e-5f : value(random));
}

// Random quants and finite scales (a NaN scale would compare by payload, which a GPU does not
// keep), so every bit pattern of the quant fields is read.
std::vector<unsigned char> random_table(TensorType type, int hidden, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<unsigned char> bytes(row_bytes(type, hidden) * kVocab);
  for (unsigned char& byte : bytes) byte = static_cast<unsigned char>(random());
  const std::size_t count = bytes.size() / tensor_type_traits(type).block_bytes;
  auto fix = [&]<class Block>(Block*, auto&& set_scales) {
    for (std::size_t b = 0; b < count; ++b) {
      Block block;
      std::memcpy(&block, bytes.data() + b * sizeof(Block), sizeof(Block));
      set_scales(block, static_cast<int>(b));
      std::memcpy(bytes.data() + b * sizeof(Block), &block, sizeof(Block));
    }
  };
  switch (type) {
    case TensorType::f32:
      fix(static_cast<float*>(nullptr),
          [&](float& v, int) { v = std::uniform_real_distribution<float>(-4.0f, 4.0f)(random); });
      break;
    case TensorType::f16:
    case TensorType::bf16: {
      const std::uint16_t exponent = type == TensorType::f16 ? 0x7c00u : 0x7f80u;
      fix(static_cast<std::uint16_t*>(nullptr), [&](std::uint16_t& v, int) {
        if ((v & exponent) == exponent) v ^= 0x4000u;  // no infinities or NaNs
      });
      break;
    }
    case TensorType::q8_0:
      fix(static_cast<BlockQ8_0*>(nullptr),
          [&](BlockQ8_0& block, int b) { block.d = random_scale(random, b); });
      break;
    case TensorType::q4_0:
      fix(static_cast<BlockQ4_0*>(nullptr),
          [&](BlockQ4_0& block, int b) { block.d = random_scale(random, b); });
      break;
    case TensorType::q4_k:
      fix(static_cast<BlockQ4K*>(nullptr), [&](BlockQ4K& block, int b) {
        block.d = random_scale(random, b);
        block.dmin = random_scale(random, b + 1);
      });
      break;
    case TensorType::q6_k:
      fix(static_cast<BlockQ6K*>(nullptr),
          [&](BlockQ6K& block, int b) { block.d = random_scale(random, b); });
      break;
    default:
      ADD_FAILURE() << "no table generator for " << tensor_type_name(type);
  }
  return bytes;
}

std::vector<float> expected_rows(TensorType type, const std::vector<unsigned char>& table,
                                 int hidden, const std::vector<std::int32_t>& ids) {
  std::vector<float> rows(ids.size() * static_cast<std::size_t>(hidden), 0.0f);
  for (std::size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= kVocab) continue;
    dequantize_row(type, table.data() + static_cast<std::size_t>(ids[t]) * row_bytes(type, hidden),
                   rows.data() + t * static_cast<std::size_t>(hidden), hidden);
  }
  return rows;
}

// The gathered rows' bits against expected's, and the guard past the end still the 0xff fill.
void expect_rows(const std::vector<float>& out, const std::vector<float>& expected,
                 const char* what) {
  ASSERT_EQ(out.size(), expected.size() + 1);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(expected[i]))
        << what << " element " << i << ": " << out[i] << " != " << expected[i];
  }
  EXPECT_EQ(std::bit_cast<std::uint32_t>(out.back()), 0xffffffffu)
      << what << ": wrote past the end";
}

struct Format {
  TensorType type;
  std::vector<int> hiddens;  // ragged: whole blocks, not multiples of the 256 threads of a chunk
};

const Format kFormats[] = {
    {TensorType::f32, {1, 33, 300}},   {TensorType::f16, {1, 33, 300}},
    {TensorType::bf16, {1, 33, 300}},  {TensorType::q8_0, {32, 96, 288}},
    {TensorType::q4_0, {32, 96, 288}}, {TensorType::q4_k, {256, 768}},
    {TensorType::q6_k, {256, 768}},
};

// Dequantization is exact float arithmetic in the CPU's order (see dequantize.cuh), so the
// tolerance is zero: the same bits, on the emulator and on a GPU.
TEST(CudaEmbedding, EveryFormatMatchesDequantizeRowBitForBit) {
  TERN_REQUIRE_DEVICE();
  for (const Format& format : kFormats) {
    for (const int hidden : format.hiddens) {
      const std::vector<unsigned char> table = random_table(format.type, hidden, 7 + hidden);
      const DeviceArray<unsigned char> d_table(table);
      for (const int tokens : kTokenCounts) {
        SCOPED_TRACE(testing::Message() << tensor_type_name(format.type) << " hidden " << hidden
                                        << " tokens " << tokens);
        std::mt19937 random(static_cast<unsigned>(tokens));
        std::vector<std::int32_t> ids(static_cast<std::size_t>(tokens));
        // Ids from a third of the vocabulary: 64 tokens repeat ids; the last row is always used.
        for (std::int32_t& id : ids) id = static_cast<std::int32_t>(random() % (kVocab / 3)) * 3;
        ids.back() = kVocab - 1;
        const std::vector<float> expected = expected_rows(format.type, table, hidden, ids);
        const DeviceArray<std::int32_t> d_ids(ids);
        cuda_test::for_each_pass([&](const cuda_test::Pass&) {
          DeviceArray<float> d_out(expected.size() + 1);
          TERN_EXPECT_LAUNCHED(launch_embedding_gather(format.type, d_table.data(), kVocab, hidden,
                                                       d_ids.data(), tokens, d_out.data(),
                                                       nullptr));
          expect_rows(d_out.download(), expected, "gather");
        });
      }
    }
  }
}

TEST(CudaEmbedding, IdsOutOfRangeGiveRowsOfZeros) {
  TERN_REQUIRE_DEVICE();
  const std::vector<std::int32_t> ids = {-1, 4, kVocab, INT32_MAX, INT32_MIN, kVocab - 1};
  for (const TensorType type : {TensorType::f32, TensorType::q4_k}) {
    SCOPED_TRACE(tensor_type_name(type));
    const int hidden = 256;
    const std::vector<unsigned char> table = random_table(type, hidden, 11);
    const std::vector<float> expected = expected_rows(type, table, hidden, ids);
    const DeviceArray<unsigned char> d_table(table);
    const DeviceArray<std::int32_t> d_ids(ids);
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      DeviceArray<float> d_out(expected.size() + 1);
      TERN_EXPECT_LAUNCHED(launch_embedding_gather(type, d_table.data(), kVocab, hidden,
                                                   d_ids.data(), static_cast<int>(ids.size()),
                                                   d_out.data(), nullptr));
      const std::vector<float> out = d_out.download();
      expect_rows(out, expected, "out of range");
      EXPECT_EQ(out[0], 0.0f);
      EXPECT_NE(out[static_cast<std::size_t>(hidden)], 0.0f);  // row 4 is not all zeros
    });
  }
}

TEST(CudaEmbedding, LauncherRefusesBadArgumentsWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const std::vector<unsigned char> table = random_table(TensorType::q8_0, 64, 3);
  const DeviceArray<unsigned char> d_table(table);
  const DeviceArray<std::int32_t> d_ids(std::vector<std::int32_t>{0, 1});
  DeviceArray<float> d_out(2 * 256);
  const auto gather = [&](TensorType type, long long vocab, int hidden, int tokens) {
    return launch_embedding_gather(type, d_table.data(), vocab, hidden, d_ids.data(), tokens,
                                   d_out.data(), nullptr);
  };
  EXPECT_EQ(gather(TensorType::q8_0, kVocab, 64, -1), cudaErrorInvalidValue);
  EXPECT_EQ(gather(TensorType::q8_0, kVocab, 0, 2), cudaErrorInvalidValue);
  EXPECT_EQ(gather(TensorType::q8_0, kVocab, -32, 2), cudaErrorInvalidValue);
  EXPECT_EQ(gather(TensorType::q8_0, 0, 64, 2), cudaErrorInvalidValue);
  EXPECT_EQ(gather(TensorType::q8_0, kVocab, 48, 2), cudaErrorInvalidValue);  // not whole blocks
  EXPECT_EQ(gather(TensorType::q4_k, kVocab, 128, 2), cudaErrorInvalidValue);
  EXPECT_EQ(gather(TensorType::q4_1, kVocab, 64, 2), cudaErrorInvalidValue);  // unsupported
  EXPECT_EQ(gather(TensorType::q8_k, kVocab, 256, 2), cudaErrorInvalidValue);
  EXPECT_EQ(gather(TensorType::q8_0, kVocab, 64, 0), cudaSuccess);  // nothing to do
  for (const float v : d_out.download())
    ASSERT_EQ(std::bit_cast<std::uint32_t>(v), 0xffffffffu) << "a refused launch wrote";
}

}  // namespace
}  // namespace tern::kernels::cuda
