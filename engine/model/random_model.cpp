#include "engine/model/random_model.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/chat/chat_template.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/mapped_file.h"
#include "engine/tokenizer/byte_level.h"
#include "kernels/cpu/half.h"

namespace tern::engine {
namespace {

using kernels::TensorType;

// Every weight's standard deviation, as ../shared/tools/make_gguf.py's random models have it:
// with RMS norms before every matrix, activations stay of order one over any number of layers.
constexpr double kWeightStddev = 0.02;
// Uniform in [-a, a) has a standard deviation of a / sqrt(3).
constexpr float kUniformHalfWidth = static_cast<float>(kWeightStddev * 1.7320508075688772);
// The root mean square of a random Q8_0 quant (int8, -128..127) and of a random Q4_0 quant
// (nibble - 8, -8..7): the block scale that gives kWeightStddev is kWeightStddev over them.
constexpr double kQ8QuantRms = 73.902;  // sqrt(5461.5)
constexpr double kQ4QuantRms = 4.6368;  // sqrt(21.5)

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::int32_t kTypeNormal = 1;
constexpr std::int32_t kTypeControl = 3;
constexpr std::int32_t kTypeUnused = 5;

// SplitMix64's output function: word `index` of a stream is mix(key + (index + 1) * golden), so
// any word can be made without the ones before it, and threads need no shared generator state.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline std::uint64_t random_word(std::uint64_t key, std::uint64_t index) {
  return mix64(key + (index + 1) * 0x9e3779b97f4a7c15ULL);
}

// A tensor's key: the spec's seed and the tensor's name (FNV-1a), so adding a tensor to a shape
// changes no other tensor's weights.
std::uint64_t tensor_key(std::uint64_t seed, std::string_view name) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mix64(seed ^ hash);
}

// Blocks of a 2-byte F16 scale and kQuantBytes of quants (Q8_0: 32 int8; Q4_0: 16 bytes of
// nibbles): the quants are random bytes, the scale ±`scale` by one more random word.
template <std::size_t kQuantBytes>
void fill_quantized_blocks(std::span<std::byte> out, std::uint64_t key, double scale) {
  constexpr std::size_t kWords = kQuantBytes / 8;
  constexpr std::size_t kBlockBytes = 2 + kQuantBytes;
  const std::uint16_t positive = kernels::f32_to_f16(static_cast<float>(scale));
  const std::uint16_t negative = positive | 0x8000u;
  const std::size_t blocks = out.size() / kBlockBytes;
  std::byte* block = out.data();
  for (std::size_t b = 0; b < blocks; ++b, block += kBlockBytes) {
    const std::uint64_t first = b * (kWords + 1);
    std::uint64_t words[kWords];
    for (std::size_t w = 0; w < kWords; ++w) words[w] = random_word(key, first + w);
    const std::uint16_t d = (random_word(key, first + kWords) & 1) != 0 ? negative : positive;
    std::memcpy(block, &d, sizeof d);
    std::memcpy(block + 2, words, kQuantBytes);
  }
}

// Uniform in [-half_width, half_width): each random word gives 64 / kBits values of kBits bits,
// each the mantissa of a float in [1, 2), so no integer-to-float conversion or division is needed.
template <typename Element, int kBits, typename Convert>
void fill_uniform(std::span<std::byte> out, std::uint64_t key, float half_width, Convert convert) {
  static_assert(64 % kBits == 0);
  constexpr int kPerWord = 64 / kBits;
  constexpr std::uint64_t kMask = (1ULL << kBits) - 1;
  const float width = 2.0f * half_width;
  const auto value = [width, convert](std::uint64_t bits) {
    const auto mantissa =
        static_cast<std::uint32_t>(kBits >= 23 ? bits >> (kBits - 23) : bits << (23 - kBits));
    const float one_to_two = std::bit_cast<float>(0x3f800000u | mantissa);
    return convert((one_to_two - 1.5f) * width);
  };
  // The elements of a word are packed into one 64-bit store: narrow stores read back as one
  // word stall store-to-load forwarding (3 ns an element instead of under 1).
  using Bits = std::conditional_t<sizeof(Element) == 4, std::uint32_t, std::uint16_t>;
  static_assert(sizeof(Element) * 8 == kBits && sizeof(Bits) == sizeof(Element));
  const std::size_t count = out.size() / sizeof(Element);
  const std::size_t whole_words = count / kPerWord;
  if constexpr (kBits == 16) {
    // Every 16-bit input's element, converted once: a table lookup costs a quarter of the
    // conversion (F16's rounding branches above all).
    std::vector<std::uint16_t> table(1u << 16);
    for (std::uint32_t input = 0; input < table.size(); ++input) {
      table[input] = std::bit_cast<Bits>(value(input));
    }
    for (std::size_t word = 0; word < whole_words; ++word) {
      const std::uint64_t bits = random_word(key, word);
      const std::uint64_t packed = std::uint64_t{table[bits & 0xffff]} |
                                   std::uint64_t{table[(bits >> 16) & 0xffff]} << 16 |
                                   std::uint64_t{table[(bits >> 32) & 0xffff]} << 32 |
                                   std::uint64_t{table[bits >> 48]} << 48;
      std::memcpy(out.data() + word * sizeof packed, &packed, sizeof packed);
    }
  } else {
    for (std::size_t word = 0; word < whole_words; ++word) {
      std::uint64_t bits = random_word(key, word);
      std::uint64_t packed = 0;
      for (int k = 0; k < kPerWord; ++k, bits >>= kBits) {
        packed |= std::uint64_t{std::bit_cast<Bits>(value(bits & kMask))} << (k * kBits);
      }
      std::memcpy(out.data() + word * sizeof packed, &packed, sizeof packed);
    }
  }
  std::uint64_t bits = random_word(key, whole_words);
  for (std::size_t i = whole_words * kPerWord; i < count; ++i, bits >>= kBits) {
    const Element element = value(bits & kMask);
    std::memcpy(out.data() + i * sizeof(Element), &element, sizeof element);
  }
}

