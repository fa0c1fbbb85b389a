// `tern quantize` on mixture-of-experts and latent-attention models (Mixtral, Qwen3-MoE,
// DeepSeek-V3), from HF directories and GGUF files: F32 keeps the configuration and the logits,
// Q8_0 writes 3-D expert tensors and keeps the greedy ids close to the reference.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/backend/backend_factory.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_metadata_from_hf.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/model_quantizer.h"
#include "engine/model/model_weights.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/integration/model/deepseek_split_kv_b.h"
#include "tests/integration/model/greedy_run.h"
#include "tests/integration/model/reference_data.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

using kernels::TensorType;
using model_tests::ModelRun;
using model_tests::run_greedy;
using model_tests::TempPath;

void expect_same_config(const ModelConfig& a, const ModelConfig& b, RopeLayout layout) {
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn_hidden_size, b.ffn_hidden_size);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.context_length, b.context_length);
  EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(b.rope_layout, layout);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.eos_token_ids, b.eos_token_ids);
  EXPECT_EQ(a.bos_token_id, b.bos_token_id);
  const RopeScalingConfig &sa = a.rope_scaling, &sb = b.rope_scaling;
  EXPECT_EQ(sa.type, sb.type);
  EXPECT_EQ(sa.factor, sb.factor);
  EXPECT_EQ(sa.original_max_position, sb.original_max_position);
  EXPECT_EQ(sa.beta_fast, sb.beta_fast);
  EXPECT_EQ(sa.beta_slow, sb.beta_slow);
  EXPECT_EQ(sa.mscale, sb.mscale);
  EXPECT_EQ(sa.mscale_all_dim, sb.mscale_all_dim);
  EXPECT_EQ(sa.attention_factor, sb.attention_factor);
  const MoeConfig &ma = a.moe, &mb = b.moe;
  EXPECT_EQ(ma.n_experts, mb.n_experts);
  EXPECT_EQ(ma.experts_per_token, mb.experts_per_token);
  EXPECT_EQ(ma.expert_ffn, mb.expert_ffn);
  EXPECT_EQ(ma.scoring, mb.scoring);
  EXPECT_EQ(ma.normalize_weights, mb.normalize_weights);
  EXPECT_EQ(ma.n_groups, mb.n_groups);
  EXPECT_EQ(ma.groups_per_token, mb.groups_per_token);
  EXPECT_EQ(ma.weight_scale, mb.weight_scale);
  EXPECT_EQ(ma.shared_expert_ffn, mb.shared_expert_ffn);
  EXPECT_EQ(ma.first_dense_layers, mb.first_dense_layers);
  EXPECT_EQ(ma.sparse_step, mb.sparse_step);
  EXPECT_EQ(ma.dense_layers, mb.dense_layers);
  const LatentAttentionConfig &la = a.latent, &lb = b.latent;
  EXPECT_EQ(la.q_lora_rank, lb.q_lora_rank);
  EXPECT_EQ(la.kv_lora_rank, lb.kv_lora_rank);
  EXPECT_EQ(la.nope_head_dim, lb.nope_head_dim);
  EXPECT_EQ(la.rope_head_dim, lb.rope_head_dim);
  EXPECT_EQ(la.value_head_dim, lb.value_head_dim);
}

// Both models' logits at the end of each reference prompt and their greedy ids, bit for bit.
void expect_identical_runs(const ModelWeights& source, const ModelWeights& converted,
                           const std::filesystem::path& reference_path) {
  kernels::ThreadPool pool(2);
  const auto references = testing::read_greedy_references(reference_path);
  ASSERT_EQ(references.size(), 8u);
  for (std::size_t p = 0; p < references.size(); ++p) {
    const ModelRun a = run_greedy(source, references[p], pool);
    const ModelRun b = run_greedy(converted, references[p], pool);
    ASSERT_FALSE(a.last_prompt_logits.empty());
    EXPECT_EQ(a.last_prompt_logits, b.last_prompt_logits) << "prompt " << p;
    EXPECT_EQ(a.greedy_ids, b.greedy_ids) << "prompt " << p;
  }
}

