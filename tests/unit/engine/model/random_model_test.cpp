// Random models by shape and type (`--model random:SHAPE:TYPE[:SEED]`): the spec, the shape
// table, and the GGUF made in memory.
#include "engine/model/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include <fmt/format.h>

#include "engine/model/model_weights.h"
#include "engine/model/random_model_spec.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/half.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

using kernels::TensorType;

// Points the vocabulary lookup at ../shared (as the tests find it) or at nothing, and puts the
// environment back afterwards.
class SharedDirectory {
 public:
  explicit SharedDirectory(const std::string& directory) {
    if (const char* old = std::getenv("TERN_SHARED_DIR")) old_ = old;
    ::setenv("TERN_SHARED_DIR", directory.c_str(), 1);
  }
  ~SharedDirectory() {
    if (old_) {
      ::setenv("TERN_SHARED_DIR", old_->c_str(), 1);
    } else {
      ::unsetenv("TERN_SHARED_DIR");
    }
  }
  SharedDirectory(const SharedDirectory&) = delete;
  SharedDirectory& operator=(const SharedDirectory&) = delete;

 private:
  std::optional<std::string> old_;
};

RandomModelSpec spec_of(std::string_view text) {
  Expected<RandomModelSpec> spec = parse_random_model_spec(text);
  EXPECT_TRUE(spec.ok()) << spec.error().message;
  return spec.ok() ? *spec : RandomModelSpec{};
}

std::uint64_t fnv1a(std::span<const std::byte> bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const std::byte b : bytes)
    hash = (hash ^ std::to_integer<std::uint64_t>(b)) * 0x100000001b3ULL;
  return hash;
}

TEST(RandomModelSpec, ParsesShapeTypeAndSeed) {
  const RandomModelSpec spec = spec_of("random:llama-3-8b:q4_0");
  ASSERT_NE(spec.shape, nullptr);
  EXPECT_EQ(spec.shape->name, "llama-3-8b");
  EXPECT_EQ(spec.type, TensorType::q4_0);
  EXPECT_EQ(spec.seed, 0u);
  EXPECT_EQ(spec.text, "random:llama-3-8b:q4_0");

  const RandomModelSpec seeded = spec_of("random:tiny:BF16:18446744073709551615");
  ASSERT_NE(seeded.shape, nullptr);
  EXPECT_EQ(seeded.shape->name, "tiny");
  EXPECT_EQ(seeded.type, TensorType::bf16);
  EXPECT_EQ(seeded.seed, 18446744073709551615ULL);
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "Q8_0"}) {
    EXPECT_TRUE(parse_random_model_spec(std::string("random:tiny:") + type).ok()) << type;
  }
  EXPECT_TRUE(is_random_model_spec("random:tiny:f32"));
  EXPECT_FALSE(is_random_model_spec("models/random.gguf"));
  EXPECT_FALSE(is_random_model_spec("demo"));
}

TEST(RandomModelSpec, ErrorsNameTheSpecAndListWhatIsKnown) {
  const auto error_of = [](std::string_view text) {
    Expected<RandomModelSpec> spec = parse_random_model_spec(text);
    EXPECT_FALSE(spec.ok()) << text;
    return spec.ok() ? std::string() : spec.error().message;
  };
  const std::string shape = error_of("random:llama-9b:q4_0");
  EXPECT_NE(shape.find("random model 'random:llama-9b:q4_0'"), std::string::npos) << shape;
  EXPECT_NE(shape.find("unknown shape 'llama-9b'"), std::string::npos) << shape;
  for (const RandomModelShape& known : random_model_shapes()) {
    EXPECT_NE(shape.find(known.name), std::string::npos) << known.name << ": " << shape;
  }
  const std::string type = error_of("random:tiny:q5_0");
  EXPECT_NE(type.find("unknown type 'q5_0' (known: f32, f16, bf16, q8_0, q4_0)"), std::string::npos)
      << type;
  EXPECT_NE(error_of("random:tiny:q4_k").find("unknown type 'q4_k'"), std::string::npos);
  for (const char* malformed : {"random:", "random:tiny", "random:tiny:q4_0:1:2"}) {
    const std::string message = error_of(malformed);
    EXPECT_NE(message.find("expected random:SHAPE:TYPE[:SEED]"), std::string::npos) << message;
    EXPECT_NE(message.find("llama-3-8b"), std::string::npos) << message;
  }
  for (const char* seed : {"random:tiny:q4_0:-1", "random:tiny:q4_0:x",
                           "random:tiny:q4_0:", "random:tiny:q4_0:99999999999999999999"}) {
    EXPECT_NE(error_of(seed).find("is not a non-negative integer"), std::string::npos) << seed;
  }
}

