// Models split by llama.cpp's gguf-split: opened from the first file, the other shards found by
// name, their tensors listed with the first file's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/backend/backend_factory.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/model_quantizer.h"
#include "engine/model/model_weights.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/shared_data.h"
#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

using testing::TempDir;

struct SplitKeys {
  std::int64_t no;
  std::int64_t count;
  std::int64_t tensors;  // over all shards
};

std::string shard_name(std::string_view stem, std::int64_t no, std::int64_t count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", stem, no + 1, count);
}

// The split keys typed as gguf-split writes them (u16, u16, i32).
void add_split_keys(testing::GgufWriter& writer, SplitKeys keys) {
  writer.add("split.no", GgufValueType::uint16, static_cast<std::uint16_t>(keys.no));
  writer.add("split.count", GgufValueType::uint16, static_cast<std::uint16_t>(keys.count));
  writer.add("split.tensors.count", GgufValueType::int32, static_cast<std::int32_t>(keys.tensors));
}

// A small shard whose tensor `name` holds 4 floats equal to `name[0]`, so each shard's data is
// told apart by value. Only the first shard (split.no 0) carries model metadata.
void write_synthetic_shard(const std::filesystem::path& path, SplitKeys keys,
                           const std::vector<std::string>& tensors) {
  testing::GgufWriter writer;
  if (keys.no == 0) writer.add_string("general.architecture", "llama");
  add_split_keys(writer, keys);
  for (const std::string& name : tensors) writer.add_f32_tensor(name, {4}, name[0]);
  testing::write_bytes(path, writer.bytes());
}

// model-0000K-of-00003.gguf holding tensors "a", "b", "c" in turn.
class GgufSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::int64_t k = 0; k < 3; ++k) {
      write_synthetic_shard(shard(k), {k, 3, 3}, {std::string(1, static_cast<char>('a' + k))});
    }
  }
  std::filesystem::path shard(std::int64_t no) const { return dir_ / shard_name("model", no, 3); }
  std::string open_error(std::int64_t no = 0) const {
    Expected<GgufFile> file = GgufFile::open(shard(no).string());
    EXPECT_FALSE(file.ok());
    return file.ok() ? std::string() : file.error().message;
  }

  TempDir dir_;
};

float first_value(const GgufTensorInfo& info) {
  float value = 0;
  std::memcpy(&value, info.data, sizeof(value));
  return value;
}

TEST_F(GgufSplit, OpensEveryShardFromTheFirst) {
  Expected<GgufFile> opened = GgufFile::open(shard(0).string());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const GgufFile file = std::move(opened).value();  // the shards' mappings survive the move
  EXPECT_EQ(file.get_string("general.architecture"), "llama");
  ASSERT_EQ(file.tensors().size(), 3u);
  const std::vector<std::span<const std::byte>> regions = file.mapped_regions();
  ASSERT_EQ(regions.size(), 3u);
  std::uint64_t total = 0;
  for (std::int64_t k = 0; k < 3; ++k) {
    const std::string name(1, static_cast<char>('a' + k));
    const GgufTensorInfo* info = file.find_tensor(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(first_value(*info), static_cast<float>(name[0]));
    const std::span<const std::byte> region = regions[static_cast<std::size_t>(k)];
    EXPECT_EQ(region.size(), std::filesystem::file_size(shard(k)));
    EXPECT_TRUE(info->data >= region.data() &&
                info->data + info->bytes <= region.data() + region.size())
        << name << " lies in its own shard's mapping";
    total += region.size();
  }
  EXPECT_EQ(file.file_bytes(), total);
  EXPECT_EQ(file.bytes().size(), regions[0].size());
}

TEST_F(GgufSplit, ParseReadsOneFileOnly) {
  Expected<MappedFile> mapped = MappedFile::open(shard(0).string());
  ASSERT_TRUE(mapped.ok());
  Expected<GgufFile> file = GgufFile::parse(std::move(mapped).value());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->tensors().size(), 1u);
  EXPECT_EQ(file->mapped_regions().size(), 1u);
}

TEST_F(GgufSplit, ALaterShardNamesTheFirst) {
  EXPECT_EQ(open_error(1), shard(1).string() +
                               ": this is shard 2 of 3 of a split model (split.no 1); pass the "
                               "first file, " +
                               shard(0).string());
}

TEST_F(GgufSplit, ASplitNoOutsideTheCountIsRefused) {
  write_synthetic_shard(shard(0), {3, 3, 3}, {"a"});
  EXPECT_EQ(open_error(), shard(0).string() + ": split.no 3 is outside 0..2");
}

