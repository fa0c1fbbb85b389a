// `tern quantize`'s engine: every target type round-trips weights within its error bound, and
// converted models still produce the reference text.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "engine/model/gguf_writer.h"
#include "engine/model/model_quantizer.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/quant.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

using kernels::TensorType;

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("tern-quantize-" + std::to_string(::getpid()) + "-" + name);
}

// Root-mean-square error of `converted` against `original`, relative to the RMS of `original`,
// over every matrix of the model.
double relative_rms_error(const ModelWeights& original, const ModelWeights& converted) {
  double error = 0, norm = 0;
  auto compare = [&](const WeightTensor& a, const WeightTensor& b) {
    ASSERT_EQ(a.rows, b.rows);
    ASSERT_EQ(a.cols, b.cols);
    std::vector<float> row_a(static_cast<std::size_t>(a.cols)), row_b(row_a.size());
    for (std::int64_t r = 0; r < a.rows; ++r) {
      kernels::dequantize_row(a.type, a.data + r * a.row_bytes, row_a.data(), a.cols);
      kernels::dequantize_row(b.type, b.data + r * b.row_bytes, row_b.data(), b.cols);
      for (std::size_t i = 0; i < row_a.size(); ++i) {
        error += (row_a[i] - row_b[i]) * double(row_a[i] - row_b[i]);
        norm += row_a[i] * double(row_a[i]);
      }
    }
  };
  compare(original.token_embedding(), converted.token_embedding());
  for (std::size_t l = 0; l < original.layers().size(); ++l) {
    const LayerWeights& a = original.layers()[l];
    const LayerWeights& b = converted.layers()[l];
    for (auto member : {&LayerWeights::wq, &LayerWeights::wk, &LayerWeights::wv, &LayerWeights::wo,
                        &LayerWeights::w_gate, &LayerWeights::w_up, &LayerWeights::w_down}) {
      compare(a.*member, b.*member);
    }
  }
  return std::sqrt(error / norm);
}

// A random llama whose every row is a whole number of K-quant blocks (256), which the shared
// TinyStories model (hidden 128) is not.
void write_aligned_model(const std::string& path) {
  constexpr int kHidden = 256, kFfn = 512, kVocab = 512, kHeads = 4;
  GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_uint32("llama.context_length", 256);
  writer.add_uint32("llama.embedding_length", kHidden);
  writer.add_uint32("llama.block_count", 1);
  writer.add_uint32("llama.feed_forward_length", kFfn);
  writer.add_uint32("llama.attention.head_count", kHeads);
  writer.add_uint32("llama.attention.head_count_kv", kHeads);
  writer.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  writer.add_uint32("llama.vocab_size", kVocab);
  auto random_f32 = [](std::uint32_t seed, float scale) {
    return [seed, scale](std::span<std::byte> out) -> Status {
      std::mt19937 rng(seed);
      std::normal_distribution<float> normal(0.0f, scale);
      auto* values = reinterpret_cast<float*>(out.data());
      for (std::size_t i = 0; i < out.size() / sizeof(float); ++i) values[i] = normal(rng);
      return Status::success();
    };
  };
  auto ones = [](std::span<std::byte> out) -> Status {
    auto* values = reinterpret_cast<float*>(out.data());
    for (std::size_t i = 0; i < out.size() / sizeof(float); ++i) values[i] = 1.0f;
    return Status::success();
  };
  std::uint32_t seed = 1;
  ASSERT_TRUE(writer
                  .add_tensor("token_embd.weight", TensorType::f32, {kHidden, kVocab},
                              random_f32(seed++, 1.0f))
                  .ok());
  ASSERT_TRUE(writer.add_tensor("blk.0.attn_norm.weight", TensorType::f32, {kHidden}, ones).ok());
  for (const char* name : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
    ASSERT_TRUE(writer
                    .add_tensor(std::string("blk.0.") + name + ".weight", TensorType::f32,
                                {kHidden, kHidden}, random_f32(seed++, 0.05f))
                    .ok());
  }
  ASSERT_TRUE(writer.add_tensor("blk.0.ffn_norm.weight", TensorType::f32, {kHidden}, ones).ok());
  ASSERT_TRUE(writer
                  .add_tensor("blk.0.ffn_gate.weight", TensorType::f32, {kHidden, kFfn},
                              random_f32(seed++, 0.05f))
                  .ok());
  ASSERT_TRUE(writer
                  .add_tensor("blk.0.ffn_up.weight", TensorType::f32, {kHidden, kFfn},
                              random_f32(seed++, 0.05f))
                  .ok());
  ASSERT_TRUE(writer
                  .add_tensor("blk.0.ffn_down.weight", TensorType::f32, {kFfn, kHidden},
                              random_f32(seed++, 0.05f))
                  .ok());
  ASSERT_TRUE(writer.add_tensor("output_norm.weight", TensorType::f32, {kHidden}, ones).ok());
  ASSERT_TRUE(writer.write(path).ok());
}

