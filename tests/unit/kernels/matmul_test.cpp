#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/q8_tiles.h"
#include "kernels/cpu/quant.h"

namespace tern::kernels {
namespace {

constexpr TensorType kTypes[] = {TensorType::f32,  TensorType::f16,  TensorType::bf16,
                                 TensorType::q8_0, TensorType::q4_0, TensorType::q4_k,
                                 TensorType::q6_k};
constexpr Isa kIsas[] = {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_vnni};

bool is_quantized(TensorType type) {
  return type != TensorType::f32 && type != TensorType::f16 && type != TensorType::bf16;
}

// A random weight matrix stored in `type`, plus its exact f32 values.
struct TestMatrix {
  std::vector<std::byte> data;
  std::vector<float> values;  // dequantized, row-major
  WeightMatrix w;
};

TestMatrix make_matrix(TensorType type, std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  TestMatrix m;
  const std::size_t row_bytes = *tensor_bytes(type, static_cast<std::uint64_t>(cols));
  m.data.resize(row_bytes * static_cast<std::size_t>(rows));
  m.values.resize(static_cast<std::size_t>(rows * cols));
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng);
    std::byte* dst = m.data.data() + static_cast<std::size_t>(r) * row_bytes;
    EXPECT_TRUE(quantize_row(type, row.data(), dst, cols));
    dequantize_row(type, dst, m.values.data() + r * cols, cols);
  }
  m.w = WeightMatrix{type, m.data.data(), rows, cols, row_bytes};
  return m;
}

std::vector<float> make_activations(std::int64_t tokens, std::int64_t stride, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(tokens * stride));
  for (float& v : x) v = normal(rng);
  return x;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : kIsas) {
    if (is_isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

std::string label(TensorType type, Isa isa) {
  return std::string(tensor_type_name(type)) + "/" + std::string(isa_name(isa));
}

// The error the activation quantization may add to one output: each x_k moves by at most half
// its block's step, times |w_k|. Float weights only get rounding slack.
double allowed_error(TensorType type, const float* w, const float* x, std::int64_t cols) {
  double magnitude = 0, quantization = 0;
  const std::int64_t block = type == TensorType::q4_k || type == TensorType::q6_k ? 256 : 32;
  for (std::int64_t b = 0; b < cols; b += block) {
    float amax = 0;
    for (std::int64_t k = b; k < std::min(cols, b + block); ++k)
      amax = std::max(amax, std::fabs(x[k]));
    for (std::int64_t k = b; k < std::min(cols, b + block); ++k) {
      magnitude += std::fabs(static_cast<double>(w[k]) * x[k]);
      quantization += std::fabs(w[k]) * (amax / 127.0 / 2);
    }
  }
  return (is_quantized(type) ? quantization * 1.01 : 0.0) + magnitude * 2e-6 + 1e-6;
}

TEST(Matmul, EveryPathMatchesTheReferenceWithinActivationQuantization) {
  ThreadPool pool(2);
  constexpr std::int64_t kRows = 77, kTokens = 7;
  for (TensorType type : kTypes) {
    // Float weights also get a ragged column count.
    for (std::int64_t cols : {std::int64_t{512}, std::int64_t{is_quantized(type) ? 768 : 203}}) {
      const TestMatrix m = make_matrix(type, kRows, cols, 11);
      const std::int64_t x_stride = cols + 5;
      const std::vector<float> x = make_activations(kTokens, x_stride, 12);
      MatmulWorkspace workspace(kTokens, cols, 2);
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(label(type, isa) + " cols=" + std::to_string(cols));
        std::vector<float> y(kTokens * (kRows + 3), -1.0f);
        matmul(isa, m.w, x.data(), kTokens, x_stride, y.data(), kRows + 3, workspace, pool);
        for (std::int64_t t = 0; t < kTokens; ++t) {
          for (std::int64_t r = 0; r < kRows; ++r) {
            const float* w_row = m.values.data() + r * cols;
            const float* x_row = x.data() + t * x_stride;
            double expected = 0;
            for (std::int64_t k = 0; k < cols; ++k)
              expected += static_cast<double>(w_row[k]) * x_row[k];
            ASSERT_NEAR(y[t * (kRows + 3) + r], expected, allowed_error(type, w_row, x_row, cols))
                << "row " << r << " token " << t;
          }
          for (std::int64_t r = kRows; r < kRows + 3; ++r) EXPECT_EQ(y[t * (kRows + 3) + r], -1.0f);
        }
      }
    }
  }
}

// Integer block dots are exact and the float chain is the same on every path, so quantized
// weights give the same bits on every instruction set.
TEST(Matmul, QuantizedPathsAgreeBitForBit) {
  ThreadPool pool(1);
  constexpr std::int64_t kRows = 45, kCols = 1024, kTokens = 5;
  const std::vector<float> x = make_activations(kTokens, kCols, 3);
  for (TensorType type : kTypes) {
    if (!is_quantized(type)) continue;
    const TestMatrix m = make_matrix(type, kRows, kCols, 4);
    MatmulWorkspace workspace(kTokens, kCols, 1);
    std::vector<float> reference(kTokens * kRows);
    matmul(Isa::scalar, m.w, x.data(), kTokens, kCols, reference.data(), kRows, workspace, pool);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(label(type, isa));
      std::vector<float> y(kTokens * kRows);
      matmul(isa, m.w, x.data(), kTokens, kCols, y.data(), kRows, workspace, pool);
      EXPECT_EQ(std::memcmp(y.data(), reference.data(), y.size() * sizeof(float)), 0);
    }
  }
}

