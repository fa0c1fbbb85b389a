#include "engine/model/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/support/shared_data.h"
#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

using kernels::TensorType;
using testing::GgufWriter;

Expected<GgufFile> parse(std::vector<std::byte> bytes) {
  return GgufFile::parse(MappedFile::from_bytes(std::move(bytes), "test.gguf"));
}

std::vector<std::byte> encode_array(GgufValueType element, std::uint64_t count,
                                    const std::vector<std::byte>& elements) {
  std::vector<std::byte> out;
  GgufWriter::put<std::uint32_t>(out, static_cast<std::uint32_t>(element));
  GgufWriter::put<std::uint64_t>(out, count);
  out.insert(out.end(), elements.begin(), elements.end());
  return out;
}

GgufWriter all_types_writer(std::uint32_t version) {
  GgufWriter writer(version, 64);
  writer.add<std::uint8_t>("t.u8", GgufValueType::uint8, 200);
  writer.add<std::int8_t>("t.i8", GgufValueType::int8, -100);
  writer.add<std::uint16_t>("t.u16", GgufValueType::uint16, 60000);
  writer.add<std::int16_t>("t.i16", GgufValueType::int16, -30000);
  writer.add<std::uint32_t>("t.u32", GgufValueType::uint32, 4000000000u);
  writer.add<std::int32_t>("t.i32", GgufValueType::int32, -2000000000);
  writer.add<float>("t.f32", GgufValueType::float32, 1.5f);
  writer.add<std::uint8_t>("t.bool", GgufValueType::boolean, 1);
  writer.add_string("t.string", "héllo");
  writer.add<std::uint64_t>("t.u64", GgufValueType::uint64, 1ull << 40);
  writer.add<std::int64_t>("t.i64", GgufValueType::int64, -(1ll << 40));
  writer.add<double>("t.f64", GgufValueType::float64, 2.25);
  writer.add<std::uint32_t>("general.alignment", GgufValueType::uint32, 64);

  std::vector<std::byte> strings;
  for (std::string_view text : {"a", "", "ccc"}) GgufWriter::put_string(strings, text);
  writer.add_raw("t.strings", GgufValueType::array,
                 encode_array(GgufValueType::string, 3, strings));
  std::vector<std::byte> floats;
  for (float value : {0.5f, -1.0f}) GgufWriter::put(floats, value);
  writer.add_raw("t.floats", GgufValueType::array, encode_array(GgufValueType::float32, 2, floats));
  std::vector<std::byte> ints;
  for (std::int16_t value : {std::int16_t{-3}, std::int16_t{7}}) GgufWriter::put(ints, value);
  writer.add_raw("t.ints", GgufValueType::array, encode_array(GgufValueType::int16, 2, ints));
  // [[1, 2], []] of u8, then an empty array of arrays.
  std::vector<std::byte> nested =
      encode_array(GgufValueType::uint8, 2, {std::byte{1}, std::byte{2}});
  const std::vector<std::byte> empty = encode_array(GgufValueType::uint8, 0, {});
  nested.insert(nested.end(), empty.begin(), empty.end());
  writer.add_raw("t.nested", GgufValueType::array, encode_array(GgufValueType::array, 2, nested));

  writer.add_f32_tensor("weight", {4, 3}, 2.0f);
  std::vector<std::byte> block(34, std::byte{0});
  writer.add_tensor("quantized", TensorType::q8_0, {32, 1}, block);
  return writer;
}

class GgufAllTypes : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(GgufAllTypes, ReadsEveryValueType) {
  Expected<GgufFile> file = parse(all_types_writer(GetParam()).bytes());
  ASSERT_TRUE(file.ok()) << file.error().message;
  const GgufFile& gguf = *file;
  EXPECT_EQ(gguf.version(), GetParam());
  EXPECT_EQ(gguf.alignment(), 64u);
  EXPECT_EQ(gguf.get_int("t.u8"), 200);
  EXPECT_EQ(gguf.get_int("t.i8"), -100);
  EXPECT_EQ(gguf.get_int("t.u16"), 60000);
  EXPECT_EQ(gguf.get_int("t.i16"), -30000);
  EXPECT_EQ(gguf.get_int("t.u32"), 4000000000ll);
  EXPECT_EQ(gguf.get_int("t.i32"), -2000000000);
  EXPECT_EQ(gguf.get_float("t.f32"), 1.5);
  EXPECT_EQ(gguf.get_bool("t.bool"), true);
  EXPECT_EQ(gguf.get_string("t.string"), "héllo");
  EXPECT_EQ(gguf.get_int("t.u64"), 1ll << 40);
  EXPECT_EQ(gguf.get_int("t.i64"), -(1ll << 40));
  EXPECT_EQ(gguf.get_float("t.f64"), 2.25);
  EXPECT_EQ(gguf.get_float("t.i32"), -2000000000.0);  // integers read as numbers too
  EXPECT_EQ(gguf.type_of("t.f64"), GgufValueType::float64);
  EXPECT_FALSE(gguf.get_string("t.u8"));  // wrong type
  EXPECT_FALSE(gguf.get_int("t.string"));
  EXPECT_FALSE(gguf.get_int("missing"));
  EXPECT_FALSE(gguf.has("missing"));

