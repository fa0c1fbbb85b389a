#pragma once

// What the GEMV and GEMM launchers (gemv.h, gemm.h) take: the weight descriptor, the activations
// (f32, Q8_1 blocks, or rounded to 16-bit floats), and the shape checks both launchers share. Host
// and device code (the block layout) include this.

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/cuda/weight_formats.h"
#include "kernels/host_device.h"
#include "kernels/tensor_type.h"

TERN_CUDA_NAMESPACE_BEGIN

constexpr bool reads_q8_1_activations(TensorType type) {
  return weight_block_elements(type) > 1;
}

// The alignment the kernels' loads need of the weight pointer: Q4_K rows are read as 16-byte
// vectors, F32 as floats, the rest (34-, 18- and 210-byte blocks) in 16-bit halves.
constexpr unsigned matmul_weight_alignment(TensorType type) {
  switch (type) {
    case TensorType::q4_k:
      return 16;
    case TensorType::f32:
      return 4;
    default:
      return 2;
  }
}

// Whether launch_gemv streams the rows through shared memory (gemv_staged_kernel.cuh): Q8_0 and
// Q4_0 rows that start 16-byte aligned, which they do when the matrix does and a row is whole
// groups of 8 blocks (8 x 34 and 8 x 18 bytes are multiples of 16).
TERN_HOST_DEVICE constexpr bool gemv_stages_format(TensorType type) {
  return type == TensorType::q8_0 || type == TensorType::q4_0;
}
TERN_HOST_DEVICE constexpr bool gemv_stages_rows(TensorType type, int cols,
                                                 std::uintptr_t address) {
  return gemv_stages_format(type) && cols % (8 * 32) == 0 && address % 16 == 0;
}

inline bool aligned_to(const void* pointer, unsigned alignment) {
  return reinterpret_cast<std::uintptr_t>(pointer) % alignment == 0;
}

// cudaErrorInvalidValue for a launch the kernels cannot run: an unsupported weight type, cols not
// a whole number of the type's blocks, rows of 2 GiB or more, a missing or misaligned pointer,
// negative sizes.
inline cudaError_t check_matmul_arguments(const DeviceWeights& w, const DeviceActivations& x,
                                          int tokens, const float* y) {
  const int block = weight_block_elements(w.type);
  if (block == 0 || w.rows <= 0 || w.cols <= 0 || w.cols % block != 0 || tokens < 0)
    return cudaErrorInvalidValue;
  // The kernels address bytes within a row with int.
  if (weight_row_bytes(w.type, w.cols) > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (w.data == nullptr || y == nullptr || !aligned_to(w.data, matmul_weight_alignment(w.type)) ||
      !aligned_to(y, alignof(float)))
    return cudaErrorInvalidValue;
  if (reads_q8_1_activations(w.type))
    return x.q8_1 != nullptr && aligned_to(x.q8_1, 8) ? cudaSuccess : cudaErrorInvalidValue;
  if (uses_float_mma(w)) {
    return x.rounded != nullptr && aligned_to(x.rounded, 16) && x.rounded_type == w.type
               ? cudaSuccess
               : cudaErrorInvalidValue;
  }
  return x.f32 != nullptr && aligned_to(x.f32, alignof(float)) ? cudaSuccess
                                                               : cudaErrorInvalidValue;
}

TERN_CUDA_NAMESPACE_END
