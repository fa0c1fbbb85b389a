// Tensor parallelism's weights: what DeviceModelWeights::upload puts on each rank is exactly the
// rank's slice of the whole model's upload (engine/backend/tensor_parallel_shape.h), the ranks'
// slices together give back the whole, and a row-parallel slice is a matrix the GEMV reads:
// the ranks' partial products of wo sum to the whole product.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cuda/device_model_weights.h"
#include "engine/backend/cuda/emulated_device_runtime.h"
#include "engine/backend/tensor_parallel_shape.h"
#include "engine/model/model_tables.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/weight_formats.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/cuda/device_runtime_test_support.h"

namespace tern::engine::cuda {
namespace {

using kernels::cuda::DeviceWeights;

constexpr Matrix kLayerMatrices[] = {Matrix::wq,     Matrix::wk,   Matrix::wv,    Matrix::wo,
                                     Matrix::w_gate, Matrix::w_up, Matrix::w_down};
constexpr Vector kLayerVectors[] = {Vector::attn_norm, Vector::ffn_norm, Vector::bq,    Vector::bk,
                                    Vector::bv,        Vector::q_norm,   Vector::k_norm};

std::uint64_t row_bytes(kernels::TensorType type, std::int64_t cols) {
  return static_cast<std::uint64_t>(kernels::cuda::weight_row_bytes(type, cols));
}

std::vector<std::byte> download(DeviceRuntime& runtime, Stream stream, const void* device,
                                std::uint64_t bytes) {
  std::vector<std::byte> host(bytes);
  EXPECT_TRUE(runtime.copy_to_host(host.data(), device, bytes, stream).ok());
  EXPECT_TRUE(runtime.synchronize(stream).ok());
  return host;
}

std::vector<std::byte> download(DeviceRuntime& runtime, Stream stream, const DeviceWeights& w) {
  return download(runtime, stream, w.data, w.rows * row_bytes(w.type, w.cols));
}

// A model, its tables and an emulated device to upload it to.
class DeviceModelWeightsSlice : public ::testing::Test {
 protected:
  bool load(const std::string& relative) {
    const std::filesystem::path path = ::tern::testing::shared_path(relative);
    if (!std::filesystem::exists(path)) return false;
    auto weights = load_model(path.string());
    EXPECT_TRUE(weights.ok()) << weights.error().message;
    if (!weights.ok()) return false;
    weights_.emplace(std::move(*weights));
    auto tables = ModelTables::build(*weights_);
    EXPECT_TRUE(tables.ok()) << tables.error().message;
    if (!tables.ok()) return false;
    tables_.emplace(std::move(*tables));
    if (runtime_) runtime_->destroy_stream(stream_);
    runtime_ = make_emulated_device_runtime(EmulatedDeviceOptions{});
    auto stream = runtime_->create_stream();
    EXPECT_TRUE(stream.ok());
    stream_ = *stream;
    return true;
  }
  void TearDown() override {
    if (runtime_) runtime_->destroy_stream(stream_);
  }

  Expected<DeviceModelWeights> upload(RankSlice slice) {
    return DeviceModelWeights::upload(*runtime_, stream_, *weights_, *tables_, slice);
  }