GgufWriter::TensorSource random_weights(TensorType type, std::uint64_t key) {
  return [type, key](std::span<std::byte> out) -> Status {
    switch (type) {
      case TensorType::q8_0:
        fill_quantized_blocks<32>(out, key, kWeightStddev / kQ8QuantRms);
        return Status::success();
      case TensorType::q4_0:
        fill_quantized_blocks<16>(out, key, kWeightStddev / kQ4QuantRms);
        return Status::success();
      case TensorType::f32:
        fill_uniform<float, 32>(out, key, kUniformHalfWidth, [](float v) { return v; });
        return Status::success();
      case TensorType::f16:
        fill_uniform<std::uint16_t, 16>(out, key, kUniformHalfWidth,
                                        [](float v) { return kernels::f32_to_f16(v); });
        return Status::success();
      case TensorType::bf16:
        fill_uniform<std::uint16_t, 16>(out, key, kUniformHalfWidth,
                                        [](float v) { return kernels::f32_to_bf16(v); });
        return Status::success();
      default:
        return Error{fmt::format("type {} has no random fill", kernels::tensor_type_name(type))};
    }
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

struct Vocabulary {
  std::string source;  // for the log line
  std::string pre;     // tokenizer.ggml.pre
  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  std::vector<std::string> merges;
  std::uint32_t end_of_text = 0;
};

// Pads with `[PAD<id>]` tokens up to `size`.
void pad(Vocabulary& vocabulary, int size) {
  for (auto id = static_cast<int>(vocabulary.tokens.size()); id < size; ++id) {
    vocabulary.tokens.push_back(fmt::format("[PAD{}]", id));
    vocabulary.types.push_back(kTypeUnused);
  }
}

// The GPT-2 vocabulary, its <|endoftext|> kept: trimmed, the first size - 1 tokens (the 256
// byte tokens come first) with <|endoftext|> last and only the merges among them.
Expected<Vocabulary> gpt2_vocabulary(const std::filesystem::path& path, int size) {
  Expected<GgufFile> file = GgufFile::open(path.string());
  if (!file) return file.error();
  const std::optional<GgufArray> tokens = file->get_array("tokenizer.ggml.tokens");
  const std::optional<GgufArray> merges = file->get_array("tokenizer.ggml.merges");
  const std::vector<std::string_view> texts =
      tokens ? tokens->strings() : std::vector<std::string_view>{};
  if (texts.empty() || !merges) return Error{path.string() + ": no tokens or merges"};
  Vocabulary vocabulary;
  vocabulary.source = path.string();
  vocabulary.pre = std::string(file->get_string("tokenizer.ggml.pre").value_or("gpt-2"));
  const auto kept = std::min<std::size_t>(texts.size(), static_cast<std::size_t>(size));
  for (std::size_t id = 0; id < kept; ++id) {
    if (texts[id] == kEndOfText) continue;
    if (vocabulary.tokens.size() + 1 == kept) break;  // the last place is <|endoftext|>'s
    vocabulary.tokens.emplace_back(texts[id]);
    vocabulary.types.push_back(kTypeNormal);
  }
  vocabulary.end_of_text = static_cast<std::uint32_t>(vocabulary.tokens.size());
  vocabulary.tokens.emplace_back(kEndOfText);
  vocabulary.types.push_back(kTypeControl);
  const std::unordered_set<std::string_view> present(vocabulary.tokens.begin(),
                                                     vocabulary.tokens.end());
  for (const std::string_view merge : merges->strings()) {
    const std::size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos) continue;
    const std::string joined = std::string(merge.substr(0, space)).append(merge.substr(space + 1));
    if (present.contains(merge.substr(0, space)) && present.contains(merge.substr(space + 1)) &&
        present.contains(joined)) {
      vocabulary.merges.emplace_back(merge);
    }
  }
  pad(vocabulary, size);
  return vocabulary;
}

// The demo model's byte-level vocabulary: 256 byte tokens and <|endoftext|>, no merges.
Vocabulary byte_level_vocabulary(int size) {
  Vocabulary vocabulary;
  vocabulary.source = "byte-level";
  vocabulary.pre = "default";
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::instance();
  for (int byte = 0; byte < 256; ++byte) {
    vocabulary.tokens.emplace_back(alphabet.encode(static_cast<std::uint8_t>(byte)));
    vocabulary.types.push_back(kTypeNormal);
  }
  vocabulary.end_of_text = 256;
  vocabulary.tokens.emplace_back(kEndOfText);
  vocabulary.types.push_back(kTypeControl);
  pad(vocabulary, size);
  return vocabulary;
}

Expected<Vocabulary> vocabulary_of_size(int size) {
  const std::filesystem::path path = random_model_vocabulary_path();
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    spdlog::info("random model: {} is absent, so the vocabulary is byte-level", path.string());
    return byte_level_vocabulary(size);
  }
  return gpt2_vocabulary(path, size);
}

