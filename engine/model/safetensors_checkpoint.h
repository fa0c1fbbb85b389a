#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/expected.h"
#include "engine/model/safetensors_file.h"

namespace tern::engine {

// The safetensors weights of a Hugging Face directory: `model.safetensors`, or the shards that
// `model.safetensors.index.json` names in its weight_map. Move-only; owns every mapping.
class SafetensorsCheckpoint {
 public:
  static Expected<SafetensorsCheckpoint> open(const std::string& directory);
  // One file already parsed (tests, fuzzing).
  static SafetensorsCheckpoint from_file(SafetensorsFile file);

  SafetensorsCheckpoint(SafetensorsCheckpoint&&) noexcept = default;
  SafetensorsCheckpoint& operator=(SafetensorsCheckpoint&&) noexcept = default;

  const SafetensorsTensorInfo* find_tensor(std::string_view name) const;
  // The file holding `name` (for error messages); nullptr when absent.
  const SafetensorsFile* file_of(std::string_view name) const;
  std::span<const SafetensorsFile> files() const { return files_; }
  std::uint64_t total_bytes() const;

 private:
  SafetensorsCheckpoint() = default;
  Status index_file(std::size_t file_index);

  std::vector<SafetensorsFile> files_;
  std::unordered_map<std::string, std::size_t> tensor_file_;  // tensor name -> files_ index
};

}  // namespace tern::engine