  // Every matrix and vector of each rank is the rank's slice of the whole upload, and the
  // ranks' slices, put where tensor_parallel_shape says, cover the whole.
  void expect_ranks_hold_their_slices(int ranks) {
    SCOPED_TRACE(weights_->path() + " over " + std::to_string(ranks) + " ranks");
    const ModelConfig& config = weights_->config();
    auto whole = upload({});
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    std::vector<DeviceModelWeights> rank_weights;
    for (int rank = 0; rank < ranks; ++rank) {
      auto sliced = upload({rank, ranks});
      ASSERT_TRUE(sliced.ok()) << sliced.error().message;
      EXPECT_LT(sliced->bytes(), whole->bytes());
      rank_weights.push_back(std::move(*sliced));
    }
    const auto check_matrix = [&](std::int32_t layer, Matrix name) {
      SCOPED_TRACE("layer " + std::to_string(layer) + " matrix " +
                   std::to_string(static_cast<int>(name)));
      const DeviceWeights& whole_matrix = whole->matrix(layer, name);
      const std::vector<std::byte> whole_bytes = download(*runtime_, stream_, whole_matrix);
      const std::uint64_t whole_row = row_bytes(whole_matrix.type, whole_matrix.cols);
      std::vector<std::byte> assembled(whole_bytes.size());
      std::vector<bool> covered(whole_bytes.size(), false);
      for (int rank = 0; rank < ranks; ++rank) {
        const DeviceWeights& part = rank_weights[rank].matrix(layer, name);
        const MatrixSlice held = held_matrix(config, {rank, ranks}, name);
        ASSERT_EQ(part.type, whole_matrix.type);
        ASSERT_EQ(part.rows, held.rows.count);
        ASSERT_EQ(part.cols, held.cols.count);
        const std::vector<std::byte> bytes = download(*runtime_, stream_, part);
        const std::uint64_t part_row = row_bytes(part.type, part.cols);
        const std::uint64_t column_byte = row_bytes(part.type, held.cols.begin);
        for (std::int64_t r = 0; r < part.rows; ++r) {
          const std::uint64_t at = (held.rows.begin + r) * whole_row + column_byte;
          ASSERT_EQ(std::memcmp(bytes.data() + r * part_row, whole_bytes.data() + at, part_row), 0)
              << "rank " << rank << " row " << r;
          std::memcpy(assembled.data() + at, bytes.data() + r * part_row, part_row);
          std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(at), part_row, true);
        }
      }
      EXPECT_TRUE(std::ranges::all_of(covered, [](bool c) { return c; }));
      EXPECT_EQ(assembled, whole_bytes);
    };
    const auto check_vector = [&](VectorRef ref, std::int64_t length) {
      SCOPED_TRACE("layer " + std::to_string(ref.layer) + " vector " +
                   std::to_string(static_cast<int>(ref.name)));
      if (length == 0) {  // a vector the model does not have
        EXPECT_EQ(whole->vector(ref), nullptr);
        for (const DeviceModelWeights& part : rank_weights) EXPECT_EQ(part.vector(ref), nullptr);
        return;
      }
      const std::vector<std::byte> whole_bytes =
          download(*runtime_, stream_, whole->vector(ref), length * sizeof(float));
      std::vector<std::byte> assembled(whole_bytes.size());
      for (int rank = 0; rank < ranks; ++rank) {
        const IndexRange held = held_vector(config, {rank, ranks}, ref.name, length);
        const std::uint64_t at = held.begin * sizeof(float);
        const std::uint64_t bytes = held.count * sizeof(float);
        const std::vector<std::byte> part =
            download(*runtime_, stream_, rank_weights[rank].vector(ref), bytes);
        ASSERT_EQ(std::memcmp(part.data(), whole_bytes.data() + at, bytes), 0) << "rank " << rank;
        std::memcpy(assembled.data() + at, part.data(), bytes);
      }
      EXPECT_EQ(assembled, whole_bytes);
    };
    for (std::int32_t layer = 0; layer < config.n_layers; ++layer) {
      for (Matrix name : kLayerMatrices) check_matrix(layer, name);
      const ModelTables::Layer& table = tables_->layers[static_cast<std::size_t>(layer)];
      for (Vector name : kLayerVectors) {
        check_vector({layer, name}, static_cast<std::int64_t>(layer_vector(table, name).size()));
      }
    }
    check_matrix(0, Matrix::output);
    check_vector({0, Vector::output_norm}, static_cast<std::int64_t>(tables_->output_norm.size()));

    // Replicated: the embedding table and RoPE frequencies.
    const std::vector<std::byte> embedding = download(*runtime_, stream_, whole->token_embedding());
    const auto rope_bytes = static_cast<std::uint64_t>(whole->rope_pairs()) * sizeof(float);
    const std::vector<std::byte> rope =
        download(*runtime_, stream_, whole->rope_inverse_frequencies(), rope_bytes);
    for (int rank = 0; rank < ranks; ++rank) {
      const DeviceModelWeights& part = rank_weights[rank];
      EXPECT_EQ(download(*runtime_, stream_, part.token_embedding()), embedding);
      ASSERT_EQ(part.rope_pairs(), whole->rope_pairs());
      EXPECT_EQ(download(*runtime_, stream_, part.rope_inverse_frequencies(), rope_bytes), rope);
      if (config.tied_embeddings) {
        // A tied LM head's vocabulary rows are rows of the embedding table, placed once.
        const DeviceWeights& embedding_table = part.token_embedding();
        const auto* expected = static_cast<const std::byte*>(embedding_table.data) +
                               held_vocab(config, {rank, ranks}).begin *
                                   row_bytes(embedding_table.type, embedding_table.cols);
        EXPECT_EQ(part.matrix(0, Matrix::output).data, expected) << "rank " << rank;
      }
    }
  }