void add_architecture_keys(GgufWriter& writer, const RandomModelSpec& spec) {
  const RandomModelShape& shape = *spec.shape;
  const std::string arch(shape.architecture());
  const auto key = [&arch](std::string_view suffix) { return fmt::format("{}.{}", arch, suffix); };
  writer.add_string("general.architecture", arch);
  // The spec in one spelling, so random:tiny:Q8_0 and random:tiny:q8_0:0 are the same bytes.
  std::string type(kernels::tensor_type_name(spec.type));
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  writer.add_string("general.name",
                    fmt::format("random:{}:{}:{} (random weights)", shape.name, type, spec.seed));
  writer.add_uint32("general.file_type", gguf_file_type(spec.type));
  writer.add_uint32(key("vocab_size"), static_cast<std::uint32_t>(shape.vocab));
  writer.add_uint32(key("context_length"), static_cast<std::uint32_t>(shape.context));
  writer.add_uint32(key("embedding_length"), static_cast<std::uint32_t>(shape.hidden));
  writer.add_uint32(key("block_count"), static_cast<std::uint32_t>(shape.layers));
  writer.add_uint32(key("feed_forward_length"), static_cast<std::uint32_t>(shape.ffn));
  writer.add_uint32(key("attention.head_count"), static_cast<std::uint32_t>(shape.heads));
  writer.add_uint32(key("attention.head_count_kv"), static_cast<std::uint32_t>(shape.kv_heads));
  writer.add_float32(key("rope.freq_base"), shape.rope_theta);
  writer.add_float32(key("attention.layer_norm_rms_epsilon"), shape.rms_norm_eps);
  const RandomLatentShape& latent = shape.latent;
  if (latent.kv_lora > 0) {
    writer.add_uint32(key("rope.dimension_count"), static_cast<std::uint32_t>(latent.rope));
    writer.add_uint32(key("attention.key_length"),
                      static_cast<std::uint32_t>(latent.nope + latent.rope));
    writer.add_uint32(key("attention.value_length"), static_cast<std::uint32_t>(latent.value));
    if (latent.q_lora > 0) {
      writer.add_uint32(key("attention.q_lora_rank"), static_cast<std::uint32_t>(latent.q_lora));
    }
    writer.add_uint32(key("attention.kv_lora_rank"), static_cast<std::uint32_t>(latent.kv_lora));
  } else {
    writer.add_uint32(key("rope.dimension_count"), static_cast<std::uint32_t>(shape.head_dim));
  }
  const RandomExpertShape& experts = shape.experts;
  if (experts.count == 0) return;
  writer.add_uint32(key("expert_count"), static_cast<std::uint32_t>(experts.count));
  writer.add_uint32(key("expert_used_count"), static_cast<std::uint32_t>(experts.used));
  writer.add_uint32(key("expert_feed_forward_length"), static_cast<std::uint32_t>(experts.ffn));
  if (experts.shared > 0) {
    writer.add_uint32(key("expert_shared_count"), static_cast<std::uint32_t>(experts.shared));
  }
  if (experts.leading_dense > 0) {
    writer.add_uint32(key("leading_dense_block_count"),
                      static_cast<std::uint32_t>(experts.leading_dense));
  }
  if (shape.architecture() == "deepseek2") {  // llama.cpp's llama reads none of these
    writer.add_float32(key("expert_weights_scale"), experts.weight_scale);
    writer.add_bool(key("expert_weights_norm"), experts.normalize_weights);
    writer.add_uint32(key("expert_gating_func"), experts.sigmoid_scores ? 2 : 1);
    writer.add_uint32(key("expert_group_count"), static_cast<std::uint32_t>(experts.groups));
    writer.add_uint32(key("expert_group_used_count"),
                      static_cast<std::uint32_t>(experts.groups_used));
  }
}