TEST(RandomModelShapes, HaveTheNamedModelsNumbers) {
  const RandomModelShape* llama3 = find_random_model_shape("llama-3-8b");
  ASSERT_NE(llama3, nullptr);
  EXPECT_EQ(llama3->hidden, 4096);
  EXPECT_EQ(llama3->layers, 32);
  EXPECT_EQ(llama3->heads, 32);
  EXPECT_EQ(llama3->kv_heads, 8);
  EXPECT_EQ(llama3->head_dim, 128);
  EXPECT_EQ(llama3->ffn, 14336);
  EXPECT_EQ(llama3->vocab, 128256);
  EXPECT_EQ(llama3->rope_theta, 500000.0f);
  // Meta's published parameter counts.
  EXPECT_EQ(parameter_count(*llama3), 8030261248u);
  const RandomModelShape* mixtral = find_random_model_shape("mixtral-8x7b");
  ASSERT_NE(mixtral, nullptr);
  EXPECT_EQ(parameter_count(*mixtral), 46702792704u);

  // ../shared/tools/make_gguf.py's SHAPES and MOE_SHAPES, with its GPT-2 vocabulary.
  struct MakeGguf {
    const char* name;
    int hidden, layers, heads, kv_heads, ffn, experts, used;
  };
  for (const MakeGguf& expected : {MakeGguf{"llama-110m", 768, 12, 12, 12, 2048, 0, 0},
                                   MakeGguf{"llama-1b", 2048, 16, 32, 8, 8192, 0, 0},
                                   MakeGguf{"llama-3b", 3072, 28, 24, 8, 8192, 0, 0},
                                   MakeGguf{"moe-1.4b-a0.3b", 1024, 16, 16, 4, 768, 32, 4}}) {
    const RandomModelShape* shape = find_random_model_shape(expected.name);
    ASSERT_NE(shape, nullptr) << expected.name;
    EXPECT_EQ(shape->hidden, expected.hidden) << expected.name;
    EXPECT_EQ(shape->layers, expected.layers) << expected.name;
    EXPECT_EQ(shape->heads, expected.heads) << expected.name;
    EXPECT_EQ(shape->kv_heads, expected.kv_heads) << expected.name;
    EXPECT_EQ(shape->head_dim, expected.hidden / expected.heads) << expected.name;
    EXPECT_EQ(expected.experts > 0 ? shape->experts.ffn : shape->ffn, expected.ffn)
        << expected.name;
    EXPECT_EQ(shape->experts.count, expected.experts) << expected.name;
    EXPECT_EQ(shape->experts.used, expected.used) << expected.name;
    EXPECT_EQ(shape->vocab, 50257) << expected.name;
    EXPECT_EQ(shape->context, 4096) << expected.name;
    EXPECT_EQ(shape->rope_theta, 500000.0f) << expected.name;
  }
}