  std::optional<ModelWeights> weights_;
  std::optional<ModelTables> tables_;
  std::unique_ptr<DeviceRuntime> runtime_;
  Stream stream_{};
};

#define TERN_LOAD_SHARED(relative)                                                            \
  if (!load(relative)) {                                                                      \
    if (HasFailure()) return;                                                                 \
    GTEST_SKIP() << "needs ../shared/" << relative << " (../shared is absent or incomplete)"; \
  }

TEST_F(DeviceModelWeightsSlice, TinyStoriesF32OverTwoFourAndEightRanks) {
  TERN_LOAD_SHARED("models/tinystories-656k-f32.gguf");
  // Eight ranks replicate each of the 4 KV heads on two.
  for (int ranks : {2, 4, 8}) expect_ranks_hold_their_slices(ranks);
}

TEST_F(DeviceModelWeightsSlice, TinyStoriesQ8_0OverTwoAndFourRanks) {
  TERN_LOAD_SHARED("models/tinystories-656k-q8_0.gguf");
  for (int ranks : {2, 4}) expect_ranks_hold_their_slices(ranks);
}

TEST_F(DeviceModelWeightsSlice, TinyStoriesQ4_0OverTwoAndFourRanks) {
  TERN_LOAD_SHARED("models/tinystories-656k-q4_0.gguf");
  for (int ranks : {2, 4}) expect_ranks_hold_their_slices(ranks);
}

TEST_F(DeviceModelWeightsSlice, Qwen3TinyOverTwoAndFourRanks) {
  TERN_LOAD_SHARED("models/random-qwen3-tiny");
  ASSERT_TRUE(weights_->config().qk_norm);
  for (int ranks : {2, 4}) expect_ranks_hold_their_slices(ranks);
}

TEST_F(DeviceModelWeightsSlice, Qwen2TinyWithQkvBiasOverTwoAndFourRanks) {
  TERN_LOAD_SHARED("models/random-qwen2-tiny");
  ASSERT_TRUE(weights_->config().qkv_bias);
  for (int ranks : {2, 4}) expect_ranks_hold_their_slices(ranks);
}

// Q8_0 blocks of 32 cannot split wo's 128 columns 8 ways: the upload says so before allocating.
TEST_F(DeviceModelWeightsSlice, RefusesASplitThatCutsBlocks) {
  TERN_LOAD_SHARED("models/tinystories-656k-q8_0.gguf");
  const std::uint64_t free_before = runtime_->memory_info()->free_bytes;
  const Expected<DeviceModelWeights> refused = upload({0, 8});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            weights_->path() +
                ": layer 0 attn_output is Q8_0: over 8 devices each holds 16 of its 128 input "
                "columns, which is not a whole number of its blocks of 32 (tensor parallelism "
                "splits row-parallel matrices on block boundaries)");
  EXPECT_EQ(runtime_->memory_info()->free_bytes, free_before);
  const Expected<DeviceModelWeights> three = upload({0, 3});
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.error().message.find("8 query heads do not split over 3 devices"),
            std::string::npos)
      << three.error().message;
}