// Root-mean-square difference of every routed expert's weights, relative to their RMS.
double expert_relative_rms_error(const ModelWeights& source, const ModelWeights& converted) {
  double error = 0, norm = 0;
  const auto compare = [&](const WeightTensor& a, const WeightTensor& b) {
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_EQ(a.cols, b.cols);
    std::vector<float> row_a(static_cast<std::size_t>(a.cols)), row_b(row_a.size());
    for (std::int64_t r = 0; r < std::min(a.rows, b.rows); ++r) {
      kernels::dequantize_row(a.type, a.data + r * a.row_bytes, row_a.data(), a.cols);
      kernels::dequantize_row(b.type, b.data + r * b.row_bytes, row_b.data(), b.cols);
      for (std::size_t i = 0; i < row_a.size(); ++i) {
        error += (row_a[i] - row_b[i]) * double(row_a[i] - row_b[i]);
        norm += row_a[i] * double(row_a[i]);
      }
    }
  };
  for (std::size_t l = 0; l < source.layers().size(); ++l) {
    const auto& a = source.layers()[l].experts;
    const auto& b = converted.layers()[l].experts;
    EXPECT_EQ(a.has_value(), b.has_value()) << "layer " << l;
    if (!a || !b) continue;
    for (auto member : {&ExpertWeights::gate, &ExpertWeights::up, &ExpertWeights::down}) {
      EXPECT_EQ((*a.*member).size(), (*b.*member).size());
      for (std::size_t e = 0; e < std::min((*a.*member).size(), (*b.*member).size()); ++e) {
        compare((*a.*member)[e], (*b.*member)[e]);
      }
    }
  }
  return norm > 0 ? std::sqrt(error / norm) : 1.0;
}

// Q8_0 moves these random models' logits by 0.1 to 1 (dense ones as much: random-qwen3-tiny's
// worst logit moves 0.6 to 1.2 at the end of each prompt), and a flipped expert choice moves them
// further, so greedy ids are compared only while the reference's top-1 leads its top-2 by this.
constexpr double kQ8_0Margin = 0.35;

// Greedy steps before the first whose reference margin is below `margin`.
std::size_t steps_before_margin(const testing::GreedyReference& reference, double margin) {
  std::size_t steps = 0;
  while (steps < reference.greedy_ids.size() && steps < reference.greedy_margins.size() &&
         reference.greedy_margins[steps] >= margin) {
    ++steps;
  }
  return steps;
}

struct MoeCase {
  const char* model;
  const char* reference;
};