void add_vocabulary_keys(GgufWriter& writer, const Vocabulary& vocabulary) {
  writer.add_string("tokenizer.ggml.model", "gpt2");
  writer.add_string("tokenizer.ggml.pre", vocabulary.pre);
  writer.add_string_array("tokenizer.ggml.tokens", vocabulary.tokens);
  writer.add_int32_array("tokenizer.ggml.token_type", vocabulary.types);
  if (!vocabulary.merges.empty()) {
    writer.add_string_array("tokenizer.ggml.merges", vocabulary.merges);
  }
  writer.add_uint32("tokenizer.ggml.bos_token_id", vocabulary.end_of_text);
  writer.add_uint32("tokenizer.ggml.eos_token_id", vocabulary.end_of_text);
  writer.add_bool("tokenizer.ggml.add_bos_token", false);
  // The server's fallback, stated, so chat requests (tern-loadgen's) need no warning at startup;
  // its markers are plain text to these vocabularies.
  writer.add_string("tokenizer.chat_template", chat::chatml_fallback_template());
}

// The tensors in llama.cpp's names and GGML shapes ({row length, rows[, experts]}).
Status add_tensors(GgufWriter& writer, const RandomModelSpec& spec) {
  const RandomModelShape& shape = *spec.shape;
  const std::int64_t hidden = shape.hidden;
  Status status;
  const auto matrix = [&](const std::string& name, std::vector<std::int64_t> dims) {
    if (status) {
      status = writer.add_tensor(name, spec.type, std::move(dims),
                                 random_weights(spec.type, tensor_key(spec.seed, name)));
    }
  };
  const auto norm = [&](const std::string& name, std::int64_t length) {
    if (status) status = writer.add_tensor(name, TensorType::f32, {length}, filled_f32(1.0f));
  };
  const auto f32 = [&](const std::string& name, std::vector<std::int64_t> dims) {
    if (status) {
      status = writer.add_tensor(name, TensorType::f32, std::move(dims),
                                 random_weights(TensorType::f32, tensor_key(spec.seed, name)));
    }
  };
  matrix("token_embd.weight", {hidden, shape.vocab});
  const RandomLatentShape& latent = shape.latent;
  const RandomExpertShape& experts = shape.experts;
  for (int layer = 0; layer < shape.layers; ++layer) {
    const auto name = [layer](std::string_view part) {
      return fmt::format("blk.{}.{}", layer, part);
    };
    norm(name("attn_norm.weight"), hidden);
    if (latent.kv_lora > 0) {
      const std::int64_t query = std::int64_t{shape.heads} * (latent.nope + latent.rope);
      if (latent.q_lora > 0) {
        matrix(name("attn_q_a.weight"), {hidden, latent.q_lora});
        norm(name("attn_q_a_norm.weight"), latent.q_lora);
        matrix(name("attn_q_b.weight"), {latent.q_lora, query});
      } else {
        matrix(name("attn_q.weight"), {hidden, query});
      }
      matrix(name("attn_kv_a_mqa.weight"), {hidden, latent.kv_lora + latent.rope});
      norm(name("attn_kv_a_norm.weight"), latent.kv_lora);
      matrix(name("attn_kv_b.weight"),
             {latent.kv_lora, std::int64_t{shape.heads} * (latent.nope + latent.value)});
      matrix(name("attn_output.weight"), {std::int64_t{shape.heads} * latent.value, hidden});
    } else {
      const std::int64_t query = std::int64_t{shape.heads} * shape.head_dim;
      const std::int64_t kv = std::int64_t{shape.kv_heads} * shape.head_dim;
      matrix(name("attn_q.weight"), {hidden, query});
      matrix(name("attn_k.weight"), {hidden, kv});
      matrix(name("attn_v.weight"), {hidden, kv});
      matrix(name("attn_output.weight"), {query, hidden});
    }
    norm(name("ffn_norm.weight"), hidden);
    if (!shape.is_moe_layer(layer)) {
      matrix(name("ffn_gate.weight"), {hidden, shape.ffn});
      matrix(name("ffn_up.weight"), {hidden, shape.ffn});
      matrix(name("ffn_down.weight"), {shape.ffn, hidden});
      continue;
    }
    f32(name("ffn_gate_inp.weight"), {hidden, experts.count});
    if (experts.sigmoid_scores && status) {
      status = writer.add_tensor(name("exp_probs_b.bias"), TensorType::f32, {experts.count},
                                 filled_f32(0.0f));
    }
    matrix(name("ffn_gate_exps.weight"), {hidden, experts.ffn, experts.count});
    matrix(name("ffn_up_exps.weight"), {hidden, experts.ffn, experts.count});
    matrix(name("ffn_down_exps.weight"), {experts.ffn, hidden, experts.count});
    if (experts.shared > 0) {
      const std::int64_t shared_ffn = std::int64_t{experts.shared} * experts.ffn;
      matrix(name("ffn_gate_shexp.weight"), {hidden, shared_ffn});
      matrix(name("ffn_up_shexp.weight"), {hidden, shared_ffn});
      matrix(name("ffn_down_shexp.weight"), {shared_ffn, hidden});
    }
  }
  norm("output_norm.weight", hidden);
  matrix("output.weight", {hidden, shape.vocab});
  return status;
}