TEST_F(GgufSplit, AMissingShardIsNamed) {
  std::filesystem::remove(shard(2));
  EXPECT_EQ(open_error(),
            shard(0).string() + ": shard 3 of 3 is missing: expected " + shard(2).string());
}

TEST_F(GgufSplit, AShardWithAnotherSplitCountIsRefused) {
  write_synthetic_shard(shard(1), {1, 4, 3}, {"b"});
  EXPECT_EQ(open_error(), shard(1).string() + ": split.count is 4 but the first shard, " +
                              shard(0).string() + ", says 3");
}

TEST_F(GgufSplit, AShardWhoseNumberIsNotItsNameIsRefused) {
  write_synthetic_shard(shard(2), {1, 3, 3}, {"c"});
  EXPECT_EQ(open_error(),
            shard(2).string() + ": split.no is 1 but the file name says shard 3 (split.no 2)");
}

TEST_F(GgufSplit, ATensorInTwoShardsIsRefused) {
  write_synthetic_shard(shard(2), {2, 3, 3}, {"b"});
  EXPECT_EQ(open_error(), shard(2).string() + ": tensor 'b' is also in " + shard(1).string());
  write_synthetic_shard(shard(2), {2, 3, 3}, {"a"});
  EXPECT_EQ(open_error(), shard(2).string() + ": tensor 'a' is also in " + shard(0).string());
}

TEST_F(GgufSplit, ATotalOtherThanSplitTensorsCountIsRefused) {
  write_synthetic_shard(shard(0), {0, 3, 4}, {"a"});
  EXPECT_EQ(open_error(),
            shard(0).string() + ": split.tensors.count is 4 but the 3 shards hold 3 tensors");
}

TEST_F(GgufSplit, AFirstShardNotNamedLikeOneIsRefused) {
  const std::filesystem::path renamed = dir_ / "model.gguf";
  std::filesystem::rename(shard(0), renamed);
  Expected<GgufFile> file = GgufFile::open(renamed.string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message,
            renamed.string() +
                ": the first of 3 shards of a split model, but the name does not end in "
                "-00001-of-00003.gguf, so the other shards cannot be found");
}

TEST(GgufSplitCountOne, IsAnOrdinaryFile) {
  TempDir dir;
  const std::filesystem::path path = dir / shard_name("model", 0, 1);
  write_synthetic_shard(path, {0, 1, 1}, {"a"});
  Expected<GgufFile> file = GgufFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->tensors().size(), 1u);
  EXPECT_EQ(file->mapped_regions().size(), 1u);
}

// --- a real model, split as gguf-split would --------------------------------------------------

// Writes `source` as `count` shards: all its metadata and the first tensors in the first, the
// rest of the tensors in turn in the others, every shard with the split keys.
std::vector<std::filesystem::path> write_split(const GgufFile& source,
                                               const std::filesystem::path& dir,
                                               std::string_view stem, std::int64_t count) {
  const std::span<const GgufTensorInfo> tensors = source.tensors();
  const auto total = static_cast<std::int64_t>(tensors.size());
  std::vector<std::filesystem::path> paths;
  for (std::int64_t k = 0; k < count; ++k) {
    GgufWriter writer;
    if (k == 0) {
      for (std::string_view key : source.keys())
        EXPECT_TRUE(writer.copy_metadata(source, key).ok());
    }
    testing::GgufWriter keys;
    add_split_keys(keys, {k, count, total});
    const Expected<GgufFile> key_file =
        GgufFile::parse(MappedFile::from_bytes(keys.bytes(), "split keys"));
    EXPECT_TRUE(key_file.ok());
    for (std::string_view key : key_file->keys()) {
      EXPECT_TRUE(writer.copy_metadata(*key_file, key).ok());
    }
    for (std::int64_t t = k * total / count; t < (k + 1) * total / count; ++t) {
      const GgufTensorInfo& info = tensors[static_cast<std::size_t>(t)];
      const Status added =
          writer.add_tensor(info.name, info.type, info.shape, [&info](std::span<std::byte> out) {
            std::memcpy(out.data(), info.data, out.size());
            return Status::success();
          });
      EXPECT_TRUE(added.ok()) << added.error().message;
    }
    paths.push_back(dir / shard_name(stem, k, count));
    const Status written = writer.write(paths.back().string());
    EXPECT_TRUE(written.ok()) << written.error().message;
  }
  return paths;
}