std::string case_name(const ::testing::TestParamInfo<MoeCase>& info) {
  std::string name = info.param.model;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

class QuantizeMoeModel : public ::testing::TestWithParam<MoeCase> {};

// HF `llama` (Mixtral) is written with interleaved Q/K rows, so its logits are compared with the
// shared GGUF that llama.cpp's converter wrote from the same checkpoint; every other source is
// compared with itself.
TEST_P(QuantizeMoeModel, F32KeepsConfigAndLogits) {
  TERN_REQUIRE_SHARED(model_path, std::string("models/") + GetParam().model);
  TERN_REQUIRE_SHARED(reference_path, GetParam().reference);
  const TempPath output("f32.gguf");
  const auto report = quantize_model(model_path.string(), output.string(), TensorType::f32);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto source = load_model(model_path.string());
  auto converted = load_model(output.string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  const ModelConfig& config = source->config();
  const bool permuted = source->gguf() == nullptr && config.architecture == "llama";
  expect_same_config(config, converted->config(),
                     permuted ? RopeLayout::interleaved : config.rope_layout);
  if (!permuted) {
    expect_identical_runs(*source, *converted, reference_path);
    return;
  }
  TERN_REQUIRE_SHARED(gguf_path, std::string("models/") + GetParam().model + "-f32.gguf");
  auto reference = load_model(gguf_path.string());
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  expect_identical_runs(*reference, *converted, reference_path);
}

// Every expert tensor is one 3-D Q8_0 tensor, experts outermost, holding each expert's weights
// within Q8_0's error; the router stays F32. On at least 7 of the 8 reference prompts the greedy
// ids equal the reference's at every step before the first whose margin is below kQ8_0Margin
// (testing::QuantizedAgreement's fixed 8 ids assume a trained model's margins, which these
// random models do not have).
TEST_P(QuantizeMoeModel, Q8_0WritesStackedExpertsAndAgrees) {
  TERN_REQUIRE_SHARED(model_path, std::string("models/") + GetParam().model);
  TERN_REQUIRE_SHARED(reference_path, GetParam().reference);
  const TempPath output("q8_0.gguf");
  const auto report = quantize_model(model_path.string(), output.string(), TensorType::q8_0);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto converted = load_model(output.string());
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  const ModelConfig& config = converted->config();
  const GgufFile& gguf = *converted->gguf();
  const MoeConfig& moe = config.moe;
  ASSERT_TRUE(moe.enabled());
  const std::int64_t hidden = config.hidden_size, ffn = moe.expert_ffn, n = moe.n_experts;
  int moe_layers = 0;
  for (int l = 0; l < config.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (!moe.is_moe_layer(l)) {
      EXPECT_EQ(gguf.find_tensor(p + "ffn_gate_exps.weight"), nullptr);
      ASSERT_NE(gguf.find_tensor(p + "ffn_gate.weight"), nullptr) << p;
      continue;
    }
    ++moe_layers;
    EXPECT_EQ(gguf.find_tensor(p + "ffn_gate.weight"), nullptr) << "absent dense FFN written";
    for (const auto& [name, shape] :
         {std::pair{"ffn_gate_exps.weight", std::vector<std::int64_t>{hidden, ffn, n}},
          std::pair{"ffn_up_exps.weight", std::vector<std::int64_t>{hidden, ffn, n}},
          std::pair{"ffn_down_exps.weight", std::vector<std::int64_t>{ffn, hidden, n}}}) {
      const GgufTensorInfo* tensor = gguf.find_tensor(p + name);
      ASSERT_NE(tensor, nullptr) << p + name;
      EXPECT_EQ(tensor->type, TensorType::q8_0) << p + name;
      EXPECT_EQ(tensor->shape, shape) << p + name;
    }
    const GgufTensorInfo* router = gguf.find_tensor(p + "ffn_gate_inp.weight");
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->type, TensorType::f32);
    EXPECT_EQ(router->shape, (std::vector<std::int64_t>{hidden, n}));
    if (moe.shared_expert_ffn > 0) {
      const GgufTensorInfo* shared = gguf.find_tensor(p + "ffn_down_shexp.weight");
      ASSERT_NE(shared, nullptr);
      EXPECT_EQ(shared->shape, (std::vector<std::int64_t>{moe.shared_expert_ffn, hidden}));
    }
    if (moe.scoring == MoeConfig::Scoring::sigmoid) {
      const GgufTensorInfo* bias = gguf.find_tensor(p + "exp_probs_b.bias");
      ASSERT_NE(bias, nullptr);
      EXPECT_EQ(bias->type, TensorType::f32);
    }
  }
  EXPECT_GT(moe_layers, 0);
  if (config.latent.enabled()) {
    EXPECT_EQ(gguf.find_tensor("blk.0.attn_k.weight"), nullptr) << "absent wk written";
    const GgufTensorInfo* kv_a = gguf.find_tensor("blk.0.attn_kv_a_mqa.weight");
    ASSERT_NE(kv_a, nullptr);
    EXPECT_EQ(kv_a->type, TensorType::q8_0);
  }

  auto source = load_model(model_path.string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  const double error = expert_relative_rms_error(*source, *converted);
  EXPECT_LT(error, 0.01) << "Q8_0 keeps experts within 1%; a misplaced expert or row is ~140%";

  kernels::ThreadPool pool(2);
  const auto references = testing::read_greedy_references(reference_path);
  ASSERT_EQ(references.size(), 8u);
  int agreeing = 0;
  std::size_t compared = 0;
  int first_token_matches = 0;
  for (const testing::GreedyReference& reference : references) {
    const ModelRun run = run_greedy(*converted, reference, pool);
    const std::size_t steps = steps_before_margin(reference, kQ8_0Margin);
    compared += steps;
    first_token_matches += !run.greedy_ids.empty() && run.greedy_ids[0] == reference.greedy_ids[0];
    agreeing += run.greedy_ids.size() >= steps &&
                std::equal(reference.greedy_ids.begin(),
                           reference.greedy_ids.begin() + static_cast<std::ptrdiff_t>(steps),
                           run.greedy_ids.begin());
  }
  EXPECT_GE(agreeing, 7);
  std::printf(
      "%s Q8_0: expert weights' relative RMS error %.5f; greedy ids agree before the first "
      "margin below %.2f on %d/8 prompts (%zu steps compared); first token %d/8\n",
      GetParam().model, error, kQ8_0Margin, agreeing, compared, first_token_matches);
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, QuantizeMoeModel,
    ::testing::Values(
        MoeCase{"random-mixtral-tiny", "reference/random-mixtral-tiny.greedy.jsonl"},
        MoeCase{"random-qwen3-moe-tiny", "reference/random-qwen3-moe-tiny.greedy.jsonl"},
        MoeCase{"random-deepseek-v3-tiny", "reference/random-deepseek-v3-tiny.greedy.jsonl"},
        MoeCase{"random-mixtral-tiny-f32.gguf", "reference/random-mixtral-tiny.greedy.jsonl"},
        MoeCase{"random-deepseek-v3-tiny-f32.gguf",
                "reference/random-deepseek-v3-tiny.greedy.jsonl"}),
    case_name);

// A copy of a shared HF directory whose config.json has `from` replaced by `to`.
Status copy_with_config_edit(const std::filesystem::path& source, const std::filesystem::path& to,
                             const std::string& from, const std::string& replacement) {
  std::filesystem::create_directories(to);
  for (const auto& entry : std::filesystem::directory_iterator(source)) {
    std::filesystem::copy_file(entry.path(), to / entry.path().filename());
  }
  std::ifstream in(to / "config.json");
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const std::size_t at = config.find(from);
  if (at == std::string::npos) return Error{"config.json has no '" + from + "'"};
  config.replace(at, from.size(), replacement);
  std::ofstream(to / "config.json", std::ios::trunc) << config;
  return Status::success();
}

// Converts `directory` to F32 GGUF and expects its configuration and, bit for bit, its logits.
void expect_f32_conversion_reads_back(const TempPath& directory,
                                      const std::filesystem::path& reference_path) {
  const TempPath output(directory.path.filename().string() + ".gguf");
  const auto report = quantize_model(directory.string(), output.string(), TensorType::f32);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto source = load_model(directory.string());
  auto converted = load_model(output.string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  ASSERT_EQ(source->config().rope_scaling.type, RopeScalingConfig::Type::yarn);
  expect_same_config(source->config(), converted->config(), source->config().rope_layout);
  expect_identical_runs(*source, *converted, reference_path);
}

// DeepSeek-V3's YaRN (mscale == mscale_all_dim) becomes llama.cpp's yarn keys and reads back
// the same, so the logits stay bit-identical.
TEST(QuantizeYarn, DeepSeekScalingReadsBack) {
  TERN_REQUIRE_SHARED(model_path, "models/random-deepseek-v3-tiny");
  TERN_REQUIRE_SHARED(reference_path, "reference/random-deepseek-v3-tiny.greedy.jsonl");
  const TempPath directory("yarn-deepseek");
  ASSERT_TRUE(copy_with_config_edit(model_path, directory.path, "\"rope_scaling\": null",
                                    R"("rope_scaling": {"type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 128,
                                        "beta_fast": 24, "beta_slow": 2,
                                        "mscale": 1.0, "mscale_all_dim": 1.0})")
                  .ok());
  expect_f32_conversion_reads_back(directory, reference_path);
}

// A dense model's YaRN without magnitude scales (Qwen3's) was once dropped silently.
TEST(QuantizeYarn, Qwen3ScalingReadsBack) {
  TERN_REQUIRE_SHARED(model_path, "models/random-qwen3-tiny");
  TERN_REQUIRE_SHARED(reference_path, "reference/random-qwen3-tiny.greedy.jsonl");
  const TempPath directory("yarn-qwen3");
  ASSERT_TRUE(copy_with_config_edit(model_path, directory.path, "\"max_position_embeddings\": 512,",
                                    R"("max_position_embeddings": 512,
                                       "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 128},)")
                  .ok());
  expect_f32_conversion_reads_back(directory, reference_path);
}

// A YaRN that GGUF's single yarn_log_multiplier cannot hold is refused, naming the keys.
TEST(QuantizeYarn, UnrepresentableScalingIsRefused) {
  TERN_REQUIRE_SHARED(model_path, "models/random-deepseek-v3-tiny");
  const TempPath directory("yarn-mscale");
  ASSERT_TRUE(copy_with_config_edit(model_path, directory.path, "\"rope_scaling\": null",
                                    R"("rope_scaling": {"type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 128,
                                        "mscale": 0.707, "mscale_all_dim": 1.0})")
                  .ok());
  const TempPath output("yarn-mscale.gguf");
  const auto report = quantize_model(directory.string(), output.string(), TensorType::f32);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("mscale_all_dim"), std::string::npos)
      << report.error().message;
  EXPECT_NE(report.error().message.find("config.json"), std::string::npos);
}