// Every shape can be made in every type: Q8_0 and Q4_0 need rows of whole 32-element blocks, and
// a vocabulary holds the byte tokens and <|endoftext|>.
TEST(RandomModelShapes, AreValidForEveryType) {
  std::set<std::string_view> names;
  for (const RandomModelShape& shape : random_model_shapes()) {
    SCOPED_TRACE(shape.name);
    EXPECT_TRUE(names.insert(shape.name).second) << "twice";
    EXPECT_FALSE(shape.about.empty());
    EXPECT_GE(shape.vocab, 257);
    EXPECT_GT(shape.context, 0);
    EXPECT_GT(shape.layers, 0);
    std::vector<int> row_lengths{shape.hidden, shape.ffn};
    if (shape.latent.kv_lora > 0) {
      EXPECT_EQ(shape.architecture(), "deepseek2");
      EXPECT_EQ(shape.head_dim, shape.latent.nope + shape.latent.rope);
      EXPECT_EQ(shape.kv_heads, shape.heads);
      row_lengths.insert(row_lengths.end(),
                         {shape.latent.kv_lora, shape.heads * shape.latent.value});
      if (shape.latent.q_lora > 0) row_lengths.push_back(shape.latent.q_lora);
    } else {
      EXPECT_EQ(shape.architecture(), "llama");
      EXPECT_EQ(shape.heads % shape.kv_heads, 0);
      row_lengths.push_back(shape.heads * shape.head_dim);
    }
    if (shape.experts.count > 0) {
      row_lengths.push_back(shape.experts.ffn);
      EXPECT_LE(shape.experts.used, shape.experts.count);
      EXPECT_EQ(shape.experts.count % shape.experts.groups, 0);
      EXPECT_LE(shape.experts.groups_used, shape.experts.groups);
      EXPECT_LE(shape.experts.used,
                shape.experts.groups_used * (shape.experts.count / shape.experts.groups));
    }
    for (const int length : row_lengths) {
      EXPECT_GT(length, 0);
      EXPECT_EQ(length % 32, 0) << length;
    }
  }
}

// The made file holds the shape: its config, and as many parameters as the shape says.
TEST(RandomModel, EveryTinyShapeAndTypeLoadsWithTheShapesParameters) {
  const SharedDirectory shared(::tern::testing::shared_dir().string());
  for (const char* shape : {"tiny", "tiny-moe", "tiny-mla"}) {
    for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
      const std::string text = fmt::format("random:{}:{}", shape, type);
      SCOPED_TRACE(text);
      const RandomModelSpec spec = spec_of(text);
      Expected<GgufFile> gguf = make_random_model_gguf(spec);
      ASSERT_TRUE(gguf.ok()) << gguf.error().message;
      EXPECT_EQ(gguf->path(), text);
      std::uint64_t elements = 0;
      for (const GgufTensorInfo& tensor : gguf->tensors()) {
        elements += static_cast<std::uint64_t>(tensor.elements());
        const bool vector = tensor.shape.size() == 1;
        const bool router = tensor.name.find("ffn_gate_inp") != std::string::npos;
        EXPECT_EQ(tensor.type, vector || router ? TensorType::f32 : spec.type) << tensor.name;
      }
      EXPECT_EQ(elements, parameter_count(*spec.shape));
      Expected<ModelWeights> weights = load_gguf_model(std::move(*gguf));
      ASSERT_TRUE(weights.ok()) << weights.error().message;
      const ModelConfig& config = weights->config();
      EXPECT_EQ(config.architecture, spec.shape->architecture());
      EXPECT_EQ(config.hidden_size, spec.shape->hidden);
      EXPECT_EQ(config.n_layers, spec.shape->layers);
      EXPECT_EQ(config.n_heads, spec.shape->heads);
      EXPECT_EQ(config.head_dim, spec.shape->head_dim);
      EXPECT_EQ(config.vocab_size, spec.shape->vocab);
      EXPECT_EQ(config.context_length, spec.shape->context);
      EXPECT_EQ(config.moe.n_experts, spec.shape->experts.count);
      EXPECT_EQ(config.latent.kv_lora_rank, spec.shape->latent.kv_lora);
      EXPECT_FALSE(config.tied_embeddings);
    }
  }
}

