#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/expected.h"
#include "engine/model/mapped_file.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

// GGUF metadata value types, numbered as in the file format.
enum class GgufValueType : std::uint32_t {
  uint8 = 0,
  int8,
  uint16,
  int16,
  uint32,
  int32,
  float32,
  boolean,
  string,
  array,
  uint64,
  int64,
  float64
};

std::string_view gguf_value_type_name(GgufValueType type);

// A metadata array, viewed in place in the mapping (the file was validated when opened, so
// walking it cannot overrun). The accessors convert element-wise and return an empty vector
// when the element type does not fit: check element_type() to tell that from an empty array.
class GgufArray {
 public:
  GgufValueType element_type() const { return element_type_; }
  std::size_t size() const { return size_; }

  std::vector<std::string_view> strings() const;  // string elements
  std::vector<std::int64_t> integers() const;     // any integer type and bool (u64 > 2^63-1 wraps)
  std::vector<double> numbers() const;            // float32/float64 and integer types
  std::vector<GgufArray> arrays() const;          // nested arrays

 private:
  friend class GgufFile;
  GgufArray(GgufValueType element_type, std::size_t size, const std::byte* elements)
      : element_type_(element_type), size_(size), elements_(elements) {}

  GgufValueType element_type_;
  std::size_t size_;
  const std::byte* elements_;  // the first element, just after the array's type and count
};

struct GgufTensorInfo {
  std::string name;
  kernels::TensorType type;
  std::vector<std::int64_t> shape;  // GGML order: shape[0] is the fastest-varying (row length)
  std::uint64_t offset;             // from the start of the data section
  std::uint64_t bytes;
  const std::byte* data;  // into the mapping, bounds-checked
  std::int64_t elements() const;
};

// A GGUF (v2 or v3, little-endian) file: metadata and tensor directory, parsed and validated
// up front; tensor data stays in the mapping. Move-only; the string_views, arrays and data
// pointers it hands out stay valid while it lives.
//
// A model split by llama.cpp's gguf-split (<stem>-00001-of-0000N.gguf, ...) opens from its first
// file: open() maps the other shards too and lists their tensors with the first file's, so
// tensors() and find_tensor() see the whole model; metadata comes from the first file only.
class GgufFile {
 public:
  static Expected<GgufFile> open(const std::string& path);
  // Parses bytes already mapped (tests, fuzzing), one file only; errors name file.path().
  static Expected<GgufFile> parse(MappedFile file);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  std::uint32_t version() const { return version_; }
  const std::string& path() const { return file_.path(); }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t file_bytes() const;  // every shard of a split model
  std::span<const std::byte> bytes() const { return file_.bytes(); }  // the first file only
  std::vector<std::span<const std::byte>> mapped_regions() const;     // every shard's mapping

  bool has(std::string_view key) const { return index_.contains(key); }
  // The type of `key`'s value; check has() first (a missing key reports uint8).
  GgufValueType type_of(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key) const;  // any integer type and bool
  std::optional<double> get_float(std::string_view key) const;      // float32/64 or integer
  std::optional<bool> get_bool(std::string_view key) const;         // bool or integer (!= 0)
  std::optional<GgufArray> get_array(std::string_view key) const;
  std::vector<std::string_view> keys() const;  // in file order

  std::span<const GgufTensorInfo> tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  struct Entry {
    std::string_view key;
    GgufValueType type;
    const std::byte* value;  // the encoded value, validated
  };
  class Parser;

  explicit GgufFile(MappedFile file) : file_(std::move(file)) {}
  const Entry* find(std::string_view key) const;
  Status open_other_shards();
  Status add_shard(GgufFile shard, std::int64_t split_no, std::int64_t split_count);

  MappedFile file_;
  std::vector<MappedFile> other_shards_;  // split.no 1.., their tensors listed in tensors_
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::vector<Entry> entries_;
  std::unordered_map<std::string_view, std::size_t> index_;  // keys point into the mapping
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, std::size_t> tensor_index_;  // keys point into the mappings
};

}  // namespace tern::engine
