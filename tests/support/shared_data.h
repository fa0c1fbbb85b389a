#pragma once

// Access to ../shared (models, references, tokenizers) for tests. The directory comes from the
// TERN_SHARED_DIR environment variable, else from the path CMake saw at configure time. A test
// that needs a file skips with a message naming it when the file is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tern::testing {

inline std::filesystem::path shared_dir() {
  if (const char* from_env = std::getenv("TERN_SHARED_DIR")) return from_env;
  return TERN_SHARED_DIR;
}

inline std::filesystem::path shared_path(const std::string& relative) {
  return shared_dir() / relative;
}

}  // namespace tern::testing

// Skips the current test unless ../shared/<relative> exists; evaluates to the full path.
#define TERN_REQUIRE_SHARED(variable, relative)                                              \
  const std::filesystem::path variable = ::tern::testing::shared_path(relative);             \
  if (!std::filesystem::exists(variable)) {                                                  \
    GTEST_SKIP() << "needs " << variable.string() << " (../shared is absent or incomplete)"; \
  }
