#include "service/random_id.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tern::service {
namespace {

// Random bytes handed out one id at a time; refilled in bulk.
class RandomBytes {
 public:
  void take(std::size_t count, unsigned char* out) {
    for (std::size_t i = 0; i < count; ++i) {
      if (used_ == pool_.size()) refill();
      out[i] = pool_[used_];
      pool_[used_++] = 0;  // a byte handed out is not kept
    }
  }

 private:
  void refill() {
    std::size_t filled = 0;
    while (filled < pool_.size()) {
      const ssize_t got = getrandom(pool_.data() + filled, pool_.size() - filled, 0);
      if (got > 0) {
        filled += static_cast<std::size_t>(got);
      } else if (got < 0 && errno != EINTR) {
        // Only a kernel without getrandom (before Linux 3.17) gets here; an id that an attacker
        // could predict is worse than no server.
        std::fputs("tern: getrandom failed; no secure source of ids\n", stderr);
        std::abort();
      }
    }
    used_ = 0;
  }

  std::array<unsigned char, 4096> pool_{};
  std::size_t used_ = pool_.size();
};

}  // namespace

void append_random_hex(std::string& out, std::size_t bytes) {
  thread_local RandomBytes source;
  static constexpr char kHex[] = "0123456789abcdef";
  std::array<unsigned char, 64> chunk{};
  while (bytes > 0) {
    const std::size_t count = bytes < chunk.size() ? bytes : chunk.size();
    source.take(count, chunk.data());
    for (std::size_t i = 0; i < count; ++i) {
      out += kHex[chunk[i] >> 4];
      out += kHex[chunk[i] & 15];
    }
    bytes -= count;
  }
}

std::string random_id(std::string_view prefix, std::string_view separator) {
  std::string id;
  id.reserve(prefix.size() + separator.size() + 2 * kRandomIdBytes);
  id += prefix;
  id += separator;
  append_random_hex(id);
  return id;
}

}  // namespace tern::service
