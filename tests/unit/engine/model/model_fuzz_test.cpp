// Corrupt copies of the shared model files must load or fail with an error, never crash, hang
// or read out of bounds (run under ASan to catch the last). Mutations are deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/model/model_weights.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

// On success every weight must still lie inside the bytes it came from.
void expect_weights_in(const ModelWeights& weights, std::span<const std::byte> bytes) {
  const auto inside = [&](const WeightTensor& tensor) {
    const std::byte* end = bytes.data() + bytes.size();
    return tensor.data >= bytes.data() && tensor.data <= end &&
           static_cast<std::uint64_t>(tensor.rows) * tensor.row_bytes <=
               static_cast<std::uint64_t>(end - tensor.data);
  };
  EXPECT_TRUE(inside(weights.token_embedding()));
  EXPECT_TRUE(inside(weights.output()));
  EXPECT_TRUE(inside(weights.output_norm()));
  for (const LayerWeights& layer : weights.layers()) {
    for (const WeightTensor* tensor : layer_tensors(layer, true)) {
      EXPECT_TRUE(inside(*tensor));
    }
  }
}

// Parses and loads a GGUF image; returns whether it loaded. Errors must be one line.
bool try_gguf(std::vector<std::byte> bytes) {
  Expected<GgufFile> gguf = GgufFile::parse(MappedFile::from_bytes(std::move(bytes), "fuzz.gguf"));
  if (!gguf) {
    EXPECT_EQ(gguf.error().message.find('\n'), std::string::npos);
    return false;
  }
  // Walk every metadata value the way the tokenizer will.
  for (std::string_view key : gguf->keys()) {
    if (const std::optional<GgufArray> array = gguf->get_array(key)) {
      (void)array->strings();
      (void)array->numbers();
      for (const GgufArray& inner : array->arrays()) (void)inner.integers();
    }
    (void)gguf->get_string(key);
    (void)gguf->get_float(key);
  }
  Expected<ModelWeights> weights = load_gguf_model(std::move(gguf).value());
  if (!weights) {
    EXPECT_EQ(weights.error().message.find('\n'), std::string::npos);
    return false;
  }
  expect_weights_in(*weights, weights->gguf()->bytes());
  return true;
}

std::size_t gguf_header_bytes(std::span<const std::byte> bytes) {
  Expected<GgufFile> gguf = GgufFile::parse(
      MappedFile::from_bytes(std::vector<std::byte>(bytes.begin(), bytes.end()), "header.gguf"));
  EXPECT_TRUE(gguf.ok());
  if (!gguf) return bytes.size();
  std::size_t header = bytes.size();
  for (const GgufTensorInfo& tensor : gguf->tensors()) {
    header = std::min(header, static_cast<std::size_t>(tensor.data - gguf->bytes().data()));
  }
  return header;
}

void flip_bit(std::vector<std::byte>& bytes, std::size_t bit) {
  bytes[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
}

TEST(ModelFuzz, TruncatedGgufNeverCrashes) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-q4_0.gguf");
  const std::vector<std::byte> original = testing::read_bytes(path);
  ASSERT_TRUE(try_gguf(original));
  const std::size_t header = gguf_header_bytes(original);
  std::vector<std::size_t> cuts;
  for (std::size_t cut = 0; cut < std::min<std::size_t>(header, 512); ++cut) cuts.push_back(cut);
  for (std::size_t cut = 512; cut < header + 64; cut += 97) cuts.push_back(cut);
  std::mt19937_64 random(1);
  for (int i = 0; i < 100; ++i) cuts.push_back(random() % original.size());
  for (std::size_t cut : cuts) {
    SCOPED_TRACE(cut);
    EXPECT_FALSE(try_gguf({original.begin(), original.begin() + static_cast<std::ptrdiff_t>(cut)}));
  }
}

TEST(ModelFuzz, BitFlippedGgufNeverCrashes) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-q4_0.gguf");
  std::vector<std::byte> bytes = testing::read_bytes(path);
  const std::size_t header = gguf_header_bytes(bytes);
  std::mt19937_64 random(2);
  int loaded = 0;
  for (int i = 0; i < 2500; ++i) {
    // 2000 flips in the header (metadata and tensor directory), then 500 anywhere.
    const std::size_t span = i < 2000 ? header : bytes.size();
    const std::size_t bit = random() % (span * 8);
    SCOPED_TRACE(bit);
    flip_bit(bytes, bit);
    loaded += try_gguf(bytes);
    flip_bit(bytes, bit);
  }
  // Flips in token strings, scores and weights are harmless; flips in sizes are not.
  EXPECT_GT(loaded, 0);
  EXPECT_LT(loaded, 2500);
}

