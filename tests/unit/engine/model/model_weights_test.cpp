#include "engine/model/model_weights.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>

#include "tests/support/shared_data.h"
#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

using kernels::TensorType;
using testing::GgufWriter;
using testing::SafetensorsWriter;
using testing::TempDir;

// The hyperparameters a config.json states, compared field by field.
void expect_matches_config_json(const ModelConfig& config, const std::filesystem::path& json_path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.load(json_path.string()).get(root)) << json_path;
  const auto integer = [&](const char* key) {
    std::int64_t value = 0;
    EXPECT_FALSE(root[key].get_int64().get(value)) << key;
    return static_cast<int>(value);
  };
  const auto number = [&](const char* key) {
    double value = 0;
    EXPECT_FALSE(root[key].get_double().get(value)) << key;
    return value;
  };
  EXPECT_EQ(config.hidden_size, integer("hidden_size"));
  EXPECT_EQ(config.ffn_hidden_size, integer("intermediate_size"));
  EXPECT_EQ(config.n_layers, integer("num_hidden_layers"));
  EXPECT_EQ(config.n_heads, integer("num_attention_heads"));
  EXPECT_EQ(config.n_kv_heads, integer("num_key_value_heads"));
  EXPECT_EQ(config.vocab_size, integer("vocab_size"));
  EXPECT_EQ(config.context_length, integer("max_position_embeddings"));
  EXPECT_FLOAT_EQ(config.rms_norm_eps, static_cast<float>(number("rms_norm_eps")));
  EXPECT_FLOAT_EQ(config.rope_theta, static_cast<float>(number("rope_theta")));
  std::int64_t head_dim = 0;
  if (!root["head_dim"].get_int64().get(head_dim)) {
    EXPECT_EQ(config.head_dim, head_dim);
  } else {
    EXPECT_EQ(config.head_dim, config.hidden_size / config.n_heads);
  }
  EXPECT_EQ(config.bos_token_id, integer("bos_token_id"));
  EXPECT_EQ(config.eos_token_ids, std::vector<int>{integer("eos_token_id")});
  bool tied = false;
  EXPECT_FALSE(root["tie_word_embeddings"].get_bool().get(tied));
  EXPECT_EQ(config.tied_embeddings, tied);
}

// Every tensor must lie inside the file the model owns.
void expect_in_bounds(const ModelWeights& weights, std::span<const std::byte> bytes) {
  const auto check = [&](const WeightTensor& tensor) {
    ASSERT_NE(tensor.data, nullptr);
    ASSERT_GE(tensor.data, bytes.data());
    ASSERT_LE(tensor.data + tensor.rows * static_cast<std::int64_t>(tensor.row_bytes),
              bytes.data() + bytes.size());
  };
  check(weights.token_embedding());
  check(weights.output());
  check(weights.output_norm());
  for (const LayerWeights& layer : weights.layers()) {
    for (const WeightTensor* tensor :
         {&layer.attn_norm, &layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.ffn_norm,
          &layer.w_gate, &layer.w_up, &layer.w_down}) {
      check(*tensor);
    }
  }
}

class TinyStoriesGguf : public ::testing::TestWithParam<std::pair<const char*, TensorType>> {};

