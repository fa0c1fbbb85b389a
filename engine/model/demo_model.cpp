#include "engine/model/demo_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "engine/chat/chat_template.h"
#include "engine/model/gguf_writer.h"
#include "engine/tokenizer/byte_level.h"

namespace tern::engine {
namespace {

constexpr int kLayers = 4;
constexpr int kHidden = 128;
constexpr int kHeads = 4;
constexpr int kFfn = 384;
constexpr int kContext = 2048;
constexpr int kByteTokens = 256;
constexpr int kEndOfText = 256;
constexpr int kImStart = 257;
constexpr int kImEnd = 258;
constexpr int kVocab = 259;
// Hidden dimension 0 of every token embedding is a constant; after RMS norm it stays a large
// positive value, which the output projection reads as a per-token preference.
constexpr float kBiasDimension = 1.0f;

// Box-Muller over mt19937's raw output, which the standard fixes, so the file is the same on
// every standard library (std::normal_distribution is not).
class SeededNormal {
 public:
  explicit SeededNormal(std::uint32_t seed) : engine_(seed) {}
  float next(float stddev) {
    const double u1 = (static_cast<double>(engine_()) + 1.0) / 4294967297.0;
    const double u2 = static_cast<double>(engine_()) / 4294967296.0;
    return static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(6.283185307179586 * u2));
  }

 private:
  std::mt19937 engine_;
};

// How much the model likes each token: letters and spaces most, then other printable ASCII,
// then the end of a turn (so answers end now and then); everything else almost never.
float preference(int token) {
  if (token == ' ') return 0.68f;
  if (token >= 'a' && token <= 'z') return 0.55f;
  if ((token >= 'A' && token <= 'Z') || token == '.' || token == ',') return 0.42f;
  if (token == '\n') return 0.35f;
  if (token == kImEnd) return 0.30f;
  if (token >= 0x21 && token < 0x7F) return 0.25f;
  return -0.5f;
}

GgufWriter::TensorSource random_f32(std::uint32_t seed, float stddev) {
  return [seed, stddev](std::span<std::byte> out) -> Status {
    SeededNormal normal(seed);
    for (std::size_t i = 0; i + sizeof(float) <= out.size(); i += sizeof(float)) {
      const float value = normal.next(stddev);
      std::memcpy(out.data() + i, &value, sizeof value);
    }
    return Status::success();
  };
}

GgufWriter::TensorSource filled_f32(float fill) {
  return [fill](std::span<std::byte> out) -> Status {
    for (std::size_t i = 0; i + sizeof(float) <= out.size(); i += sizeof(float)) {
      std::memcpy(out.data() + i, &fill, sizeof fill);
    }
    return Status::success();
  };
}

// Rows of `rows_count` x kHidden floats: random, with dimension 0 set by `first`.
GgufWriter::TensorSource rows_with_first(std::uint32_t seed, float stddev, float (*first)(int)) {
  return [seed, stddev, first](std::span<std::byte> out) -> Status {
    SeededNormal normal(seed);
    const std::size_t count = out.size() / sizeof(float);
    for (std::size_t i = 0; i < count; ++i) {
      const int row = static_cast<int>(i / kHidden);
      const float value = i % kHidden == 0 ? first(row) : normal.next(stddev);
      std::memcpy(out.data() + i * sizeof(float), &value, sizeof value);
    }
    return Status::success();
  };
}

}  // namespace

Status write_demo_model(const std::string& path) {
  GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_string("general.name", "tern demo (random weights)");
  writer.add_uint32("llama.block_count", kLayers);
  writer.add_uint32("llama.embedding_length", kHidden);
  writer.add_uint32("llama.feed_forward_length", kFfn);
  writer.add_uint32("llama.attention.head_count", kHeads);
  writer.add_uint32("llama.attention.head_count_kv", kHeads);
  writer.add_uint32("llama.context_length", kContext);
  writer.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  writer.add_float32("llama.rope.freq_base", 10000.0f);
  writer.add_uint32("llama.vocab_size", kVocab);

  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::instance();
  for (int byte = 0; byte < kByteTokens; ++byte) {
    tokens.emplace_back(alphabet.encode(static_cast<std::uint8_t>(byte)));
    types.push_back(1);  // normal
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.emplace_back(special);
    types.push_back(3);  // control
  }
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", "default");
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  writer.add_int32_array("tokenizer.ggml.token_type", types);
  writer.add_uint32("tokenizer.ggml.bos_token_id", kEndOfText);
  writer.add_uint32("tokenizer.ggml.eos_token_id", kImEnd);
  writer.add_uint32("tokenizer.ggml.eot_token_id", kEndOfText);
  writer.add_bool("tokenizer.ggml.add_bos_token", false);
  writer.add_string("tokenizer.chat_template", chat::chatml_fallback_template());

  const float stddev = 0.02f;
  std::uint32_t seed = 20240601;
  auto add = [&](std::string name, std::vector<std::int64_t> shape,
                 GgufWriter::TensorSource source) -> Status {
    return writer.add_tensor(name, kernels::TensorType::f32, std::move(shape), std::move(source));
  };
  Status status = add("token_embd.weight", {kHidden, kVocab},
                      rows_with_first(seed++, stddev, [](int) { return kBiasDimension; }));
  if (status) status = add("output_norm.weight", {kHidden}, filled_f32(1.0f));
  if (status)
    status = add("output.weight", {kHidden, kVocab}, rows_with_first(seed++, 0.08f, preference));
  for (int layer = 0; status && layer < kLayers; ++layer) {
    auto name = [layer](std::string_view part) { return fmt::format("blk.{}.{}", layer, part); };
    if (status) status = add(name("attn_norm.weight"), {kHidden}, filled_f32(1.0f));
    if (status) status = add(name("ffn_norm.weight"), {kHidden}, filled_f32(1.0f));
    for (const char* part :
         {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"}) {
      if (status) status = add(name(part), {kHidden, kHidden}, random_f32(seed++, stddev));
    }
    if (status) status = add(name("ffn_gate.weight"), {kHidden, kFfn}, random_f32(seed++, stddev));
    if (status) status = add(name("ffn_up.weight"), {kHidden, kFfn}, random_f32(seed++, stddev));
    if (status) status = add(name("ffn_down.weight"), {kFfn, kHidden}, random_f32(seed++, stddev));
  }
  if (!status) return status;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code ignored;
    std::filesystem::create_directories(target.parent_path(), ignored);
  }
  // Written beside the target and renamed, so a reader never sees half a model.
  const std::string partial = path + ".partial";
  if (Status written = writer.write(partial); !written) return written;
  std::error_code error;
  std::filesystem::rename(partial, target, error);
  if (error) return Error{fmt::format("{}: cannot rename into place: {}", path, error.message())};
  return Status::success();
}

}  // namespace tern::engine
