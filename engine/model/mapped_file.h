#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/expected.h"

namespace tern::engine {

// A whole file mapped read-only. Weights are used in place from the mapping, so the bytes must
// stay put: the mapping (or owned buffer) keeps its address when a MappedFile is moved.
class MappedFile {
 public:
  static Expected<MappedFile> open(const std::string& path);
  // Wraps bytes already in memory (tests, fuzzing, files fetched by other means) behind the same
  // interface; `name` stands in for the path in error messages.
  static MappedFile from_bytes(std::vector<std::byte> bytes, std::string name);
  // Anonymous memory of `size` bytes that `fill` writes once, then read-only like a file's
  // mapping (models made in memory: random_model.h). On transparent huge pages where the kernel
  // allows them, so filling gigabytes takes thousands of page faults, not millions.
  static Expected<MappedFile> from_filled_memory(
      std::size_t size, std::string name, const std::function<Status(std::span<std::byte>)>& fill);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const;
  std::size_t size() const { return bytes().size(); }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  void release();

  void* mapping_ = nullptr;
  std::size_t mapping_size_ = 0;
  std::vector<std::byte> owned_;
  std::string path_;
};

}  // namespace tern::engine