TEST_P(TinyStoriesGguf, LoadsWithTheHfHyperparameters) {
  const auto [file_name, matrix_type] = GetParam();
  TERN_REQUIRE_SHARED(path, std::string("models/") + file_name);
  TERN_REQUIRE_SHARED(config_json, "models/tinystories-656k/config.json");
  Expected<ModelWeights> loaded = load_model(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ModelWeights& weights = *loaded;
  const ModelConfig& config = weights.config();
  expect_matches_config_json(config, config_json);
  EXPECT_EQ(config.architecture, "llama");
  EXPECT_EQ(config.rope_layout, RopeLayout::interleaved);
  EXPECT_EQ(config.rope_scaling.type, RopeScalingConfig::Type::none);
  EXPECT_FALSE(config.qkv_bias);
  EXPECT_FALSE(config.qk_norm);
  EXPECT_EQ(weights.source_format(), "gguf");
  ASSERT_NE(weights.gguf(), nullptr);
  EXPECT_EQ(weights.gguf()->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(weights.path(), path.string());
  EXPECT_EQ(weights.file_bytes(), std::filesystem::file_size(path));
  EXPECT_EQ(weights.rope_freq_factors(), nullptr);

  EXPECT_EQ(weights.output().data, weights.token_embedding().data);
  EXPECT_EQ(weights.token_embedding().type, TensorType::f32);  // kept F32 in every file
  EXPECT_EQ(weights.token_embedding().rows, 2048);
  EXPECT_EQ(weights.token_embedding().cols, 128);
  ASSERT_EQ(weights.layers().size(), 2u);
  const LayerWeights& layer = weights.layers()[1];
  EXPECT_EQ(layer.wq.type, matrix_type);
  EXPECT_EQ(layer.wq.rows, 128);
  EXPECT_EQ(layer.wk.rows, 64);
  EXPECT_EQ(layer.wo.cols, 128);
  EXPECT_EQ(layer.w_down.rows, 128);
  EXPECT_EQ(layer.w_down.cols, 384);
  EXPECT_EQ(layer.w_down.row_bytes, *kernels::tensor_bytes(matrix_type, 384));
  EXPECT_EQ(layer.attn_norm.type, TensorType::f32);
  EXPECT_EQ(layer.attn_norm.rows, 1);
  EXPECT_EQ(layer.attn_norm.cols, 128);
  EXPECT_FALSE(layer.bq);
  EXPECT_FALSE(layer.q_norm);
  expect_in_bounds(weights, weights.gguf()->bytes());
}

INSTANTIATE_TEST_SUITE_P(
    Files, TinyStoriesGguf,
    ::testing::Values(std::pair{"tinystories-656k-f32.gguf", TensorType::f32},
                      std::pair{"tinystories-656k-q8_0.gguf", TensorType::q8_0},
                      std::pair{"tinystories-656k-q4_0.gguf", TensorType::q4_0}));

TEST(ModelWeights, LoadsTinyStoriesHfWithOnlyLmHead) {
  TERN_REQUIRE_SHARED(dir, "models/tinystories-656k");
  Expected<ModelWeights> loaded = load_model(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ModelConfig& config = loaded->config();
  expect_matches_config_json(config, dir / "config.json");
  EXPECT_EQ(config.architecture, "llama");
  EXPECT_EQ(config.rope_layout, RopeLayout::neox);
  EXPECT_EQ(loaded->source_format(), "safetensors");
  EXPECT_EQ(loaded->gguf(), nullptr);
  EXPECT_EQ(loaded->output().data, loaded->token_embedding().data);
  EXPECT_EQ(loaded->layers()[0].wq.type, TensorType::f32);
  EXPECT_EQ(loaded->file_bytes(), std::filesystem::file_size(dir / "model.safetensors"));
  EXPECT_FALSE(config.generation.temperature);  // generation_config.json sets only ids
}

TEST(ModelWeights, LoadsQwen2WithQkvBias) {
  TERN_REQUIRE_SHARED(dir, "models/random-qwen2-tiny");
  Expected<ModelWeights> loaded = load_model(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ModelConfig& config = loaded->config();
  expect_matches_config_json(config, dir / "config.json");
  EXPECT_EQ(config.architecture, "qwen2");
  EXPECT_TRUE(config.qkv_bias);
  EXPECT_FALSE(config.qk_norm);
  EXPECT_EQ(config.rope_layout, RopeLayout::neox);
  const LayerWeights& layer = loaded->layers()[0];
  ASSERT_TRUE(layer.bq && layer.bk && layer.bv);
  EXPECT_EQ(layer.bq->cols, 64);
  EXPECT_EQ(layer.bk->cols, 32);
  EXPECT_EQ(layer.bv->rows, 1);
  EXPECT_EQ(loaded->output().data, loaded->token_embedding().data);
}

TEST(ModelWeights, LoadsQwen3WithQkNormAndSeparateHeadDim) {
  TERN_REQUIRE_SHARED(dir, "models/random-qwen3-tiny");
  Expected<ModelWeights> loaded = load_model(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ModelConfig& config = loaded->config();
  expect_matches_config_json(config, dir / "config.json");
  EXPECT_EQ(config.architecture, "qwen3");
  EXPECT_EQ(config.head_dim, 32);
  EXPECT_TRUE(config.qk_norm);
  EXPECT_FALSE(config.qkv_bias);
  const LayerWeights& layer = loaded->layers()[1];
  EXPECT_EQ(layer.wq.rows, 128);
  EXPECT_EQ(layer.wq.cols, 64);
  EXPECT_EQ(layer.wo.rows, 64);
  EXPECT_EQ(layer.wo.cols, 128);
  ASSERT_TRUE(layer.q_norm && layer.k_norm);
  EXPECT_EQ(layer.q_norm->cols, 32);
  EXPECT_FALSE(layer.bq);
}

// GGUF llama Q/K rows are HF rows permuted for interleaved RoPE: within each head of size d,
// GGUF row 2i is HF row i and GGUF row 2i+1 is HF row i + d/2.
void expect_interleaved(const WeightTensor& gguf, const WeightTensor& hf, int head_dim) {
  ASSERT_EQ(gguf.rows, hf.rows);
  ASSERT_EQ(gguf.row_bytes, hf.row_bytes);
  const auto row = [](const WeightTensor& tensor, std::int64_t index) {
    return tensor.data + index * static_cast<std::int64_t>(tensor.row_bytes);
  };
  for (std::int64_t head = 0; head < gguf.rows / head_dim; ++head) {
    const std::int64_t base = head * head_dim;
    for (std::int64_t i = 0; i < head_dim / 2; ++i) {
      EXPECT_EQ(std::memcmp(row(gguf, base + 2 * i), row(hf, base + i), gguf.row_bytes), 0)
          << "head " << head << " pair " << i;
      EXPECT_EQ(std::memcmp(row(gguf, base + 2 * i + 1), row(hf, base + i + head_dim / 2),
                            gguf.row_bytes),
                0)
          << "head " << head << " pair " << i;
    }
  }
}

TEST(ModelWeights, GgufQkRowsAreTheHfRowsInterleaved) {
  TERN_REQUIRE_SHARED(gguf_path, "models/tinystories-656k-f32.gguf");
  TERN_REQUIRE_SHARED(hf_dir, "models/tinystories-656k");
  Expected<ModelWeights> gguf = load_model(gguf_path.string());
  Expected<ModelWeights> hf = load_model(hf_dir.string());
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  const int head_dim = gguf->config().head_dim;
  for (std::size_t layer = 0; layer < gguf->layers().size(); ++layer) {
    const LayerWeights& g = gguf->layers()[layer];
    const LayerWeights& h = hf->layers()[layer];
    expect_interleaved(g.wq, h.wq, head_dim);
    expect_interleaved(g.wk, h.wk, head_dim);
    // V and the rest are not permuted.
    EXPECT_EQ(std::memcmp(g.wv.data, h.wv.data, g.wv.rows * g.wv.row_bytes), 0);
    EXPECT_EQ(std::memcmp(g.w_down.data, h.w_down.data, g.w_down.rows * g.w_down.row_bytes), 0);
  }
  // The row permutation is not the identity, so the check above has teeth.
  EXPECT_NE(std::memcmp(gguf->layers()[0].wq.data, hf->layers()[0].wq.data,
                        gguf->layers()[0].wq.rows * gguf->layers()[0].wq.row_bytes),
            0);
  EXPECT_EQ(std::memcmp(gguf->token_embedding().data, hf->token_embedding().data,
                        2048 * gguf->token_embedding().row_bytes),
            0);
}

// --- synthetic GGUF models: one layer, hidden 64, 2 heads of 32, 1 KV head, ffn 128, vocab 16 --

struct TinyLlamaOptions {
  std::string architecture = "llama";
  std::string omit_tensor;
  std::string omit_key;
  std::vector<std::uint64_t> wk_shape = {64, 32};
  TensorType wq_type = TensorType::f32;
  bool with_output = false;
};

std::vector<std::byte> tiny_llama(const TinyLlamaOptions& options) {
  GgufWriter writer;
  const std::string& a = options.architecture;
  writer.add_string("general.architecture", a);
  const auto add_u32 = [&](const std::string& key, std::uint32_t value) {
    if (key != options.omit_key) writer.add_u32(key, value);
  };
  add_u32(a + ".block_count", 1);
  add_u32(a + ".embedding_length", 64);
  add_u32(a + ".feed_forward_length", 128);
  add_u32(a + ".attention.head_count", 2);
  add_u32(a + ".attention.head_count_kv", 1);
  add_u32(a + ".context_length", 256);
  add_u32(a + ".vocab_size", 16);
  add_u32("tokenizer.ggml.eos_token_id", 2);
  writer.add_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
  writer.add_f32("general.sampling.temp", 0.7f);
  const auto tensor = [&](const std::string& name, std::vector<std::uint64_t> shape) {
    if (name != options.omit_tensor) writer.add_f32_tensor(name, std::move(shape));
  };
  tensor("token_embd.weight", {64, 16});
  tensor("output_norm.weight", {64});
  if (options.with_output) tensor("output.weight", {64, 16});
  tensor("blk.0.attn_norm.weight", {64});
  if (options.wq_type == TensorType::f32) {
    tensor("blk.0.attn_q.weight", {64, 64});
  } else {
    const std::uint64_t bytes = *kernels::tensor_bytes(options.wq_type, 64 * 64);
    writer.add_tensor("blk.0.attn_q.weight", options.wq_type, {64, 64},
                      std::vector<std::byte>(bytes));
  }
  tensor("blk.0.attn_k.weight", options.wk_shape);
  tensor("blk.0.attn_v.weight", {64, 32});
  tensor("blk.0.attn_output.weight", {64, 64});
  tensor("blk.0.ffn_norm.weight", {64});
  tensor("blk.0.ffn_gate.weight", {64, 128});
  tensor("blk.0.ffn_up.weight", {64, 128});
  tensor("blk.0.ffn_down.weight", {128, 64});
  return writer.bytes();
}

Expected<ModelWeights> load_bytes(std::vector<std::byte> bytes) {
  Expected<GgufFile> gguf = GgufFile::parse(MappedFile::from_bytes(std::move(bytes), "tiny.gguf"));
  if (!gguf) return gguf.error();
  return load_gguf_model(std::move(gguf).value());
}

void expect_load_error(const TinyLlamaOptions& options, std::string_view message) {
  Expected<ModelWeights> loaded = load_bytes(tiny_llama(options));
  ASSERT_FALSE(loaded.ok()) << "expected: " << message;
  EXPECT_EQ(loaded.error().message, message);
}

TEST(ModelWeights, LoadsASyntheticGguf) {
  Expected<ModelWeights> loaded = load_bytes(tiny_llama({}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const ModelConfig& config = loaded->config();
  EXPECT_EQ(config.head_dim, 32);
  EXPECT_EQ(config.n_kv_heads, 1);
  EXPECT_EQ(config.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(config.generation.temperature, 0.7f);
  EXPECT_TRUE(config.tied_embeddings);

  TinyLlamaOptions untied;
  untied.with_output = true;
  loaded = load_bytes(tiny_llama(untied));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_FALSE(loaded->config().tied_embeddings);
  EXPECT_NE(loaded->output().data, loaded->token_embedding().data);

  TinyLlamaOptions quantized;
  quantized.wq_type = TensorType::q4_k;  // 64 columns: not a whole Q4_K block of 256
  EXPECT_FALSE(load_bytes(tiny_llama(quantized)).ok());
  quantized.wq_type = TensorType::q8_0;
  loaded = load_bytes(tiny_llama(quantized));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->layers()[0].wq.row_bytes, 68u);
}

TEST(ModelWeights, NamesTheFileTensorAndReason) {
  TinyLlamaOptions missing;
  missing.omit_tensor = "blk.0.ffn_up.weight";
  expect_load_error(missing, "tiny.gguf: tensor 'blk.0.ffn_up.weight' is missing");

  TinyLlamaOptions shape;
  shape.wk_shape = {64, 64};
  expect_load_error(shape,
                    "tiny.gguf: tensor 'blk.0.attn_k.weight' has shape [64, 64] but the "
                    "configuration needs [32, 64]");

  TinyLlamaOptions type;
  type.wq_type = TensorType::q5_0;
  expect_load_error(type,
                    "tiny.gguf: tensor 'blk.0.attn_q.weight' type Q5_0 is not supported here "
                    "(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");

  TinyLlamaOptions architecture;
  architecture.architecture = "gpt2";
  expect_load_error(architecture,
                    "tiny.gguf: unsupported architecture 'gpt2' (supported: llama (Llama 2/3, "
                    "TinyLlama, Mistral, Mixtral), qwen2, qwen3, qwen3moe (Qwen3-MoE), "
                    "deepseek2 (DeepSeek-V3))");

  TinyLlamaOptions key;
  key.omit_key = "llama.block_count";
  expect_load_error(key, "tiny.gguf: key 'llama.block_count': missing");

  TinyLlamaOptions embedding;
  embedding.omit_tensor = "token_embd.weight";
  expect_load_error(embedding, "tiny.gguf: tensor 'token_embd.weight' is missing");
}

// --- Hugging Face directories ----------------------------------------------------------------

std::vector<std::byte> f32_zeros(std::size_t count) {
  return std::vector<std::byte>(count * 4);
}

TEST(ModelWeights, ReadsHfRopeScalingAndGenerationConfig) {
  TempDir dir;
  testing::write_text(dir / "config.json", R"({
    "architectures": ["MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
    "vocab_size": 16, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "tie_word_embeddings": false, "head_dim": null,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    "bos_token_id": 1, "eos_token_id": [2, 3]})");
  testing::write_text(dir / "generation_config.json", R"({
    "temperature": 0.6, "top_p": 0.9, "top_k": 40, "repetition_penalty": 1.1,
    "eos_token_id": [3, 4], "do_sample": true})");
  Expected<ModelConfig> config = config_from_hf_directory(dir.path().string());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->architecture, "llama");
  EXPECT_EQ(config->head_dim, 32);
  EXPECT_EQ(config->context_length, 131072);
  EXPECT_EQ(config->rope_scaling.type, RopeScalingConfig::Type::llama3);
  EXPECT_EQ(config->rope_scaling.factor, 8.0f);
  EXPECT_EQ(config->rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(config->rope_scaling.original_max_position, 8192);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(config->generation.temperature, 0.6f);
  EXPECT_EQ(config->generation.top_p, 0.9f);
  EXPECT_EQ(config->generation.top_k, 40);
  EXPECT_EQ(config->generation.repetition_penalty, 1.1f);

  testing::write_text(dir / "config.json", R"({"model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
    "vocab_size": 16, "rope_scaling": {"type": "linear", "factor": 2}})");
  config = config_from_hf_directory(dir.path().string());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->rope_scaling.type, RopeScalingConfig::Type::linear);
  EXPECT_EQ(config->rope_scaling.factor, 2.0f);
  EXPECT_EQ(config->n_kv_heads, 2);

  testing::write_text(dir / "config.json", R"({"model_type": "gpt_neox", "hidden_size": 64})");
  config = config_from_hf_directory(dir.path().string());
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("unsupported architecture 'gpt_neox'"), std::string::npos);

  testing::write_text(dir / "config.json", R"({"model_type": "llama", "hidden_size": "64"})");
  config = config_from_hf_directory(dir.path().string());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            (dir / "config.json").string() + ": 'hidden_size': expected an integer");
}

// A one-layer HF llama with the given dtype for q_proj.
std::vector<std::byte> tiny_hf_llama(std::string_view q_dtype) {
  SafetensorsWriter writer;
  writer.add("model.embed_tokens.weight", "F32", {16, 64}, f32_zeros(16 * 64));
  writer.add("model.norm.weight", "BF16", {64}, std::vector<std::byte>(128));
  writer.add("model.layers.0.input_layernorm.weight", "F16", {64}, std::vector<std::byte>(128));
  writer.add("model.layers.0.post_attention_layernorm.weight", "F32", {64}, f32_zeros(64));
  const std::size_t q_bytes = q_dtype == "I64" ? 8 : 4;
  writer.add("model.layers.0.self_attn.q_proj.weight", q_dtype, {64, 64},
             std::vector<std::byte>(64 * 64 * q_bytes));
  writer.add("model.layers.0.self_attn.k_proj.weight", "F32", {32, 64}, f32_zeros(32 * 64));
  writer.add("model.layers.0.self_attn.v_proj.weight", "F32", {32, 64}, f32_zeros(32 * 64));
  writer.add("model.layers.0.self_attn.o_proj.weight", "F32", {64, 64}, f32_zeros(64 * 64));
  writer.add("model.layers.0.mlp.gate_proj.weight", "F32", {128, 64}, f32_zeros(128 * 64));
  writer.add("model.layers.0.mlp.up_proj.weight", "F32", {128, 64}, f32_zeros(128 * 64));
  writer.add("model.layers.0.mlp.down_proj.weight", "F32", {64, 128}, f32_zeros(128 * 64));
  return writer.bytes();
}

constexpr std::string_view kTinyHfConfig = R"({"model_type": "llama", "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
  "num_key_value_heads": 1, "vocab_size": 16, "tie_word_embeddings": true})";

