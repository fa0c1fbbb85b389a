#pragma once

// What the quantized GEMV and GEMM launchers (gemv.h, gemm.h) take: the weight descriptor, the
// activations in f32 and as Q8_1 blocks, and the shape checks both launchers share. Host and
// device code (the block layout) include this.

#include <cstdint>

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/weight_formats.h"
#include "kernels/tensor_type.h"

// Plain data, the same type in the nvcc and the emulated build.
namespace tern::kernels::cuda {

// 32 activation values quantized for integer dot products, after llama.cpp's Q8_1 but with a
// float scale and the exact integer sum: value i = d * qs[i], sum = qs[0] + ... + qs[31]. The
// sum lets Q4_0 and Q4_K weights, whose quants carry an offset, stay in integers.
struct BlockQ8_1 {
  float d;
  std::int32_t sum;
  std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8_1) == 40, "two scalars and 32 quants, 8-byte aligned quants");

inline constexpr int kQ8_1Block = 32;

// A weight matrix in device memory, row-major with rows = output features and cols = input
// features, each row cols values of `type` (GGUF/GGML block layout, kernels/cpu/quant_blocks.h).
struct DeviceWeights {
  TensorType type = TensorType::f32;
  int rows = 0;
  int cols = 0;
  const void* data = nullptr;
};

// The activations of a launch, row-major [tokens][cols]: f32 for F32/F16/BF16 weights,
// Q8_1 blocks ([tokens][cols / 32], from launch_quantize_activations_q8_1) for Q8_0, Q4_0, Q4_K
// and Q6_K weights. Only the one the weight type reads must be set.
struct DeviceActivations {
  const float* f32 = nullptr;
  const BlockQ8_1* q8_1 = nullptr;
};

}  // namespace tern::kernels::cuda

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
  return x.f32 != nullptr && aligned_to(x.f32, alignof(float)) ? cudaSuccess
                                                               : cudaErrorInvalidValue;
}

TERN_CUDA_NAMESPACE_END