// A GGUF with DeepSeek's kv_b split per head keeps it split: attn_k_b and attn_v_b as 3-D
// tensors, heads outermost, and the same logits.
TEST(QuantizeMoe, DeepSeekSplitKvBStaysSplit) {
  TERN_REQUIRE_SHARED(model_path, "models/random-deepseek-v3-tiny-f32.gguf");
  TERN_REQUIRE_SHARED(reference_path, "reference/random-deepseek-v3-tiny.greedy.jsonl");
  auto whole = GgufFile::open(model_path.string());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const TempPath split_path("split.gguf");
  ASSERT_TRUE(testing::write_split_kv_b(*whole, split_path.string()).ok());
  const TempPath output("split-out.gguf");
  const auto report = quantize_model(split_path.string(), output.string(), TensorType::f32);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto source = load_model(split_path.string());
  auto converted = load_model(output.string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  const LatentAttentionConfig& latent = source->config().latent;
  const std::int64_t heads = source->config().n_heads;
  const GgufFile& gguf = *converted->gguf();
  EXPECT_EQ(gguf.find_tensor("blk.0.attn_kv_b.weight"), nullptr);
  const GgufTensorInfo* k_b = gguf.find_tensor("blk.0.attn_k_b.weight");
  const GgufTensorInfo* v_b = gguf.find_tensor("blk.0.attn_v_b.weight");
  ASSERT_NE(k_b, nullptr);
  ASSERT_NE(v_b, nullptr);
  EXPECT_EQ(k_b->shape,
            (std::vector<std::int64_t>{latent.nope_head_dim, latent.kv_lora_rank, heads}));
  EXPECT_EQ(v_b->shape,
            (std::vector<std::int64_t>{latent.kv_lora_rank, latent.value_head_dim, heads}));
  expect_same_config(source->config(), converted->config(), RopeLayout::interleaved);
  expect_identical_runs(*source, *converted, reference_path);
}

// A DeepSeek checkpoint that rotates halves (rope_interleave false) gets the rotated rows of its
// query and kv_a interleaved, GGUF deepseek2's only layout. The dot products then sum in another
// order, so the logits agree to rounding, not bit for bit.
TEST(QuantizeMoe, DeepSeekRotateHalfIsInterleaved) {
  TERN_REQUIRE_SHARED(model_path, "models/random-deepseek-v3-tiny");
  TERN_REQUIRE_SHARED(reference_path, "reference/random-deepseek-v3-tiny.greedy.jsonl");
  const TempPath directory("neox");
  ASSERT_TRUE(copy_with_config_edit(model_path, directory.path, "\"rope_interleave\": true",
                                    "\"rope_interleave\": false")
                  .ok());
  const TempPath output("neox.gguf");
  const auto report = quantize_model(directory.string(), output.string(), TensorType::f32);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto source = load_model(directory.string());
  auto converted = load_model(output.string());
  ASSERT_TRUE(source.ok()) << source.error().message;
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  ASSERT_EQ(source->config().rope_layout, RopeLayout::neox);
  expect_same_config(source->config(), converted->config(), RopeLayout::interleaved);
  kernels::ThreadPool pool(2);
  const auto references = testing::read_greedy_references(reference_path);
  ASSERT_EQ(references.size(), 8u);
  double worst = 0;
  for (const testing::GreedyReference& reference : references) {
    const ModelRun a = run_greedy(*source, reference, pool);
    const ModelRun b = run_greedy(*converted, reference, pool);
    ASSERT_EQ(a.last_prompt_logits.size(), b.last_prompt_logits.size());
    for (std::size_t i = 0; i < a.last_prompt_logits.size(); ++i) {
      worst = std::max<double>(worst, std::abs(a.last_prompt_logits[i] - b.last_prompt_logits[i]));
    }
  }
  // float32 rounding of sums reordered; a wrong permutation moves logits by whole units.
  EXPECT_LT(worst, 1e-4);
  std::printf("rotate-half DeepSeek: worst logit difference %.3g\n", worst);
}

// Qwen3-MoE's dense layers between expert layers have no GGUF key: refused, not dropped. (The
// shared checkpoint has no dense layers, so the configuration is edited after reading.)
TEST(QuantizeMoe, DenseLayersBetweenExpertLayersAreRefused) {
  TERN_REQUIRE_SHARED(model_path, "models/random-qwen3-moe-tiny");
  auto config = config_from_hf_directory(model_path.string());
  ASSERT_TRUE(config.ok()) << config.error().message;
  for (const auto& [sparse_step, dense_layers] :
       {std::pair{2, std::vector<int>{}}, std::pair{1, std::vector<int>{1}}}) {
    ModelConfig edited = *config;
    edited.moe.sparse_step = sparse_step;
    edited.moe.dense_layers = dense_layers;
    GgufWriter writer;
    const Status written = write_hf_metadata(edited, model_path.string(), 0, writer);
    ASSERT_FALSE(written.ok());
    EXPECT_NE(written.message().find("mlp_only_layers"), std::string::npos) << written.message();
    EXPECT_NE(written.message().find("config.json"), std::string::npos) << written.message();
  }
}

}  // namespace
}  // namespace tern::engine
