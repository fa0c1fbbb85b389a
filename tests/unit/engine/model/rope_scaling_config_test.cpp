// RoPE scaling as config.json's "rope_scaling" and GGUF's `{arch}.rope.scaling.*` state it: the
// YaRN parameters (DeepSeek-V3, long-context Qwen) read into kernels::RopeScaling.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "kernels/cpu/rope.h"
#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

using testing::GgufWriter;
using testing::TempDir;

// A one-layer llama config.json with max_position_embeddings 163840 and the given rope_scaling.
Expected<ModelConfig> hf_config(const TempDir& dir, std::string_view rope_scaling) {
  testing::write_text(dir / "config.json", std::string(R"({"model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
    "vocab_size": 16, "max_position_embeddings": 163840, "rope_scaling": )") +
                                               std::string(rope_scaling) + "}");
  return config_from_hf_directory(dir.path().string());
}

TEST(RopeScalingConfig, ReadsDeepSeekV3YarnFromHf) {
  TempDir dir;
  // DeepSeek-V3's published rope_scaling; older DeepSeek configs say "deepseek_yarn".
  for (const std::string_view type : {"yarn", "deepseek_yarn"}) {
    Expected<ModelConfig> config =
        hf_config(dir, std::string(R"({"beta_fast": 32, "beta_slow": 1, "factor": 40,
          "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
          "type": ")") + std::string(type) +
                           "\"}");
    ASSERT_TRUE(config.ok()) << config.error().message;
    const RopeScalingConfig& scaling = config->rope_scaling;
    EXPECT_EQ(scaling.type, RopeScalingConfig::Type::yarn) << type;
    EXPECT_EQ(scaling.factor, 40.0f);
    EXPECT_EQ(scaling.original_max_position, 4096);
    EXPECT_EQ(scaling.beta_fast, 32.0f);
    EXPECT_EQ(scaling.beta_slow, 1.0f);
    EXPECT_EQ(scaling.mscale, 1.0f);
    EXPECT_EQ(scaling.mscale_all_dim, 1.0f);
    EXPECT_FALSE(scaling.attention_factor);
    EXPECT_NEAR(kernels::rope_attention_factor(scaling), 1.0, 1e-12);
    EXPECT_NEAR(kernels::rope_softmax_scale_multiplier(scaling), 1.8738542070926265, 1e-12);
  }
}

TEST(RopeScalingConfig, ReadsQwenYarnWithHfDefaults) {
  TempDir dir;
  Expected<ModelConfig> config = hf_config(
      dir, R"({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  const RopeScalingConfig& scaling = config->rope_scaling;
  EXPECT_EQ(scaling.type, RopeScalingConfig::Type::yarn);
  EXPECT_EQ(scaling.factor, 4.0f);
  EXPECT_EQ(scaling.original_max_position, 32768);
  EXPECT_EQ(scaling.beta_fast, 32.0f);
  EXPECT_EQ(scaling.beta_slow, 1.0f);
  EXPECT_EQ(scaling.mscale, 0.0f);
  EXPECT_EQ(scaling.mscale_all_dim, 0.0f);
  EXPECT_NEAR(kernels::rope_attention_factor(scaling), 1.138629436111989, 1e-12);
  EXPECT_EQ(kernels::rope_softmax_scale_multiplier(scaling), 1.0);

  // No original context: max_position_embeddings. HF's `or` makes a zero or null beta the default.
  config = hf_config(dir, R"({"type": "yarn", "factor": 2, "beta_fast": 0, "beta_slow": null,
               "attention_factor": 0.9})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->rope_scaling.original_max_position, 163840);
  EXPECT_EQ(config->rope_scaling.beta_fast, 32.0f);
  EXPECT_EQ(config->rope_scaling.beta_slow, 1.0f);
  EXPECT_EQ(config->rope_scaling.attention_factor, 0.9f);
  EXPECT_NEAR(kernels::rope_attention_factor(config->rope_scaling), 0.9, 1e-7);

  // No factor: the ratio of the two contexts, as HF computes it.
  config = hf_config(dir, R"({"type": "yarn", "original_max_position_embeddings": 4096})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->rope_scaling.factor, 40.0f);

  // mscale_all_dim without mscale: HF's attention factor is get_mscale(factor), not a ratio.
  config = hf_config(dir, R"({"type": "yarn", "factor": 40, "mscale_all_dim": 1})");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_NEAR(kernels::rope_attention_factor(config->rope_scaling), 1.3688879454113936, 1e-12);
}

TEST(RopeScalingConfig, NamesTheBadYarnKey) {
  TempDir dir;
  const auto expect_error = [&](std::string_view rope_scaling, std::string_view needle) {
    Expected<ModelConfig> config = hf_config(dir, rope_scaling);
    ASSERT_FALSE(config.ok()) << rope_scaling;
    EXPECT_NE(config.error().message.find(needle), std::string::npos) << config.error().message;
  };
  expect_error(R"({"type": "yarn", "factor": 4, "original_max_position_embeddings": 0})",
               "'rope_scaling': 'original_max_position_embeddings': 0 must be positive");
  expect_error(R"({"type": "yarn", "factor": 4, "beta_fast": -1})",
               "'rope_scaling': 'beta_fast': -1 must be positive");
  expect_error(R"({"type": "yarn", "factor": 4, "beta_slow": "1"})",
               "'rope_scaling': 'beta_slow': expected a number");
  expect_error(R"({"type": "yarn", "factor": 40, "mscale": 1, "mscale_all_dim": -1})",
               "'rope_scaling': 'mscale_all_dim': -1 must not be negative");
  expect_error(R"({"type": "yarn", "factor": 40, "attention_factor": 0})",
               "'rope_scaling': 'attention_factor': 0 must be positive");
  expect_error(R"({"type": "yarn", "factor": -4})", "RoPE scaling factor -4 must be positive");
}

