#include "engine/json_parse_count.h"

#include <atomic>

namespace tern::engine {
namespace {

std::atomic<std::uint64_t> parses{0};

}  // namespace

void count_json_parse() {
  parses.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t json_parses() {
  return parses.load(std::memory_order_relaxed);
}

}  // namespace tern::engine
