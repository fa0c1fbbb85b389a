// Loading mixture-of-experts and latent-attention models: Mixtral, Qwen3-MoE and DeepSeek-V3 from
// the shared HF checkpoints and GGUF files, and the loader's errors for broken expert tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "engine/backend/backend_factory.h"
#include "engine/model/model_weights.h"
#include "engine/model/safetensors_file.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

using testing::GgufWriter;
using testing::SafetensorsWriter;
using testing::TempDir;

bool same_bytes(const WeightTensor& a, const WeightTensor& b) {
  return a.type == b.type && a.rows == b.rows && a.cols == b.cols && a.row_bytes == b.row_bytes &&
         std::memcmp(a.data, b.data, a.row_bytes * static_cast<std::size_t>(a.rows)) == 0;
}

TEST(MoeWeights, LoadsQwen3MoeFromHf) {
  TERN_REQUIRE_SHARED(path, "models/random-qwen3-moe-tiny");
  auto weights = load_model(path.string());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  const ModelConfig& config = weights->config();
  EXPECT_EQ(config.architecture, "qwen3moe");
  EXPECT_TRUE(config.qk_norm);
  EXPECT_EQ(config.moe.n_experts, 8);
  EXPECT_EQ(config.moe.experts_per_token, 2);
  EXPECT_EQ(config.moe.expert_ffn, 32);
  EXPECT_TRUE(config.moe.normalize_weights);
  EXPECT_EQ(config.moe.scoring, MoeConfig::Scoring::softmax);
  ASSERT_EQ(weights->layers().size(), 2u);
  for (const LayerWeights& layer : weights->layers()) {
    ASSERT_TRUE(layer.experts.has_value());
    EXPECT_EQ(layer.experts->gate.size(), 8u);
    EXPECT_EQ(layer.experts->down.front().rows, 64);
    EXPECT_EQ(layer.experts->down.front().cols, 32);
    EXPECT_EQ(layer.experts->router.rows, 8);
    EXPECT_FALSE(layer.experts->shared_gate.has_value());
    EXPECT_EQ(layer.w_gate.data, nullptr);
  }
}

TEST(MoeWeights, QwenMoeDenseLayersFollowSparseStepAndMlpOnlyLayers) {
  MoeConfig moe;
  moe.n_experts = 4;
  moe.sparse_step = 2;
  moe.dense_layers = {3};
  EXPECT_FALSE(moe.is_moe_layer(0));
  EXPECT_TRUE(moe.is_moe_layer(1));
  EXPECT_FALSE(moe.is_moe_layer(2));
  EXPECT_FALSE(moe.is_moe_layer(3));
  EXPECT_TRUE(moe.is_moe_layer(5));
  moe.sparse_step = 1;
  moe.first_dense_layers = 2;
  EXPECT_FALSE(moe.is_moe_layer(1));
  EXPECT_TRUE(moe.is_moe_layer(2));
}

// The GGUF's stacked experts are the HF experts in order, whichever file they come from.
TEST(MoeWeights, MixtralGgufExpertsAreTheHfExperts) {
  TERN_REQUIRE_SHARED(hf_path, "models/random-mixtral-tiny");
  TERN_REQUIRE_SHARED(gguf_path, "models/random-mixtral-tiny-f32.gguf");
  auto hf = load_model(hf_path.string());
  auto gguf = load_model(gguf_path.string());
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  for (const ModelWeights* weights : {&*hf, &*gguf}) {
    const ModelConfig& config = weights->config();
    EXPECT_EQ(config.architecture, "llama");
    EXPECT_EQ(config.moe.n_experts, 4);
    EXPECT_EQ(config.moe.experts_per_token, 2);
    EXPECT_EQ(config.moe.expert_ffn, 96);
    EXPECT_TRUE(config.moe.normalize_weights);
  }
  ASSERT_EQ(hf->layers().size(), gguf->layers().size());
  for (std::size_t l = 0; l < hf->layers().size(); ++l) {
    const ExpertWeights& a = *hf->layers()[l].experts;
    const ExpertWeights& b = *gguf->layers()[l].experts;
    EXPECT_TRUE(same_bytes(a.router, b.router));
    for (std::size_t e = 0; e < 4; ++e) {
      EXPECT_TRUE(same_bytes(a.gate[e], b.gate[e])) << "layer " << l << " expert " << e;
      EXPECT_TRUE(same_bytes(a.up[e], b.up[e])) << "layer " << l << " expert " << e;
      EXPECT_TRUE(same_bytes(a.down[e], b.down[e])) << "layer " << l << " expert " << e;
    }
  }
}