TEST(ModelWeights, LoadsHfNormsAsStoredAndRefusesOtherDtypes) {
  TempDir dir;
  testing::write_text(dir / "config.json", kTinyHfConfig);
  testing::write_bytes(dir / "model.safetensors", tiny_hf_llama("F32"));
  Expected<ModelWeights> loaded = load_model(dir.path().string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->output_norm().type, TensorType::bf16);
  EXPECT_EQ(loaded->layers()[0].attn_norm.type, TensorType::f16);
  EXPECT_EQ(loaded->output().data, loaded->token_embedding().data);

  testing::write_bytes(dir / "model.safetensors", tiny_hf_llama("I64"));
  loaded = load_model(dir.path().string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message,
            (dir / "model.safetensors").string() +
                ": tensor 'model.layers.0.self_attn.q_proj.weight' type I64 is not supported here "
                "(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");
}

Expected<SafetensorsFile> parse_safetensors(std::vector<std::byte> bytes) {
  return SafetensorsFile::parse(MappedFile::from_bytes(std::move(bytes), "test.safetensors"));
}

TEST(SafetensorsFile, ValidatesTheHeader) {
  std::vector<std::byte> bytes = tiny_hf_llama("F32");
  Expected<SafetensorsFile> file = parse_safetensors(bytes);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->tensors().size(), 11u);
  const SafetensorsTensorInfo* norm = file->find_tensor("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dtype, "BF16");
  EXPECT_EQ(norm->bytes, 128u);

  const auto expect_error = [](std::vector<std::byte> data, std::string_view fragment) {
    Expected<SafetensorsFile> parsed = parse_safetensors(std::move(data));
    ASSERT_FALSE(parsed.ok()) << fragment;
    EXPECT_NE(parsed.error().message.find(fragment), std::string::npos) << parsed.error().message;
    EXPECT_EQ(parsed.error().message.rfind("test.safetensors: ", 0), 0u);
  };
  std::vector<std::byte> cut = bytes;
  cut.resize(cut.size() - 1);
  expect_error(cut, "tensor 'model.layers.0.mlp.down_proj.weight': data [");
  expect_error({}, "shorter than 8 bytes");
  std::vector<std::byte> long_header = bytes;
  const std::uint64_t huge = 1ull << 62;
  std::memcpy(long_header.data(), &huge, sizeof(huge));
  expect_error(long_header, "header length 4611686018427387904 exceeds file size");

  SafetensorsWriter unknown;
  unknown.add("x", "Q4", {2}, std::vector<std::byte>(2));
  expect_error(unknown.bytes(), "tensor 'x': unknown dtype 'Q4'");
  SafetensorsWriter mismatch;
  mismatch.add("x", "F32", {3}, std::vector<std::byte>(8));
  expect_error(mismatch.bytes(),
               "tensor 'x': data [0, 8) holds 8 bytes but shape and dtype F32 need 12");
  SafetensorsWriter float8;
  float8.add("x", "F8_E4M3", {4}, std::vector<std::byte>(4));
  file = parse_safetensors(float8.bytes());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_FALSE(file->find_tensor("x")->type);
}