TEST(Matmul, ResultsAreBatchAndThreadInvariant) {
  constexpr std::int64_t kRows = 100, kCols = 512, kTokens = 32;
  ThreadPool one(1), two(2);
  const std::vector<float> x = make_activations(kTokens, kCols, 5);
  for (TensorType type : kTypes) {
    const TestMatrix m = make_matrix(type, kRows, kCols, 6);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(label(type, isa));
      MatmulWorkspace workspace(kTokens, kCols, 2);
      std::vector<float> batch(kTokens * kRows);
      matmul(isa, m.w, x.data(), kTokens, kCols, batch.data(), kRows, workspace, two);

      std::vector<float> other(kTokens * kRows);
      matmul(isa, m.w, x.data(), kTokens, kCols, other.data(), kRows, workspace, one);
      EXPECT_EQ(std::memcmp(batch.data(), other.data(), batch.size() * sizeof(float)), 0);

      // A workspace smaller than the batch splits it into chunks of 5 tokens.
      MatmulWorkspace small(5, kCols, 2);
      matmul(isa, m.w, x.data(), kTokens, kCols, other.data(), kRows, small, two);
      EXPECT_EQ(std::memcmp(batch.data(), other.data(), batch.size() * sizeof(float)), 0);

      // A pool larger than the workspace's thread count uses only what the workspace covers.
      MatmulWorkspace one_thread(kTokens, kCols, 1);
      matmul(isa, m.w, x.data(), kTokens, kCols, other.data(), kRows, one_thread, two);
      EXPECT_EQ(std::memcmp(batch.data(), other.data(), batch.size() * sizeof(float)), 0);

      // A sub-batch starting mid-batch.
      std::vector<float> sub(13 * kRows);
      matmul(isa, m.w, x.data() + 9 * kCols, 13, kCols, sub.data(), kRows, workspace, two);
      EXPECT_EQ(std::memcmp(batch.data() + 9 * kRows, sub.data(), sub.size() * sizeof(float)), 0);

      for (std::int64_t t = 0; t < kTokens; ++t) {
        for (ThreadPool* pool : {&one, &two}) {
          std::vector<float> alone(kRows);
          matmul(isa, m.w, x.data() + t * kCols, 1, kCols, alone.data(), kRows, workspace, *pool);
          ASSERT_EQ(std::memcmp(batch.data() + t * kRows, alone.data(), kRows * sizeof(float)), 0)
              << "token " << t << " threads " << pool->size();
        }
      }
    }
  }
}

// Every batch size of the small-batch kernels (token chunks of 1..8, several chunks, and the
// switch to the GEMM) gives each token the bits it gets alone, with rows that leave ragged tiles.
TEST(Matmul, SmallBatchesMatchTheSingleTokenPath) {
  constexpr std::int64_t kRows = 83, kCols = 768, kMaxTokens = 64;
  ThreadPool two(2);
  const std::vector<float> x = make_activations(kMaxTokens, kCols, 7);
  for (TensorType type : kTypes) {
    const std::int64_t cols = is_quantized(type) ? kCols : kCols - 3;
    const TestMatrix m = make_matrix(type, kRows, cols, 8);
    for (Isa isa : supported_isas()) {
      MatmulWorkspace workspace(kMaxTokens, cols, 2);
      std::vector<float> alone(kMaxTokens * kRows);
      for (std::int64_t t = 0; t < kMaxTokens; ++t) {
        matmul(isa, m.w, x.data() + t * kCols, 1, kCols, alone.data() + t * kRows, kRows, workspace,
               two);
      }
      for (std::int64_t tokens : {2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 24, 31, 39, 40, 41, 64}) {
        SCOPED_TRACE(label(type, isa) + " tokens=" + std::to_string(tokens));
        std::vector<float> batch(static_cast<std::size_t>(tokens * kRows));
        matmul(isa, m.w, x.data(), tokens, kCols, batch.data(), kRows, workspace, two);
        EXPECT_EQ(std::memcmp(batch.data(), alone.data(), batch.size() * sizeof(float)), 0);
      }
    }
  }
}