TEST(RandomModel, TheSameSpecGivesTheSameBytesAndAnotherSeedOthers) {
  const SharedDirectory shared(::tern::testing::shared_dir().string());
  const auto hash_of = [](std::string_view text) -> std::uint64_t {
    Expected<GgufFile> gguf = make_random_model_gguf(spec_of(text));
    EXPECT_TRUE(gguf.ok()) << gguf.error().message;
    return gguf.ok() ? fnv1a(gguf->bytes()) : 0;
  };
  for (const char* text : {"random:tiny:q8_0", "random:tiny:q4_0", "random:tiny:f16"}) {
    EXPECT_EQ(hash_of(text), hash_of(text)) << text;
  }
  EXPECT_NE(hash_of("random:tiny:q8_0"), hash_of("random:tiny:q8_0:1"));
  EXPECT_EQ(hash_of("random:tiny:q8_0"), hash_of("random:tiny:q8_0:0"));
  EXPECT_EQ(hash_of("random:tiny:q8_0"), hash_of("random:tiny:Q8_0"));
}

// Weights have a standard deviation of about 0.02, whatever the type, and no sign bias.
TEST(RandomModel, WeightsHaveTheChosenSpread) {
  const SharedDirectory shared(::tern::testing::shared_dir().string());
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
    SCOPED_TRACE(type);
    const RandomModelSpec spec = spec_of(fmt::format("random:tiny:{}", type));
    Expected<GgufFile> gguf = make_random_model_gguf(spec);
    ASSERT_TRUE(gguf.ok()) << gguf.error().message;
    const GgufTensorInfo* tensor = gguf->find_tensor("blk.0.ffn_up.weight");
    ASSERT_NE(tensor, nullptr);
    std::vector<float> values;
    const std::byte* data = tensor->data;
    const auto count = static_cast<std::size_t>(tensor->elements());
    const auto half = [&](std::size_t offset) {
      std::uint16_t bits;
      std::memcpy(&bits, data + offset, sizeof bits);
      return bits;
    };
    for (std::size_t i = 0; i < count; ++i) {
      switch (spec.type) {
        case TensorType::f32: {
          float value;
          std::memcpy(&value, data + i * 4, sizeof value);
          values.push_back(value);
          break;
        }
        case TensorType::f16:
          values.push_back(kernels::f16_to_f32(half(i * 2)));
          break;
        case TensorType::bf16:
          values.push_back(kernels::bf16_to_f32(half(i * 2)));
          break;
        case TensorType::q8_0: {
          const std::size_t block = i / 32 * 34;
          const auto quant =
              static_cast<std::int8_t>(std::to_integer<int>(data[block + 2 + i % 32]));
          values.push_back(kernels::f16_to_f32(half(block)) * static_cast<float>(quant));
          break;
        }
        case TensorType::q4_0: {
          const std::size_t block = i / 32 * 18;
          const int byte = std::to_integer<int>(data[block + 2 + i % 16]);
          const int nibble = i % 32 < 16 ? byte & 15 : byte >> 4;
          values.push_back(kernels::f16_to_f32(half(block)) * static_cast<float>(nibble - 8));
          break;
        }
        default:
          FAIL();
      }
    }
    double sum = 0, squares = 0;
    for (const float value : values) {
      ASSERT_TRUE(std::isfinite(value));
      sum += value;
      squares += static_cast<double>(value) * value;
    }
    const double mean = sum / static_cast<double>(values.size());
    const double stddev = std::sqrt(squares / static_cast<double>(values.size()) - mean * mean);
    EXPECT_NEAR(stddev, 0.02, 0.002);
    EXPECT_NEAR(mean, 0.0, 0.001);
  }
}