TEST(SafetensorsCheckpoint, LoadsShardsFromTheIndex) {
  TERN_REQUIRE_SHARED(source, "models/random-qwen2-tiny");
  Expected<SafetensorsFile> original =
      SafetensorsFile::open((source / "model.safetensors").string());
  ASSERT_TRUE(original.ok()) << original.error().message;
  TempDir dir;
  std::filesystem::copy_file(source / "config.json", dir / "config.json");
  SafetensorsWriter shards[2];
  std::string weight_map;
  std::size_t index = 0;
  for (const SafetensorsTensorInfo& tensor : original->tensors()) {
    const int shard = index++ % 2;
    shards[shard].add(tensor.name, tensor.dtype, tensor.shape, {tensor.data, tensor.bytes});
    weight_map += (weight_map.empty() ? "" : ",") + ("\"" + tensor.name + "\":") + "\"model-0000" +
                  std::to_string(shard + 1) + "-of-00002.safetensors\"";
  }
  testing::write_bytes(dir / "model-00001-of-00002.safetensors", shards[0].bytes());
  testing::write_bytes(dir / "model-00002-of-00002.safetensors", shards[1].bytes());
  testing::write_text(dir / "model.safetensors.index.json",
                      R"({"metadata": {"total_size": 1}, "weight_map": {)" + weight_map + "}}");

  Expected<ModelWeights> loaded = load_model(dir.path().string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  Expected<ModelWeights> reference = load_model(source.string());
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  const LayerWeights& a = loaded->layers()[1];
  const LayerWeights& b = reference->layers()[1];
  EXPECT_EQ(std::memcmp(a.wq.data, b.wq.data, a.wq.rows * a.wq.row_bytes), 0);
  EXPECT_EQ(std::memcmp(a.bk->data, b.bk->data, a.bk->row_bytes), 0);
  EXPECT_EQ(std::memcmp(a.w_up.data, b.w_up.data, a.w_up.rows * a.w_up.row_bytes), 0);

  // A shard name that leaves the directory is refused.
  testing::write_text(dir / "model.safetensors.index.json",
                      R"({"weight_map": {"model.norm.weight": "../model.safetensors"}})");
  loaded = load_model(dir.path().string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("expected a file name in this directory"),
            std::string::npos)
      << loaded.error().message;
}

}  // namespace
}  // namespace tern::engine