std::optional<std::uint64_t> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

double gib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(1ULL << 30);
}

}  // namespace

std::filesystem::path random_model_vocabulary_path() {
  const char* shared = std::getenv("TERN_SHARED_DIR");
  const std::filesystem::path directory =
      shared != nullptr && *shared != '\0' ? std::filesystem::path(shared) : "../shared";
  return directory / "vocab" / "ggml-vocab-gpt-2.gguf";
}

Expected<GgufFile> make_random_model_gguf(const RandomModelSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  const auto fail = [&spec](const std::string& reason) {
    return Error{fmt::format("{}: {}", spec.text, reason)};
  };
  Expected<Vocabulary> vocabulary = vocabulary_of_size(spec.shape->vocab);
  if (!vocabulary) return fail(vocabulary.error().message);
  GgufWriter writer;
  add_architecture_keys(writer, spec);
  add_vocabulary_keys(writer, *vocabulary);
  if (Status added = add_tensors(writer, spec); !added) return fail(added.message());

  const std::uint64_t bytes = writer.file_bytes();
  if (const std::optional<std::uint64_t> available = available_memory_bytes();
      available && bytes > *available) {
    return fail(fmt::format(
        "needs {:.1f} GiB of memory for its weights, but this machine has {:.1f} GiB available",
        gib(bytes), gib(*available)));
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  Expected<MappedFile> memory = MappedFile::from_filled_memory(
      bytes, spec.text,
      [&](std::span<std::byte> out) { return writer.write_to_memory(out, threads); });
  if (!memory) return fail(memory.error().message);
  Expected<GgufFile> gguf = GgufFile::parse(std::move(*memory));
  if (!gguf) return gguf.error();
  spdlog::info("made {} ({}, {} vocabulary, seed {}): {:.2f} GiB in {:.2f} s on {} threads",
               spec.text, spec.shape->about, vocabulary->source, spec.seed, gib(bytes),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               threads);
  return gguf;
}

Expected<GgufFile> make_random_model_vocabulary(int vocab_size) {
  Expected<Vocabulary> vocabulary = vocabulary_of_size(vocab_size);
  if (!vocabulary) return vocabulary.error();
  GgufWriter writer;
  add_vocabulary_keys(writer, *vocabulary);
  const std::string name = fmt::format("random model vocabulary of {} tokens", vocab_size);
  Expected<MappedFile> memory = MappedFile::from_filled_memory(
      writer.file_bytes(), name,
      [&](std::span<std::byte> out) { return writer.write_to_memory(out, 1); });
  if (!memory) return memory.error();
  return GgufFile::parse(std::move(*memory));
}

}  // namespace tern::engine