TEST(MoeWeights, DeepSeekV3FromHfAndGgufAgree) {
  TERN_REQUIRE_SHARED(hf_path, "models/random-deepseek-v3-tiny");
  TERN_REQUIRE_SHARED(gguf_path, "models/random-deepseek-v3-tiny-f32.gguf");
  auto hf = load_model(hf_path.string());
  auto gguf = load_model(gguf_path.string());
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  for (const ModelWeights* weights : {&*hf, &*gguf}) {
    const ModelConfig& config = weights->config();
    SCOPED_TRACE(std::string(weights->source_format()));
    EXPECT_EQ(config.architecture, "deepseek2");
    EXPECT_EQ(config.head_dim, 24);
    EXPECT_EQ(config.rope_layout, RopeLayout::interleaved);
    EXPECT_EQ(config.latent.q_lora_rank, 48);
    EXPECT_EQ(config.latent.kv_lora_rank, 32);
    EXPECT_EQ(config.latent.nope_head_dim, 16);
    EXPECT_EQ(config.latent.rope_head_dim, 8);
    EXPECT_EQ(config.latent.value_head_dim, 16);
    EXPECT_EQ(config.moe.n_experts, 8);
    EXPECT_EQ(config.moe.experts_per_token, 2);
    EXPECT_EQ(config.moe.scoring, MoeConfig::Scoring::sigmoid);
    EXPECT_EQ(config.moe.n_groups, 4);
    EXPECT_EQ(config.moe.groups_per_token, 2);
    EXPECT_FLOAT_EQ(config.moe.weight_scale, 2.5f);
    EXPECT_EQ(config.moe.shared_expert_ffn, 32);
    EXPECT_EQ(config.moe.first_dense_layers, 1);
    ASSERT_EQ(weights->layers().size(), 3u);
    EXPECT_FALSE(weights->layers()[0].experts.has_value());
    EXPECT_NE(weights->layers()[0].w_gate.data, nullptr);
    for (std::size_t l = 1; l < 3; ++l) {
      const LayerWeights& layer = weights->layers()[l];
      ASSERT_TRUE(layer.experts.has_value());
      EXPECT_TRUE(layer.experts->selection_bias.has_value());
      EXPECT_TRUE(layer.experts->shared_down.has_value());
    }
    for (const LayerWeights& layer : weights->layers()) {
      ASSERT_TRUE(layer.latent.has_value());
      EXPECT_TRUE(layer.latent->q_b.has_value());
      ASSERT_TRUE(layer.latent->kv_b.has_value());
      ASSERT_EQ(layer.latent->v_b.size(), 4u);
      EXPECT_EQ(layer.latent->v_b[1].rows, 16);
      EXPECT_EQ(layer.latent->v_b[1].cols, 32);
      EXPECT_EQ(layer.wq.data, nullptr);
      EXPECT_EQ(layer.wo.cols, 4 * 16);
    }
  }
  for (std::size_t l = 0; l < 3; ++l) {
    const LatentAttentionWeights& a = *hf->layers()[l].latent;
    const LatentAttentionWeights& b = *gguf->layers()[l].latent;
    EXPECT_TRUE(same_bytes(*a.kv_b, *b.kv_b));
    EXPECT_TRUE(same_bytes(a.v_b[3], b.v_b[3]));
    EXPECT_TRUE(same_bytes(a.kv_a, b.kv_a));
  }
}