// --- GGUF --------------------------------------------------------------------------------------

// A llama GGUF's metadata (no tensors: config_from_gguf reads keys only), with `add` for more.
Expected<ModelConfig> gguf_config(const std::function<void(GgufWriter&)>& add) {
  GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_u32("llama.block_count", 1);
  writer.add_u32("llama.embedding_length", 64);
  writer.add_u32("llama.feed_forward_length", 128);
  writer.add_u32("llama.attention.head_count", 2);
  writer.add_u32("llama.context_length", 163840);
  writer.add_u32("llama.vocab_size", 16);
  writer.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  add(writer);
  Expected<GgufFile> gguf = GgufFile::parse(MappedFile::from_bytes(writer.bytes(), "tiny.gguf"));
  if (!gguf) return gguf.error();
  return config_from_gguf(*gguf);
}

TEST(RopeScalingConfig, ReadsYarnFromGguf) {
  // llama.cpp's deepseek2 keys: yarn_log_multiplier is 0.1 * mscale_all_dim.
  Expected<ModelConfig> config = gguf_config([](GgufWriter& writer) {
    writer.add_string("llama.rope.scaling.type", "yarn");
    writer.add_f32("llama.rope.scaling.factor", 40);
    writer.add_u32("llama.rope.scaling.original_context_length", 4096);
    writer.add_f32("llama.rope.scaling.yarn_log_multiplier", 0.1f);
  });
  ASSERT_TRUE(config.ok()) << config.error().message;
  const RopeScalingConfig& scaling = config->rope_scaling;
  EXPECT_EQ(scaling.type, RopeScalingConfig::Type::yarn);
  EXPECT_EQ(scaling.factor, 40.0f);
  EXPECT_EQ(scaling.original_max_position, 4096);
  EXPECT_EQ(scaling.beta_fast, 32.0f);
  EXPECT_EQ(scaling.beta_slow, 1.0f);
  EXPECT_FLOAT_EQ(scaling.mscale, 1.0f);
  EXPECT_FLOAT_EQ(scaling.mscale_all_dim, 1.0f);
  EXPECT_NEAR(kernels::rope_attention_factor(scaling), 1.0, 1e-12);
  EXPECT_NEAR(kernels::rope_softmax_scale_multiplier(scaling), 1.8738542070926265, 1e-6);

  // Qwen-style: betas stated, no log multiplier, no original context (the trained one).
  config = gguf_config([](GgufWriter& writer) {
    writer.add_string("llama.rope.scaling.type", "yarn");
    writer.add_f32("llama.rope.scaling.factor", 4);
    writer.add_f32("llama.rope.scaling.yarn_beta_fast", 16);
    writer.add_f32("llama.rope.scaling.yarn_beta_slow", 2);
  });
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->rope_scaling.type, RopeScalingConfig::Type::yarn);
  EXPECT_EQ(config->rope_scaling.original_max_position, 163840);
  EXPECT_EQ(config->rope_scaling.beta_fast, 16.0f);
  EXPECT_EQ(config->rope_scaling.beta_slow, 2.0f);
  EXPECT_EQ(config->rope_scaling.mscale_all_dim, 0.0f);
  EXPECT_NEAR(kernels::rope_attention_factor(config->rope_scaling), 1.138629436111989, 1e-7);
}

TEST(RopeScalingConfig, GgufLogMultiplierWithoutYarnTypeIsNoScaling) {
  // As in random-deepseek-v3-tiny-f32.gguf: the multiplier alone scales nothing.
  Expected<ModelConfig> config = gguf_config(
      [](GgufWriter& writer) { writer.add_f32("llama.rope.scaling.yarn_log_multiplier", 0.1f); });
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->rope_scaling.type, RopeScalingConfig::Type::none);
  EXPECT_EQ(kernels::rope_attention_factor(config->rope_scaling), 1.0);
  EXPECT_EQ(kernels::rope_softmax_scale_multiplier(config->rope_scaling), 1.0);
}

TEST(RopeScalingConfig, GgufNamesTheBadYarnKey) {
  Expected<ModelConfig> config = gguf_config([](GgufWriter& writer) {
    writer.add_string("llama.rope.scaling.type", "yarn");
    writer.add_f32("llama.rope.scaling.factor", 4);
    writer.add_u32("llama.rope.scaling.original_context_length", 0);
  });
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "tiny.gguf: key 'llama.rope.scaling.original_context_length': 0 must be positive");

  config = gguf_config([](GgufWriter& writer) {
    writer.add_string("llama.rope.scaling.type", "yarn");
    writer.add_f32("llama.rope.scaling.factor", 4);
    writer.add_f32("llama.rope.scaling.yarn_beta_slow", -2);
  });
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "tiny.gguf: key 'llama.rope.scaling.yarn_beta_slow': -2 must be positive");

  config = gguf_config([](GgufWriter& writer) {
    writer.add_string("llama.rope.scaling.type", "yarn");
    writer.add_f32("llama.rope.scaling.factor", 40);
    writer.add_f32("llama.rope.scaling.yarn_log_multiplier", -0.1f);
  });
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "tiny.gguf: key 'llama.rope.scaling.yarn_log_multiplier': -0.1 must not be negative");
}

}  // namespace
}  // namespace tern::engine