struct RoundTrip {
  TensorType type;
  double max_relative_rms_error;
};

class QuantizeRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(QuantizeRoundTrip, AlignedModelStaysWithinBound) {
  const std::string input = temp_path("aligned.gguf").string();
  const std::string output = temp_path("aligned-out.gguf").string();
  write_aligned_model(input);
  const auto report = quantize_model(input, output, GetParam().type);
  ASSERT_TRUE(report.ok()) << report.error().message;
  const std::string type_name(kernels::tensor_type_name(GetParam().type));
  EXPECT_EQ(report->tensors_by_type.at(type_name), 8) << "every matrix takes the requested type";
  auto original = load_model(input);
  auto converted = load_model(output);
  ASSERT_TRUE(original.ok() && converted.ok());
  EXPECT_EQ(converted->layers()[0].w_down.type, GetParam().type);
  const double error = relative_rms_error(*original, *converted);
  EXPECT_LT(error, GetParam().max_relative_rms_error) << type_name;
  std::printf("%s: relative RMS error %.5f\n", type_name.c_str(), error);
  std::filesystem::remove(input);
  std::filesystem::remove(output);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeRoundTrip,
                         ::testing::Values(RoundTrip{TensorType::f16, 1e-3},
                                           RoundTrip{TensorType::q8_0, 0.01},
                                           RoundTrip{TensorType::q6_k, 0.03},
                                           RoundTrip{TensorType::q4_0, 0.15},
                                           RoundTrip{TensorType::q4_k, 0.12}),
                         [](const ::testing::TestParamInfo<RoundTrip>& param_info) {
                           return std::string(kernels::tensor_type_name(param_info.param.type));
                         });

// The shared F32 model: rows of 128 and 384 take K-quant types only through the fallback
// chain, and the result must still round-trip and keep its hyperparameters and tokenizer.
TEST(Quantize, SharedModelRoundTripsWithFallback) {
  TERN_REQUIRE_SHARED(model_path, "models/tinystories-656k-f32.gguf");
  for (const auto& [type, bound] :
       {std::pair{TensorType::q8_0, 0.01}, std::pair{TensorType::q4_k, 0.15},
        std::pair{TensorType::q6_k, 0.01}}) {
    const std::string output = temp_path("tinystories.gguf").string();
    const auto report = quantize_model(model_path.string(), output, type);
    ASSERT_TRUE(report.ok()) << report.error().message;
    auto original = load_model(model_path.string());
    auto converted = load_model(output);
    ASSERT_TRUE(converted.ok()) << converted.error().message;
    EXPECT_EQ(converted->config().n_layers, original->config().n_layers);
    EXPECT_EQ(converted->config().vocab_size, original->config().vocab_size);
    ASSERT_NE(converted->gguf(), nullptr);
    EXPECT_TRUE(converted->gguf()->has("tokenizer.ggml.tokens"));
    EXPECT_LT(relative_rms_error(*original, *converted), bound) << kernels::tensor_type_name(type);
    std::filesystem::remove(output);
  }
}

// HF -> GGUF: the Q/K rows are permuted to the interleaved layout, so the F32 conversion of the
// HF directory holds exactly the shared F32 GGUF's weights.
TEST(Quantize, HfDirectoryConvertsToTheReferenceGguf) {
  TERN_REQUIRE_SHARED(hf_path, "models/tinystories-656k");
  TERN_REQUIRE_SHARED(gguf_path, "models/tinystories-656k-f32.gguf");
  const std::string output = temp_path("from-hf.gguf").string();
  const auto report = quantize_model(hf_path.string(), output, TensorType::f32);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto reference = load_model(gguf_path.string());
  auto converted = load_model(output);
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  EXPECT_EQ(converted->config().rope_layout, RopeLayout::interleaved);
  EXPECT_EQ(relative_rms_error(*reference, *converted), 0.0);
  std::filesystem::remove(output);
}

}  // namespace
}  // namespace tern::engine