// The 16-row tile copy is read instead of the row-major blocks by the VNNI kernels; every batch
// size (decode, small batches, the GEMM sizes) gets the row-major bits, with leftover rows past
// the last whole tile, uneven thread splits, and a column count that is not a multiple of 16
// blocks.
TEST(Matmul, TiledWeightsGiveTheRowMajorBits) {
  if (!is_isa_supported(Isa::avx512_vnni)) GTEST_SKIP() << "no AVX512-VNNI on this CPU";
  constexpr std::int64_t kRows = 83, kMaxTokens = 64;
  ThreadPool one(1), two(2);
  for (TensorType type : {TensorType::q8_0, TensorType::q4_0}) {
    ASSERT_TRUE(uses_q8_tiles(type, Isa::avx512_vnni));
    for (std::int64_t cols : {std::int64_t{768}, std::int64_t{2048}}) {
      const TestMatrix m = make_matrix(type, kRows, cols, 21);
      const std::vector<float> x = make_activations(kMaxTokens, cols, 22);
      AlignedBuffer tiles(q8_tiles_bytes(m.w));
      ASSERT_EQ(tiles.size(), static_cast<std::size_t>(80) * m.w.row_bytes);
      const WeightMatrix tiled = repack_q8_tiles(m.w, tiles.data(), two);
      ASSERT_EQ(tiled.tiled_rows, 80);
      MatmulWorkspace workspace(kMaxTokens, cols, 2);
      for (std::int64_t tokens : {1, 2, 5, 8, 9, 17, 40, 64}) {
        for (ThreadPool* pool : {&one, &two}) {
          SCOPED_TRACE(label(type, Isa::avx512_vnni) + " cols=" + std::to_string(cols) +
                       " tokens=" + std::to_string(tokens) +
                       " threads=" + std::to_string(pool->size()));
          std::vector<float> expected(static_cast<std::size_t>(tokens * kRows));
          std::vector<float> actual(expected.size(), -1.0f);
          matmul(Isa::avx512_vnni, m.w, x.data(), tokens, cols, expected.data(), kRows, workspace,
                 *pool);
          matmul(Isa::avx512_vnni, tiled, x.data(), tokens, cols, actual.data(), kRows, workspace,
                 *pool);
          EXPECT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)),
                    0);
        }
      }
      // Kernels that do not read tiles keep using the row-major data.
      for (Isa isa : supported_isas()) {
        if (uses_q8_tiles(type, isa)) continue;
        SCOPED_TRACE(label(type, isa));
        std::vector<float> expected(kRows), actual(kRows);
        matmul(isa, m.w, x.data(), 1, cols, expected.data(), kRows, workspace, two);
        matmul(isa, tiled, x.data(), 1, cols, actual.data(), kRows, workspace, two);
        EXPECT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0);
      }
    }
  }
}

