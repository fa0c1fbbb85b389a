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

struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;                        // as written: "F32", "BF16", "I64", ...
  std::optional<kernels::TensorType> type;  // set for F32, F16 and BF16, the dtypes we compute with
  std::vector<std::int64_t> shape;          // row-major, outermost dimension first
  std::uint64_t bytes;
  const std::byte* data;  // into the mapping, bounds-checked
};

// One .safetensors file: an 8-byte little-endian header length, a JSON header, then the data.
// The header is validated up front (dtype sizes, shapes, offsets within the file, no overflow);
// a tensor of a dtype we cannot compute with is listed with `type` unset, so a checkpoint that
// carries such a tensor unused still loads. Move-only; data pointers stay valid while it lives.
class SafetensorsFile {
 public:
  static Expected<SafetensorsFile> open(const std::string& path);
  static Expected<SafetensorsFile> parse(MappedFile file);  // errors name file.path()

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return file_.path(); }
  std::uint64_t file_bytes() const { return file_.size(); }
  std::span<const std::byte> bytes() const { return file_.bytes(); }
  std::span<const SafetensorsTensorInfo> tensors() const { return tensors_; }
  const SafetensorsTensorInfo* find_tensor(std::string_view name) const;

 private:
  explicit SafetensorsFile(MappedFile file) : file_(std::move(file)) {}
  Status parse_header();

  MappedFile file_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace tern::engine