// Qwen3-MoE's mlp_only_layers: a listed layer is a dense FFN of intermediate_size, loaded as such.
TEST(MoeWeights, Qwen3MoeMlpOnlyLayersAreDense) {
  TERN_REQUIRE_SHARED(path, "models/random-qwen3-moe-tiny");
  auto source = SafetensorsFile::open((path / "model.safetensors").string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  SafetensorsWriter writer;
  for (const SafetensorsTensorInfo& tensor : source->tensors()) {
    if (tensor.name.rfind("model.layers.1.mlp.", 0) != 0) {
      writer.add(tensor.name, tensor.dtype, tensor.shape, {tensor.data, tensor.bytes});
    }
  }
  const std::vector<std::byte> zeros(160 * 64 * sizeof(float));
  writer.add("model.layers.1.mlp.gate_proj.weight", "F32", {160, 64}, zeros);
  writer.add("model.layers.1.mlp.up_proj.weight", "F32", {160, 64}, zeros);
  writer.add("model.layers.1.mlp.down_proj.weight", "F32", {64, 160}, zeros);
  std::ifstream in(path / "config.json");
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string listed = "\"mlp_only_layers\": []";
  ASSERT_NE(json.find(listed), std::string::npos);
  json.replace(json.find(listed), listed.size(), "\"mlp_only_layers\": [1]");
  TempDir dir;
  testing::write_text(dir / "config.json", json);
  testing::write_bytes(dir / "model.safetensors", writer.bytes());
  auto loaded = load_model(dir.path().string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config().moe.dense_layers, std::vector<int>{1});
  EXPECT_TRUE(loaded->layers()[0].experts.has_value());
  EXPECT_FALSE(loaded->layers()[1].experts.has_value());
  EXPECT_EQ(loaded->layers()[1].w_down.cols, 160);
  // It runs: a dense layer between routed ones.
  kernels::ThreadPool pool(2);
  BackendSpec spec;
  spec.options.max_sequences = 1;
  spec.options.max_batch_tokens = 16;
  spec.options.max_context = 16;
  auto backend = create_backend(spec, *loaded, pool);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  auto runner = SequenceRunner::create(**backend, 16, KvCacheType::f32);
  ASSERT_TRUE(runner.ok()) << runner.error().message;
  const std::int32_t prompt[] = {1, 80, 147, 201};
  ASSERT_TRUE(runner->append(prompt).ok());
  for (float logit : runner->logits()) ASSERT_TRUE(std::isfinite(logit));
  // A layer listed but out of range is named.
  json.replace(json.find("[1]"), 3, "[7]");
  testing::write_text(dir / "config.json", json);
  auto refused = load_model(dir.path().string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'mlp_only_layers': layer 7 is out of range"),
            std::string::npos)
      << refused.error().message;
}

// DeepSeek-V2-Lite writes q_lora_rank: null for a plain q_proj.
TEST(MoeWeights, DeepSeekNullQLoraRankMeansAPlainQProj) {
  TERN_REQUIRE_SHARED(path, "models/random-deepseek-v3-tiny");
  std::ifstream in(path / "config.json");
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string rank = "\"q_lora_rank\": 48";
  ASSERT_NE(json.find(rank), std::string::npos);
  json.replace(json.find(rank), rank.size(), "\"q_lora_rank\": null");
  TempDir dir;
  testing::write_text(dir / "config.json", json);
  auto config = config_from_hf_directory(dir.path().string());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->latent.q_lora_rank, 0);
  EXPECT_EQ(config->latent.kv_lora_rank, 32);
}

// A one-layer GGUF `llama` with 4 experts, 2 per token.
struct TinyMixtralOptions {
  std::string omit_tensor;
  std::vector<std::uint64_t> gate_exps_shape = {64, 128, 4};
  std::vector<std::uint64_t> router_shape = {64, 4};
};

std::vector<std::byte> tiny_mixtral(const TinyMixtralOptions& options) {
  GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_u32("llama.block_count", 1);
  writer.add_u32("llama.embedding_length", 64);
  writer.add_u32("llama.feed_forward_length", 128);
  writer.add_u32("llama.attention.head_count", 2);
  writer.add_u32("llama.attention.head_count_kv", 1);
  writer.add_u32("llama.context_length", 256);
  writer.add_u32("llama.vocab_size", 16);
  writer.add_u32("llama.expert_count", 4);
  writer.add_u32("llama.expert_used_count", 2);
  writer.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  const auto tensor = [&](const std::string& name, std::vector<std::uint64_t> shape) {
    if (name != options.omit_tensor) writer.add_f32_tensor(name, std::move(shape));
  };
  tensor("token_embd.weight", {64, 16});
  tensor("output_norm.weight", {64});
  tensor("blk.0.attn_norm.weight", {64});
  tensor("blk.0.attn_q.weight", {64, 64});
  tensor("blk.0.attn_k.weight", {64, 32});
  tensor("blk.0.attn_v.weight", {64, 32});
  tensor("blk.0.attn_output.weight", {64, 64});
  tensor("blk.0.ffn_norm.weight", {64});
  tensor("blk.0.ffn_gate_inp.weight", options.router_shape);
  tensor("blk.0.ffn_gate_exps.weight", options.gate_exps_shape);
  tensor("blk.0.ffn_up_exps.weight", {64, 128, 4});
  tensor("blk.0.ffn_down_exps.weight", {128, 64, 4});
  return writer.bytes();
}