TEST(RandomModel, TakesTheGpt2VocabularyPaddedOrTrimmedToTheShape) {
  const SharedDirectory shared(::tern::testing::shared_dir().string());
  TERN_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(random_model_vocabulary_path(), vocab_path);
  Expected<GgufFile> gguf = make_random_model_gguf(spec_of("random:tiny:q8_0"));
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  EXPECT_EQ(gguf->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(gguf->get_array("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(gguf->get_int("tokenizer.ggml.eos_token_id"), 511);
  EXPECT_TRUE(gguf->get_string("tokenizer.chat_template").has_value());  // ChatML, stated
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  const std::vector<std::int32_t> ids = (*tokenizer)->encode("Hello world, hello!", false);
  ASSERT_FALSE(ids.empty());
  for (const std::int32_t id : ids) EXPECT_LT(id, 511);
  EXPECT_EQ((*tokenizer)->decode(ids, false), "Hello world, hello!");
  EXPECT_EQ((*tokenizer)->encode("<|endoftext|>", false), std::vector<std::int32_t>{511});
}

// Padded (llama-3-8b's 128256): GPT-2's ids are kept, so text encodes as GPT-2 encodes it, and
// the padding tokens, which text never makes, decode to their names.
TEST(RandomModel, PadsTheGpt2VocabularyKeepingItsIds) {
  const SharedDirectory shared(::tern::testing::shared_dir().string());
  TERN_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  Expected<GgufFile> vocab_file = GgufFile::open(vocab_path.string());
  ASSERT_TRUE(vocab_file.ok());
  auto gpt2 = Tokenizer::from_gguf(*vocab_file);
  ASSERT_TRUE(gpt2.ok());
  Expected<GgufFile> gguf = make_random_model_vocabulary(128256);
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  EXPECT_EQ(gguf->get_array("tokenizer.ggml.tokens")->size(), 128256u);
  EXPECT_EQ(gguf->get_array("tokenizer.ggml.merges")->size(), 50000u);
  EXPECT_EQ(gguf->get_int("tokenizer.ggml.eos_token_id"), 50256);
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  const std::string text = "The quick brown fox [PAD60000] jumps over the lazy dog. 12345 ünïcödé";
  const std::vector<std::int32_t> ids = (*tokenizer)->encode(text, false);
  EXPECT_EQ(ids, (*gpt2)->encode(text, false));
  for (const std::int32_t id : ids) EXPECT_LT(id, 50257);
  EXPECT_EQ((*tokenizer)->decode(std::vector<std::int32_t>{100000}, false), "[PAD100000]");
}

TEST(RandomModel, FallsBackToAByteLevelVocabularyWithoutTheSharedFile) {
  const SharedDirectory nowhere("/nonexistent-tern-shared");
  Expected<GgufFile> gguf = make_random_model_gguf(spec_of("random:tiny:f32"));
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  EXPECT_EQ(gguf->get_array("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_FALSE(gguf->has("tokenizer.ggml.merges"));
  EXPECT_EQ(gguf->get_int("tokenizer.ggml.eos_token_id"), 256);
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  const std::string text = "bytes: ünïcödé";
  const std::vector<std::int32_t> ids = (*tokenizer)->encode(text, false);
  EXPECT_EQ(ids.size(), text.size());  // one token a byte
  for (const std::int32_t id : ids) EXPECT_LT(id, 256);
  EXPECT_EQ((*tokenizer)->decode(ids, false), text);
  EXPECT_EQ((*tokenizer)->decode(std::vector<std::int32_t>{300}, false), "[PAD300]");
}

TEST(RandomModel, LoadModelTakesASpecAndRefusesABadOne) {
  const SharedDirectory shared(::tern::testing::shared_dir().string());
  Expected<ModelWeights> weights = load_model("random:tiny:q4_0:7");
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  EXPECT_EQ(weights->path(), "random:tiny:q4_0:7");
  EXPECT_EQ(weights->source_format(), "gguf");
  EXPECT_EQ(weights->layers().front().wq.type, TensorType::q4_0);
  Expected<ModelWeights> bad = load_model("random:tiny:q3_k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown type 'q3_k'"), std::string::npos)
      << bad.error().message;
}

}  // namespace
}  // namespace tern::engine
