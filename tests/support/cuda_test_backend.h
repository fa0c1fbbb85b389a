#pragma once

// The backend the end-to-end CUDA-path tests run on: `cuda-emulated` (the SIMT emulator, no GPU)
// unless TERN_TEST_CUDA_BACKEND says `cuda` (a real GPU: `make test-gpu`). Any other value fails
// the test that asks, naming the variable and what it takes, rather than silently running
// something else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace tern::testing {

inline constexpr const char* kCudaTestBackendVariable = "TERN_TEST_CUDA_BACKEND";

struct CudaTestBackend {
  std::string name;   // "cuda" or "cuda-emulated"; empty when `error` says why not
  std::string error;  // what is wrong with the variable
};

inline CudaTestBackend cuda_test_backend() {
  const char* value = std::getenv(kCudaTestBackendVariable);
  if (value == nullptr || *value == '\0') return {"cuda-emulated", {}};
  const std::string_view name = value;
  if (name == "cuda" || name == "cuda-emulated") return {std::string(name), {}};
  return {{},
          std::string(kCudaTestBackendVariable) + " must be cuda or cuda-emulated (unset: " +
              "cuda-emulated), got '" + std::string(name) + "'"};
}

}  // namespace tern::testing

// Declares `variable` (a std::string) as the backend name for this CUDA-path test, or fails the
// test when TERN_TEST_CUDA_BACKEND holds anything else. Use in a function returning void.
#define TERN_CUDA_TEST_BACKEND(variable)                                                           \
  const ::tern::testing::CudaTestBackend variable##_choice = ::tern::testing::cuda_test_backend(); \
  if (!variable##_choice.error.empty()) GTEST_FAIL() << variable##_choice.error;                   \
  const std::string& variable = variable##_choice.name
