#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tern::kernels {

// Element types of weights and activations. The values are GGML's type ids, so a GGUF tensor's
// type field converts directly. Block-quantized types store `block_elements` values in
// `block_bytes` bytes; plain types have blocks of one element.
enum class TensorType : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  bf16 = 30,
};

struct TensorTypeTraits {
  TensorType type;
  std::string_view name;  // as llama.cpp prints it: "Q8_0", "F16", ...
  std::int64_t block_elements;
  std::int64_t block_bytes;
};

// Traits of a GGML type id; nullopt for ids this build does not know (their sizes are unknown,
// so such a tensor cannot even be bounds-checked).
std::optional<TensorTypeTraits> tensor_type_traits(std::uint32_t ggml_type_id);
TensorTypeTraits tensor_type_traits(TensorType type);

std::string_view tensor_type_name(TensorType type);
std::optional<TensorType> tensor_type_from_name(std::string_view name);  // case-insensitive

// Bytes of `elements` values of `type`; nullopt when `elements` is not a whole number of blocks
// or the size overflows.
std::optional<std::uint64_t> tensor_bytes(TensorType type, std::uint64_t elements);

}  // namespace tern::kernels
