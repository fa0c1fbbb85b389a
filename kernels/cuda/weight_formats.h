#pragma once

// The weight formats the CUDA kernels read, in one list, with their block shapes (GGML's layouts,
// kernels/cpu/quant_blocks.h), and the dispatch from a run-time type to a kernel instantiated per
// format. Host and device code include this.

#include <type_traits>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/host_device.h"
#include "kernels/tensor_type.h"

// Every format with a CUDA kernel instantiation; X(name) for TensorType::name.
#define TERN_CUDA_WEIGHT_FORMATS(X) X(f32) X(f16) X(bf16) X(q8_0) X(q4_0) X(q4_k) X(q6_k)

TERN_CUDA_NAMESPACE_BEGIN

template <TensorType kType>
struct WeightFormat;
template <>
struct WeightFormat<TensorType::f32> {
  static constexpr int kBlockElements = 1;
  static constexpr int kBlockBytes = 4;
};
template <>
struct WeightFormat<TensorType::f16> {
  static constexpr int kBlockElements = 1;
  static constexpr int kBlockBytes = 2;
};
template <>
struct WeightFormat<TensorType::bf16> {
  static constexpr int kBlockElements = 1;
  static constexpr int kBlockBytes = 2;
};
template <>
struct WeightFormat<TensorType::q8_0> {
  static constexpr int kBlockElements = kQ8_0Block;
  static constexpr int kBlockBytes = sizeof(BlockQ8_0);
};
template <>
struct WeightFormat<TensorType::q4_0> {
  static constexpr int kBlockElements = kQ4_0Block;
  static constexpr int kBlockBytes = sizeof(BlockQ4_0);
};
template <>
struct WeightFormat<TensorType::q4_k> {
  static constexpr int kBlockElements = kSuperBlock;
  static constexpr int kBlockBytes = sizeof(BlockQ4K);
};
template <>
struct WeightFormat<TensorType::q6_k> {
  static constexpr int kBlockElements = kSuperBlock;
  static constexpr int kBlockBytes = sizeof(BlockQ6K);
};

// Bytes of a row of n elements of kType (n a whole number of blocks).
template <TensorType kType>
TERN_HOST_DEVICE constexpr long long weight_row_bytes(long long n) {
  return n / WeightFormat<kType>::kBlockElements * WeightFormat<kType>::kBlockBytes;
}

// Elements per block of a run-time type, 0 for a format no CUDA kernel reads.
TERN_HOST_DEVICE constexpr int weight_block_elements(TensorType type) {
  switch (type) {
#define TERN_WEIGHT_BLOCK_ELEMENTS(name) \
  case TensorType::name:                 \
    return WeightFormat<TensorType::name>::kBlockElements;
    TERN_CUDA_WEIGHT_FORMATS(TERN_WEIGHT_BLOCK_ELEMENTS)
#undef TERN_WEIGHT_BLOCK_ELEMENTS
    default:
      return 0;
  }
}

// Bytes of a row of n elements of a run-time type (n a whole number of blocks), 0 when no CUDA
// kernel reads the format.
TERN_HOST_DEVICE constexpr long long weight_row_bytes(TensorType type, long long n) {
  switch (type) {
#define TERN_WEIGHT_ROW_BYTES(name) \
  case TensorType::name:            \
    return weight_row_bytes<TensorType::name>(n);
    TERN_CUDA_WEIGHT_FORMATS(TERN_WEIGHT_ROW_BYTES)
#undef TERN_WEIGHT_ROW_BYTES
    default:
      return 0;
  }
}

// launch(std::integral_constant<TensorType, type>{}) for the run-time type, so the launch can
// pick the kernel instantiated for it; `unsupported` for a format no kernel reads.
template <class Result, class Launch>
Result with_weight_format(TensorType type, Result unsupported, Launch&& launch) {
  switch (type) {
#define TERN_WEIGHT_FORMAT_CASE(name) \
  case TensorType::name:              \
    return launch(std::integral_constant<TensorType, TensorType::name>{});
    TERN_CUDA_WEIGHT_FORMATS(TERN_WEIGHT_FORMAT_CASE)
#undef TERN_WEIGHT_FORMAT_CASE
    default:
      return unsupported;
  }
}

TERN_CUDA_NAMESPACE_END
