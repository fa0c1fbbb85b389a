#pragma once

// TERN_TEST_CUDA_BACKEND (cuda_test_backend.h) as a BackendKind for tests that build backends
// themselves, skipping where that backend cannot run: `cuda` on a machine without a GPU or in a
// build without CUDA skips with check_backend_available's reason.
#include "engine/backend/backend_factory.h"
#include "tests/support/cuda_test_backend.h"

// Declares `variable` (a tern::engine::BackendKind: cuda or cuda_emulated) and `variable_name`
// (its name) for this CUDA-path test; fails on a bad TERN_TEST_CUDA_BACKEND, skips when the backend
// cannot run here. Use in a function returning void.
#define TERN_REQUIRE_CUDA_TEST_BACKEND(variable)                                                  \
  TERN_CUDA_TEST_BACKEND(variable##_name);                                                        \
  const ::tern::engine::BackendKind variable = variable##_name == "cuda"                          \
                                                   ? ::tern::engine::BackendKind::cuda            \
                                                   : ::tern::engine::BackendKind::cuda_emulated;  \
  if (const ::tern::Status variable##_available =                                                 \
          ::tern::engine::check_backend_available(::tern::engine::BackendSpec{.kind = variable}); \
      !variable##_available.ok()) {                                                               \
    GTEST_SKIP() << ::tern::testing::kCudaTestBackendVariable << "=" << variable##_name           \
                 << ", but it cannot run here: " << variable##_available.message();               \
  }                                                                                               \
  static_assert(true)