  const std::optional<GgufArray> strings = gguf.get_array("t.strings");
  ASSERT_TRUE(strings);
  EXPECT_EQ(strings->element_type(), GgufValueType::string);
  EXPECT_EQ(strings->strings(), (std::vector<std::string_view>{"a", "", "ccc"}));
  EXPECT_TRUE(strings->integers().empty());
  EXPECT_EQ(gguf.get_array("t.floats")->numbers(), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(gguf.get_array("t.ints")->integers(), (std::vector<std::int64_t>{-3, 7}));
  const std::vector<GgufArray> nested = gguf.get_array("t.nested")->arrays();
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested[0].integers(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(nested[1].size(), 0u);

  EXPECT_EQ(gguf.keys().size(), 17u);
  EXPECT_EQ(gguf.keys().front(), "t.u8");
  ASSERT_EQ(gguf.tensors().size(), 2u);
  const GgufTensorInfo* weight = gguf.find_tensor("weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->type, TensorType::f32);
  EXPECT_EQ(weight->shape, (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(weight->bytes, 48u);
  float first = 0;
  std::memcpy(&first, weight->data, sizeof(first));
  EXPECT_EQ(first, 2.0f);
  const GgufTensorInfo* quantized = gguf.find_tensor("quantized");
  ASSERT_NE(quantized, nullptr);
  EXPECT_EQ(quantized->offset % 64, 0u);
  EXPECT_EQ(quantized->bytes, 34u);
  EXPECT_EQ((quantized->data - weight->data) % 64, 0);
}

INSTANTIATE_TEST_SUITE_P(Versions, GgufAllTypes, ::testing::Values(2u, 3u));

void expect_error(const std::vector<std::byte>& bytes, std::string_view fragment) {
  Expected<GgufFile> file = parse(bytes);
  ASSERT_FALSE(file.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(file.error().message.find(fragment), std::string::npos) << file.error().message;
  EXPECT_EQ(file.error().message.rfind("test.gguf: ", 0), 0u) << file.error().message;
  EXPECT_EQ(file.error().message.find('\n'), std::string::npos);
}

TEST(GgufFile, RejectsVersionOneBigEndianAndBadMagic) {
  expect_error(GgufWriter(1).bytes(), "version 1 is not supported");
  expect_error(GgufWriter(0x03000000).bytes(), "big-endian");
  expect_error(GgufWriter(4).bytes(), "unsupported GGUF version 4");
  std::vector<std::byte> bytes = GgufWriter().bytes();
  bytes[0] = std::byte{'X'};
  expect_error(bytes, "bad magic");
  expect_error({}, "shorter than the 4-byte magic");
}

TEST(GgufFile, RejectsCountsLargerThanTheFile) {
  std::vector<std::byte> bytes = GgufWriter().bytes();
  const std::uint64_t huge = 1ull << 60;
  std::memcpy(bytes.data() + 8, &huge, sizeof(huge));  // tensor count
  expect_error(bytes, "tensors but only");
  bytes = GgufWriter().bytes();
  std::memcpy(bytes.data() + 16, &huge, sizeof(huge));  // metadata count
  expect_error(bytes, "metadata entries but only");

  GgufWriter writer;
  writer.add_raw("big", GgufValueType::array, encode_array(GgufValueType::uint64, huge, {}));
  expect_error(writer.bytes(), "key 'big': array of 1152921504606846976 uint64 elements");
  GgufWriter long_string;
  std::vector<std::byte> value;
  GgufWriter::put<std::uint64_t>(value, huge);
  long_string.add_raw("text", GgufValueType::string, value);
  expect_error(long_string.bytes(), "truncated file: string of key 'text'");
}

TEST(GgufFile, RejectsBadMetadata) {
  GgufWriter unknown_type;
  unknown_type.add_raw("k", static_cast<GgufValueType>(13), {});
  expect_error(unknown_type.bytes(), "key 'k': unknown value type 13");

  GgufWriter duplicate;
  duplicate.add_u32("k", 1);
  duplicate.add_u32("k", 2);
  expect_error(duplicate.bytes(), "duplicate key 'k'");

  GgufWriter alignment;
  alignment.add_u32("general.alignment", 48);
  expect_error(alignment.bytes(), "'general.alignment': 48 is not a positive power of two");

  // Arrays nested 100 deep: refused before the parser recurses that far.
  std::vector<std::byte> deep = encode_array(GgufValueType::uint8, 0, {});
  for (int i = 0; i < 100; ++i) deep = encode_array(GgufValueType::array, 1, deep);
  GgufWriter nesting;
  nesting.add_raw("deep", GgufValueType::array, deep);
  expect_error(nesting.bytes(), "nested deeper than");
}

TEST(GgufFile, RejectsBadTensors) {
  GgufWriter block;
  block.add_tensor("blk.0.attn_q.weight", TensorType::q8_0, {33, 1}, std::vector<std::byte>(68));
  expect_error(
      block.bytes(),
      "tensor 'blk.0.attn_q.weight': row length 33 is not a multiple of the Q8_0 block size 32");

  GgufWriter unknown;
  unknown.add_tensor("t", static_cast<TensorType>(99), {4}, std::vector<std::byte>(16));
  expect_error(unknown.bytes(), "tensor 't': unknown tensor type id 99");

  GgufWriter rank;
  rank.add_tensor("t", TensorType::f32, {1, 1, 1, 1, 1}, std::vector<std::byte>(4));
  expect_error(rank.bytes(), "tensor 't': rank 5 is outside 1..4");

  GgufWriter overflow;
  overflow.add_tensor("t", TensorType::f32, {1ull << 40, 1ull << 40}, {});
  expect_error(overflow.bytes(), "tensor 't': dimension 1");

  // Data cut off: drop the last bytes of the only tensor.
  GgufWriter cut;
  cut.add_f32_tensor("blk.0.attn_q.weight", {8, 8});
  std::vector<std::byte> bytes = cut.bytes();
  bytes.resize(bytes.size() - 4);
  expect_error(bytes, "tensor 'blk.0.attn_q.weight': data [");
  expect_error(bytes, "exceeds file size");

  // A misaligned offset, patched into the tensor info (the last 8 bytes before the padding).
  GgufWriter misaligned;
  misaligned.add_f32_tensor("t", {8});
  bytes = misaligned.bytes();
  const std::uint64_t offset = 4;
  const std::size_t info_end = 4 + 4 + 8 + 8 + (8 + 1) + 4 + 8 + 4 + 8;
  std::memcpy(bytes.data() + info_end - 8, &offset, sizeof(offset));
  expect_error(bytes, "tensor 't': offset 4 is not a multiple of the alignment 32");
}

TEST(GgufFile, ReportsMissingFiles) {
  Expected<GgufFile> file = GgufFile::open("/nonexistent/model.gguf");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message.rfind("/nonexistent/model.gguf: cannot open", 0), 0u);
}

TEST(GgufFile, OpensSharedTinyStories) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k-f32.gguf");
  Expected<GgufFile> file = GgufFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->get_string("general.architecture"), "llama");
  EXPECT_EQ(file->get_int("llama.block_count"), 2);
  EXPECT_EQ(file->get_bool("tokenizer.ggml.add_bos_token"), true);
  const std::optional<GgufArray> tokens = file->get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  const std::vector<std::string_view> strings = tokens->strings();
  ASSERT_EQ(strings.size(), 2048u);
  EXPECT_EQ(strings[2], "<|end_story|>");
  EXPECT_EQ(file->get_array("tokenizer.ggml.scores")->numbers().size(), 2048u);
  EXPECT_EQ(file->get_array("tokenizer.ggml.token_type")->integers()[0], 2);
  EXPECT_EQ(file->tensors().size(), 20u);
  const GgufTensorInfo* embedding = file->find_tensor("token_embd.weight");
  ASSERT_NE(embedding, nullptr);
  EXPECT_EQ(embedding->shape, (std::vector<std::int64_t>{128, 2048}));
}

TEST(GgufFile, OpensEveryVocabularyFile) {
  TERN_REQUIRE_SHARED(dir, "vocab");
  int opened = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    Expected<GgufFile> file = GgufFile::open(entry.path().string());
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_TRUE(file->get_array("tokenizer.ggml.tokens")) << entry.path();
    ++opened;
  }
  EXPECT_GT(opened, 5);
}

}  // namespace
}  // namespace tern::engine