// The row-parallel semantics: each rank's wo slice times its slice of the attention output,
// summed over ranks (what all_reduce does), is the whole wo times the whole input.
class RowParallelGemv : public DeviceModelWeightsSlice {
 protected:
  // y = w x on the device for one token, quantizing x to Q8_1 first where the format needs it.
  std::vector<float> gemv(const DeviceWeights& w, std::span<const float> x) {
    const kernels::cuda::DeviceKernels& kernels = runtime_->kernels();
    DeviceAllocation input = must_allocate(*runtime_, x.size_bytes(), "x");
    DeviceAllocation quantized = must_allocate(
        *runtime_, x.size() / kernels::cuda::kQ8_1Block * sizeof(kernels::cuda::BlockQ8_1), "q8_1");
    DeviceAllocation output = must_allocate(*runtime_, w.rows * sizeof(float), "y");
    EXPECT_TRUE(runtime_->copy_to_device(input.get(), x.data(), x.size_bytes(), stream_).ok());
    kernels::cuda::DeviceActivations activations{input.as<float>(), nullptr};
    if (reads_q8_1_activations(w.type)) {
      EXPECT_TRUE(runtime_
                      ->launched(kernels.quantize_q8_1(
                                     input.as<float>(), 1, static_cast<int>(x.size()),
                                     quantized.as<kernels::cuda::BlockQ8_1>(), stream_.handle),
                                 "quantize_q8_1")
                      .ok());
      activations.q8_1 = quantized.as<kernels::cuda::BlockQ8_1>();
    }
    EXPECT_TRUE(
        runtime_
            ->launched(kernels.gemv(w, activations, 1, output.as<float>(), stream_.handle), "gemv")
            .ok());
    return download<float>(*runtime_, output, stream_);
  }

  // The largest |sum over ranks - whole| relative to sum_j |w_ij x_j|, over wo's rows.
  double max_relative_error(int ranks) {
    const ModelConfig& config = weights_->config();
    auto whole = upload({});
    EXPECT_TRUE(whole.ok()) << whole.error().message;
    if (!whole.ok()) return INFINITY;
    const DeviceWeights& wo = whole->matrix(0, Matrix::wo);
    std::mt19937 random(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<std::size_t>(wo.cols));
    for (float& value : x) value = normal(random);
    const std::vector<float> expected = gemv(wo, x);

    std::vector<float> summed(expected.size(), 0.0f);
    for (int rank = 0; rank < ranks; ++rank) {
      auto part = upload({rank, ranks});
      EXPECT_TRUE(part.ok()) << part.error().message;
      if (!part.ok()) return INFINITY;
      const IndexRange columns = held_matrix(config, {rank, ranks}, Matrix::wo).cols;
      const std::vector<float> partial =
          gemv(part->matrix(0, Matrix::wo),
               std::span<const float>(x).subspan(static_cast<std::size_t>(columns.begin),
                                                 static_cast<std::size_t>(columns.count)));
      for (std::size_t i = 0; i < summed.size(); ++i) summed[i] += partial[i];
    }

    // The scale of each row's dot product, from the weights as the file holds them.
    const WeightTensor& stored = weights_->layers()[0].wo;
    std::vector<float> row(static_cast<std::size_t>(stored.cols));
    double worst = 0;
    for (std::int64_t r = 0; r < stored.rows; ++r) {
      kernels::dequantize_row(stored.type, stored.data + r * stored.row_bytes, row.data(),
                              stored.cols);
      double scale = 0;
      for (std::size_t j = 0; j < row.size(); ++j) scale += std::fabs(row[j] * x[j]);
      const auto i = static_cast<std::size_t>(r);
      worst = std::max(worst, std::fabs(static_cast<double>(summed[i]) - expected[i]) / scale);
    }
    return worst;
  }
};

// Q8_1 activation blocks of 32 start on each rank's first column, so a rank quantizes its slice
// exactly as the whole input's blocks: only the order of float additions differs. 128 terms in
// float give at most about 128 * 2^-24 = 8e-6 of sum |w x|; 2e-5 leaves room for the
// per-block scales' products.
constexpr double kRowParallelTolerance = 2e-5;

TEST_F(RowParallelGemv, TinyStoriesWoSlicesSumToTheWholeProduct) {
  for (const char* file : {"models/tinystories-656k-f32.gguf", "models/tinystories-656k-q8_0.gguf",
                           "models/tinystories-656k-q4_0.gguf"}) {
    SCOPED_TRACE(file);
    TERN_LOAD_SHARED(file);
    for (int ranks : {2, 4}) {
      const double error = max_relative_error(ranks);
      EXPECT_LT(error, kRowParallelTolerance) << ranks << " ranks";
      std::printf("%s over %d ranks: max |sum of ranks - whole| / sum|w x| = %.3g\n", file, ranks,
                  error);
    }
  }
}

}  // namespace
}  // namespace tern::engine::cuda