TEST(GgufSplitTinyStories, EveryTensorHasTheUnsplitFilesBytes) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
  Expected<GgufFile> whole = GgufFile::open(path.string());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  TempDir dir;
  const auto shards = write_split(*whole, dir.path(), "tinystories", 3);
  Expected<GgufFile> split = GgufFile::open(shards[0].string());
  ASSERT_TRUE(split.ok()) << split.error().message;
  ASSERT_EQ(split->tensors().size(), whole->tensors().size());
  for (const GgufTensorInfo& expected : whole->tensors()) {
    const GgufTensorInfo* actual = split->find_tensor(expected.name);
    ASSERT_NE(actual, nullptr) << expected.name;
    EXPECT_EQ(actual->type, expected.type) << expected.name;
    EXPECT_EQ(actual->shape, expected.shape) << expected.name;
    ASSERT_EQ(actual->bytes, expected.bytes) << expected.name;
    EXPECT_EQ(std::memcmp(actual->data, expected.data, expected.bytes), 0) << expected.name;
  }
  std::uint64_t total = 0;
  for (const auto& shard : shards) total += std::filesystem::file_size(shard);
  EXPECT_EQ(split->file_bytes(), total);
}

struct GreedyRun {
  std::vector<float> prompt_logits;
  std::vector<std::int32_t> ids;
};

GreedyRun run_greedy(const ModelWeights& weights) {
  const std::vector<std::int32_t> prompt{1, 400, 35, 1200, 7, 88};
  constexpr int kSteps = 12;
  GreedyRun run;
  kernels::ThreadPool pool(2);
  BackendSpec spec;
  spec.options.max_sequences = 1;
  spec.options.max_batch_tokens = 64;
  const auto context = static_cast<std::int32_t>(prompt.size() + kSteps + 1);
  spec.options.max_context = context;
  auto backend = create_backend(spec, weights, pool);
  EXPECT_TRUE(backend.ok()) << backend.error().message;
  if (!backend.ok()) return run;
  auto runner = SequenceRunner::create(**backend, context, KvCacheType::f32);
  EXPECT_TRUE(runner.ok());
  if (!runner.ok()) return run;
  EXPECT_TRUE(runner->append(prompt).ok());
  run.prompt_logits.assign(runner->logits().begin(), runner->logits().end());
  for (int step = 0; step < kSteps; ++step) {
    const std::int32_t token = argmax(runner->logits());
    run.ids.push_back(token);
    EXPECT_TRUE(runner->append({&token, 1}).ok());
  }
  return run;
}

TEST(GgufSplitTinyStories, LoadsAndDecodesExactlyLikeTheUnsplitFile) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
  Expected<GgufFile> whole = GgufFile::open(path.string());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  TempDir dir;
  const auto shards = write_split(*whole, dir.path(), "tinystories", 3);
  Expected<ModelWeights> unsplit = load_model(path.string());
  ASSERT_TRUE(unsplit.ok()) << unsplit.error().message;
  Expected<ModelWeights> split = load_model(shards[0].string());
  ASSERT_TRUE(split.ok()) << split.error().message;
  std::uint64_t total = 0;
  for (const auto& shard : shards) total += std::filesystem::file_size(shard);
  EXPECT_EQ(split->file_bytes(), total);

  const GreedyRun expected = run_greedy(*unsplit);
  const GreedyRun actual = run_greedy(*split);
  ASSERT_FALSE(expected.prompt_logits.empty());
  EXPECT_EQ(actual.prompt_logits, expected.prompt_logits);
  EXPECT_EQ(actual.ids, expected.ids);
}

// The output is one file: the source's split keys would send its loader looking for shards.
TEST(GgufSplitTinyStories, QuantizesToOneFile) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
  Expected<GgufFile> whole = GgufFile::open(path.string());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  TempDir dir;
  const auto shards = write_split(*whole, dir.path(), "tinystories", 3);
  const std::filesystem::path output = dir / "tinystories-q8_0.gguf";
  Expected<QuantizeReport> report =
      quantize_model(shards[0].string(), output.string(), kernels::TensorType::q8_0);
  ASSERT_TRUE(report.ok()) << report.error().message;
  Expected<GgufFile> quantized = GgufFile::open(output.string());
  ASSERT_TRUE(quantized.ok()) << quantized.error().message;
  EXPECT_EQ(quantized->tensors().size(), whole->tensors().size());
  for (std::string_view key : quantized->keys()) EXPECT_FALSE(key.starts_with("split.")) << key;
}

}  // namespace
}  // namespace tern::engine
