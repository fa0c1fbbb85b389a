// engine::GgufWriter, which `tern quantize` uses to carry a GGUF file's metadata over.
#include "engine/model/gguf_writer.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/unit/engine/model/model_test_files.h"

namespace tern::engine {
namespace {

std::vector<std::byte> array_of(GgufValueType element, std::uint64_t count,
                                const std::vector<std::byte>& elements) {
  std::vector<std::byte> out;
  testing::GgufWriter::put<std::uint32_t>(out, static_cast<std::uint32_t>(element));
  testing::GgufWriter::put<std::uint64_t>(out, count);
  out.insert(out.end(), elements.begin(), elements.end());
  return out;
}

TEST(GgufWriterCopy, CopiesEveryScalarAndFlatArrayKeepingTypes) {
  testing::GgufWriter source_writer;
  source_writer.add<std::uint8_t>("u8", GgufValueType::uint8, 200);
  source_writer.add<std::int8_t>("i8", GgufValueType::int8, -100);
  source_writer.add<std::uint16_t>("u16", GgufValueType::uint16, 60000);
  source_writer.add<std::int16_t>("i16", GgufValueType::int16, -30000);
  source_writer.add<std::uint32_t>("u32", GgufValueType::uint32, 4000000000u);
  source_writer.add<std::int32_t>("i32", GgufValueType::int32, -2000000000);
  source_writer.add<float>("f32", GgufValueType::float32, 1.5f);
  source_writer.add<std::uint8_t>("bool", GgufValueType::boolean, 1);
  source_writer.add_string("string", "héllo");
  source_writer.add<std::uint64_t>("u64", GgufValueType::uint64, 1ull << 40);
  source_writer.add<std::int64_t>("i64", GgufValueType::int64, -(1ll << 40));
  source_writer.add<double>("f64", GgufValueType::float64, 2.25);
  std::vector<std::byte> strings, floats, shorts;
  for (std::string_view text : {"a", "", "ccc"}) testing::GgufWriter::put_string(strings, text);
  for (float value : {0.5f, -1.0f}) testing::GgufWriter::put(floats, value);
  for (std::int16_t value : {std::int16_t{-3}, std::int16_t{7}}) {
    testing::GgufWriter::put(shorts, value);
  }
  source_writer.add_raw("strings", GgufValueType::array,
                        array_of(GgufValueType::string, 3, strings));
  source_writer.add_raw("floats", GgufValueType::array,
                        array_of(GgufValueType::float32, 2, floats));
  source_writer.add_raw("shorts", GgufValueType::array, array_of(GgufValueType::int16, 2, shorts));
  auto source = GgufFile::parse(MappedFile::from_bytes(source_writer.bytes(), "source.gguf"));
  ASSERT_TRUE(source.ok()) << source.error().message;

  GgufWriter writer;
  for (std::string_view key : source->keys()) {
    ASSERT_TRUE(writer.copy_metadata(*source, key).ok()) << key;
  }
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("tern-gguf-writer-" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(writer.write(path.string()).ok());
  auto copy = GgufFile::open(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(copy.ok()) << copy.error().message;
  for (std::string_view key : source->keys()) {
    EXPECT_EQ(copy->type_of(key), source->type_of(key)) << key;
  }
  EXPECT_EQ(copy->get_int("u8"), 200);
  EXPECT_EQ(copy->get_int("i8"), -100);
  EXPECT_EQ(copy->get_int("u16"), 60000);
  EXPECT_EQ(copy->get_int("i16"), -30000);
  EXPECT_EQ(copy->get_int("u32"), 4000000000ll);
  EXPECT_EQ(copy->get_int("i32"), -2000000000);
  EXPECT_EQ(copy->get_float("f32"), 1.5);
  EXPECT_EQ(copy->get_bool("bool"), true);
  EXPECT_EQ(copy->get_string("string"), "héllo");
  EXPECT_EQ(copy->get_int("u64"), 1ll << 40);
  EXPECT_EQ(copy->get_int("i64"), -(1ll << 40));
  EXPECT_EQ(copy->get_float("f64"), 2.25);
  EXPECT_EQ(copy->get_array("strings")->strings(), (std::vector<std::string_view>{"a", "", "ccc"}));
  EXPECT_EQ(copy->get_array("floats")->numbers(), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(copy->get_array("shorts")->element_type(), GgufValueType::int16);
  EXPECT_EQ(copy->get_array("shorts")->integers(), (std::vector<std::int64_t>{-3, 7}));
}

TEST(GgufWriterCopy, NestedArraysAreRefusedWithTheKey) {
  testing::GgufWriter source_writer;
  std::vector<std::byte> nested = array_of(GgufValueType::uint8, 1, {std::byte{1}});
  source_writer.add_raw("nested", GgufValueType::array, array_of(GgufValueType::array, 1, nested));
  auto source = GgufFile::parse(MappedFile::from_bytes(source_writer.bytes(), "source.gguf"));
  ASSERT_TRUE(source.ok());
  GgufWriter writer;
  const Status copied = writer.copy_metadata(*source, "nested");
  ASSERT_FALSE(copied.ok());
  EXPECT_NE(copied.message().find("'nested'"), std::string::npos) << copied.message();
}

// Random models are written into memory (random_model.h): the same bytes as write() gives a file,
// whatever the number of threads filling the tensors, and a source's failure names its tensor.
TEST(GgufWriterMemory, WritesTheBytesOfTheFileOnAnyNumberOfThreads) {
  GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_uint32("answer", 42);
  const auto counting = [](std::uint8_t start) {
    return [start](std::span<std::byte> out) -> Status {
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::byte(start + i);
      return Status::success();
    };
  };
  // Sizes that leave padding before the next tensor's alignment.
  ASSERT_TRUE(writer.add_tensor("a", kernels::TensorType::f32, {3}, counting(1)).ok());
  ASSERT_TRUE(writer.add_tensor("b", kernels::TensorType::q8_0, {32, 5}, counting(7)).ok());
  ASSERT_TRUE(writer.add_tensor("c", kernels::TensorType::f16, {5, 2}, counting(100)).ok());
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("tern-gguf-writer-memory-" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(writer.write(path.string()).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  ASSERT_EQ(writer.file_bytes(), file.size());
  for (const unsigned threads : {1u, 2u, 8u}) {
    std::vector<std::byte> memory(file.size(), std::byte{0xAA});  // padding must be written too
    ASSERT_TRUE(writer.write_to_memory(memory, threads).ok());
    EXPECT_EQ(std::memcmp(memory.data(), file.data(), file.size()), 0) << threads << " threads";
  }
  std::vector<std::byte> short_buffer(file.size() - 1);
  const Status too_short = writer.write_to_memory(short_buffer, 2);
  ASSERT_FALSE(too_short.ok());
  EXPECT_NE(too_short.message().find(std::to_string(file.size())), std::string::npos)
      << too_short.message();

  ASSERT_TRUE(writer
                  .add_tensor("broken", kernels::TensorType::f32, {4},
                              [](std::span<std::byte>) -> Status { return Error{"no data"}; })
                  .ok());
  std::vector<std::byte> memory(writer.file_bytes());
  const Status failed = writer.write_to_memory(memory, 2);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.message(), "tensor 'broken': no data");
}

TEST(MappedFileFromFilledMemory, HoldsWhatTheFillWroteOrItsError) {
  auto filled =
      MappedFile::from_filled_memory(10000, "made", [](std::span<std::byte> out) -> Status {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::byte(i % 251);
        return Status::success();
      });
  ASSERT_TRUE(filled.ok()) << filled.error().message;
  EXPECT_EQ(filled->path(), "made");
  ASSERT_EQ(filled->size(), 10000u);
  EXPECT_EQ(filled->bytes()[9999], std::byte(9999 % 251));
  auto failed = MappedFile::from_filled_memory(
      10000, "made", [](std::span<std::byte>) -> Status { return Error{"cannot fill"}; });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "cannot fill");
}

}  // namespace
}  // namespace tern::engine