// The expert, router and latent-attention keys and tensors: corrupt counts and ranks must fail
// with an error (or still load within the file), never size an allocation or overflow.
TEST(ModelFuzz, BitFlippedMoeGgufsNeverCrash) {
  for (const char* model :
       {"models/random-mixtral-tiny-f32.gguf", "models/random-deepseek-v3-tiny-f32.gguf"}) {
    TERN_REQUIRE_SHARED(path, model);
    std::vector<std::byte> bytes = testing::read_bytes(path);
    ASSERT_TRUE(try_gguf(bytes)) << model;
    const std::size_t header = gguf_header_bytes(bytes);
    std::mt19937_64 random(3);
    int loaded = 0;
    for (int i = 0; i < 1500; ++i) {
      const std::size_t bit = random() % (header * 8);
      SCOPED_TRACE(bit);
      flip_bit(bytes, bit);
      loaded += try_gguf(bytes);
      flip_bit(bytes, bit);
    }
    EXPECT_GT(loaded, 0) << model;
    EXPECT_LT(loaded, 1500) << model;
  }
}

// Loads an HF checkpoint image with the config.json of the shared directory.
bool try_safetensors(std::vector<std::byte> bytes, const std::string& directory) {
  Expected<SafetensorsFile> file =
      SafetensorsFile::parse(MappedFile::from_bytes(std::move(bytes), "fuzz.safetensors"));
  if (!file) {
    EXPECT_EQ(file.error().message.find('\n'), std::string::npos);
    return false;
  }
  Expected<ModelWeights> weights =
      load_hf_model(directory, SafetensorsCheckpoint::from_file(std::move(file).value()));
  if (!weights) {
    EXPECT_EQ(weights.error().message.find('\n'), std::string::npos);
    return false;
  }
  return true;
}

TEST(ModelFuzz, CorruptSafetensorsNeverCrashes) {
  TERN_REQUIRE_SHARED(dir, "models/tinystories-656k");
  std::vector<std::byte> bytes = testing::read_bytes(dir / "model.safetensors");
  ASSERT_TRUE(try_safetensors(bytes, dir.string()));
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), sizeof(header));
  header += sizeof(header);

  for (std::size_t cut = 0; cut < header + 16; cut += 3) {
    SCOPED_TRACE(cut);
    EXPECT_FALSE(try_safetensors({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)},
                                 dir.string()));
  }
  std::mt19937_64 random(3);
  for (int i = 0; i < 50; ++i) {
    const std::size_t cut = header + random() % (bytes.size() - header);
    EXPECT_FALSE(try_safetensors({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)},
                                 dir.string()));
  }
  for (int i = 0; i < 2000; ++i) {
    const std::size_t bit = random() % (header * 8);
    SCOPED_TRACE(bit);
    flip_bit(bytes, bit);
    (void)try_safetensors(bytes, dir.string());
    flip_bit(bytes, bit);
  }
}

TEST(ModelFuzz, CorruptConfigJsonNeverCrashes) {
  TERN_REQUIRE_SHARED(source, "models/random-qwen3-tiny");
  testing::TempDir dir;
  std::filesystem::copy_file(source / "model.safetensors", dir / "model.safetensors");
  std::vector<std::byte> config = testing::read_bytes(source / "config.json");
  std::mt19937_64 random(4);
  for (int i = 0; i < 300; ++i) {
    std::vector<std::byte> mutated = config;
    flip_bit(mutated, random() % (mutated.size() * 8));
    if (i % 3 == 0) mutated.resize(random() % mutated.size());
    testing::write_bytes(dir / "config.json", mutated);
    Expected<SafetensorsCheckpoint> checkpoint = SafetensorsCheckpoint::open(dir.path().string());
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
    Expected<ModelWeights> weights =
        load_hf_model(dir.path().string(), std::move(checkpoint).value());
    if (!weights) {
      EXPECT_EQ(weights.error().message.find('\n'), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tern::engine
