#pragma once

// Shared helpers for the tokenizer tests: loading each reference tokenizer once per process, and
// reading the reference files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "tests/support/shared_data.h"

namespace tern::engine::testing {

// Loading Qwen3's 11 MB tokenizer.json takes a moment; every test of a file shares one load.
inline const Tokenizer* cached_tokenizer(const std::filesystem::path& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  std::lock_guard lock(mutex);
  auto& slot = loaded[path.string()];
  if (!slot) {
    auto tokenizer = Tokenizer::load(path.string());
    if (!tokenizer) {
      ADD_FAILURE() << tokenizer.error().message;
      return nullptr;
    }
    slot = std::move(tokenizer.value());
  }
  return slot.get();
}

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

inline std::string format_ids(const std::vector<std::int32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

}  // namespace tern::engine::testing
