#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace tern::engine {

static_assert(std::endian::native == std::endian::little,
              "the model file readers assume a little-endian host");

// A cursor over untrusted bytes: every read checks the remaining length first and reports
// failure instead of reading past the end, so a parser built on it cannot overrun a file.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return bytes_.size() - offset_; }
  const std::byte* position() const { return bytes_.data() + offset_; }

  template <typename T>
  requires std::is_trivially_copyable_v<T>
  bool read(T& out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(&out, position(), sizeof(T));
    offset_ += sizeof(T);
    return true;
  }

  bool skip(std::uint64_t count) {
    if (count > remaining()) return false;
    offset_ += static_cast<std::size_t>(count);
    return true;
  }

  // A length-prefixed (u64) string; on failure the cursor is left where it was.
  bool read_string(std::string_view& out) {
    const std::size_t start = offset_;
    std::uint64_t length = 0;
    if (!read(length) || length > remaining()) {
      offset_ = start;
      return false;
    }
    out = {reinterpret_cast<const char*>(position()), static_cast<std::size_t>(length)};
    offset_ += static_cast<std::size_t>(length);
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
};

}  // namespace tern::engine
