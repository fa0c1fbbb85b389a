#pragma once

#include <cstdint>

#include "kernels/tensor_type.h"

namespace tern::kernels {

// Row conversions between f32 and the weight formats the CPU matmul reads: F32, F16, BF16, Q8_0,
// Q4_0, Q4_K and Q6_K (block layouts in quant_blocks.h, identical to GGML's). Q8_K, the
// activation format of K-quant dot products, converts too.

// Expands n values of `type` at src into dst. n must be a whole number of blocks and the type one
// of the above; the function asserts both (callers validate tensors at load time).
void dequantize_row(TensorType type, const void* src, float* dst, std::int64_t n);

// Encodes n floats as `type`. False when n is not a whole number of blocks or the type is not
// supported. The K-quant scales come from a direct min/max search, not llama.cpp's iterative one,
// so files quantized here are valid but slightly less accurate than llama-quantize's.
bool quantize_row(TensorType type, const float* src, void* dst, std::int64_t n);

// Whether matmul() takes weights of this type.
bool is_matmul_supported(TensorType type);

}  // namespace tern::kernels