// A group of matrices over one input gives each output the bits of its own matmul(), for every
// path; matrices of another type or width in the group fall back to one call each.
TEST(Matmul, SameInputGroupsMatchSeparateCalls) {
  constexpr std::int64_t kCols = 512;
  ThreadPool two(2);
  const std::vector<float> x = make_activations(40, kCols, 31);
  for (TensorType type : kTypes) {
    const TestMatrix q = make_matrix(type, 77, kCols, 32);
    const TestMatrix k = make_matrix(type, 16, kCols, 33);
    const TestMatrix v = make_matrix(type, 45, kCols, 34);
    const TestMatrix other =
        make_matrix(type == TensorType::q8_0 ? TensorType::q4_0 : TensorType::q8_0, 20, kCols, 35);
    for (Isa isa : supported_isas()) {
      MatmulWorkspace workspace(40, kCols, 2);
      for (std::int64_t tokens : {1, 3, 40}) {
        SCOPED_TRACE(label(type, isa) + " tokens=" + std::to_string(tokens));
        for (bool mixed : {false, true}) {
          const TestMatrix* members[] = {&q, &k, &v, mixed ? &other : &k};
          std::vector<std::vector<float>> grouped(4), separate(4);
          std::vector<MatmulTarget> targets;
          for (int i = 0; i < 4; ++i) {
            const WeightMatrix& w = members[i]->w;
            grouped[i].assign(static_cast<std::size_t>(tokens * (w.rows + 2)), -1.0f);
            separate[i].assign(grouped[i].size(), -1.0f);
            targets.push_back({&w, grouped[i].data(), w.rows + 2});
            matmul(isa, w, x.data(), tokens, kCols, separate[i].data(), w.rows + 2, workspace, two);
          }
          matmul_same_input(isa, targets, x.data(), tokens, kCols, workspace, two);
          for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(std::memcmp(grouped[i].data(), separate[i].data(),
                                  grouped[i].size() * sizeof(float)),
                      0)
                << "member " << i << (mixed ? " (mixed group)" : "");
          }
        }
      }
    }
  }
}

// The experts of a mixture-of-experts layer: each matrix with its own rows, in one job, with the
// bits of separate calls; neighbours reading the same rows share their quantization; groups the
// workspace cannot hold, or of mixed types, fall back to separate calls.
TEST(Matmul, GroupedProblemsMatchSeparateCalls) {
  constexpr std::int64_t kCols = 512;
  ThreadPool two(2);
  const std::vector<float> x = make_activations(24, kCols, 41);
  for (TensorType type : kTypes) {
    const TestMatrix a = make_matrix(type, 77, kCols, 42);
    const TestMatrix b = make_matrix(type, 16, kCols, 43);
    const TestMatrix c = make_matrix(type, 45, kCols, 44);
    const TestMatrix other =
        make_matrix(type == TensorType::q8_0 ? TensorType::q4_0 : TensorType::q8_0, 20, kCols, 45);
    for (Isa isa : supported_isas()) {
      ASSERT_TRUE(set_isa_override(isa));
      for (std::int64_t max_tokens : {24, 8}) {  // 8: the rows together do not fit
        MatmulWorkspace workspace(max_tokens, kCols, 2);
        for (bool mixed : {false, true}) {
          SCOPED_TRACE(label(type, isa) + " workspace " + std::to_string(max_tokens) +
                       (mixed ? " mixed" : ""));
          // (matrix, first row of x, tokens): a and b share rows 0..2, c reads 3 others.
          struct Spec {
            const TestMatrix* w;
            std::int64_t first;
            std::int64_t tokens;
          };
          const Spec specs[] = {
              {&a, 0, 3}, {&b, 0, 3}, {&c, 5, 1}, {&c, 9, 7}, {mixed ? &other : &a, 2, 2}};
          std::vector<std::vector<float>> grouped(5), separate(5);
          std::vector<MatmulProblem> problems;
          for (std::size_t i = 0; i < 5; ++i) {
            const WeightMatrix& w = specs[i].w->w;
            const float* rows = x.data() + specs[i].first * kCols;
            grouped[i].assign(static_cast<std::size_t>(specs[i].tokens * (w.rows + 2)), -1.0f);
            separate[i].assign(grouped[i].size(), -1.0f);
            problems.push_back({&w, rows, specs[i].tokens, kCols, grouped[i].data(), w.rows + 2});
            matmul(isa, w, rows, specs[i].tokens, kCols, separate[i].data(), w.rows + 2, workspace,
                   two);
          }
          matmul_grouped(problems, workspace, two);
          for (std::size_t i = 0; i < 5; ++i) {
            EXPECT_EQ(std::memcmp(grouped[i].data(), separate[i].data(),
                                  grouped[i].size() * sizeof(float)),
                      0)
                << "problem " << i;
          }
        }
      }
    }
    ASSERT_TRUE(set_isa_override(std::nullopt));
  }
}

TEST(Matmul, IsaOverrideSelectsTheVariant) {
  EXPECT_TRUE(set_isa_override(Isa::scalar));
  EXPECT_EQ(active_isa(), Isa::scalar);
  EXPECT_TRUE(set_isa_override(std::nullopt));
  EXPECT_TRUE(is_isa_supported(active_isa()));
}

}  // namespace
}  // namespace tern::kernels