Expected<ModelWeights> load_bytes(std::vector<std::byte> bytes) {
  Expected<GgufFile> gguf = GgufFile::parse(MappedFile::from_bytes(std::move(bytes), "tiny.gguf"));
  if (!gguf) return gguf.error();
  return load_gguf_model(std::move(gguf).value());
}

void expect_load_error(const TinyMixtralOptions& options, std::string_view message) {
  Expected<ModelWeights> loaded = load_bytes(tiny_mixtral(options));
  ASSERT_FALSE(loaded.ok()) << "expected: " << message;
  EXPECT_EQ(loaded.error().message, message);
}

TEST(MoeWeights, StackedExpertsAreOneViewPerExpert) {
  Expected<ModelWeights> loaded = load_bytes(tiny_mixtral({}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ExpertWeights& experts = *loaded->layers()[0].experts;
  ASSERT_EQ(experts.gate.size(), 4u);
  for (std::size_t e = 1; e < 4; ++e) {
    EXPECT_EQ(experts.gate[e].data - experts.gate[e - 1].data, 128 * 64 * 4);
    EXPECT_EQ(experts.down[e].rows, 64);
    EXPECT_EQ(experts.down[e].cols, 128);
  }
}

TEST(MoeWeights, LoaderErrorsNameTheExpertTensorAndShape) {
  TinyMixtralOptions missing;
  missing.omit_tensor = "blk.0.ffn_up_exps.weight";
  expect_load_error(missing, "tiny.gguf: tensor 'blk.0.ffn_up_exps.weight' is missing");

  TinyMixtralOptions stacked;
  stacked.gate_exps_shape = {64, 128, 3};
  expect_load_error(stacked,
                    "tiny.gguf: tensor 'blk.0.ffn_gate_exps.weight' has shape [3, 128, 64] but the "
                    "configuration needs [4, 128, 64]");

  TinyMixtralOptions flat;
  flat.gate_exps_shape = {64, 512};
  expect_load_error(flat,
                    "tiny.gguf: tensor 'blk.0.ffn_gate_exps.weight' has shape [512, 64] but the "
                    "configuration needs [4, 128, 64]");

  TinyMixtralOptions router;
  router.router_shape = {64, 3};
  expect_load_error(router,
                    "tiny.gguf: tensor 'blk.0.ffn_gate_inp.weight' has shape [3, 64] but the "
                    "configuration needs [4, 64]");
}

// An HF Mixtral checkpoint missing one expert's matrix names that tensor.
TEST(MoeWeights, HfMissingExpertNamesTheTensor) {
  TERN_REQUIRE_SHARED(path, "models/random-mixtral-tiny");
  auto source = SafetensorsFile::open((path / "model.safetensors").string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  const std::string dropped = "model.layers.1.block_sparse_moe.experts.3.w2.weight";
  SafetensorsWriter writer;
  for (const SafetensorsTensorInfo& tensor : source->tensors()) {
    if (tensor.name != dropped) {
      writer.add(tensor.name, tensor.dtype, tensor.shape, {tensor.data, tensor.bytes});
    }
  }
  TempDir dir;
  std::filesystem::copy_file(path / "config.json", dir / "config.json");
  testing::write_bytes(dir / "model.safetensors", writer.bytes());
  auto loaded = load_model(dir.path().string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message,
            (dir / "model.safetensors").string() + ": tensor '" + dropped + "' is missing");
}

}  // namespace
}  // namespace tern::engine
