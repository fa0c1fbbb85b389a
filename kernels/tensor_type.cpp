#include "kernels/tensor_type.h"

#include <array>
#include <cctype>
#include <limits>

namespace tern::kernels {
namespace {

constexpr std::array<TensorTypeTraits, 20> kTraits{{
    {TensorType::f32, "F32", 1, 4},       {TensorType::f16, "F16", 1, 2},
    {TensorType::q4_0, "Q4_0", 32, 18},   {TensorType::q4_1, "Q4_1", 32, 20},
    {TensorType::q5_0, "Q5_0", 32, 22},   {TensorType::q5_1, "Q5_1", 32, 24},
    {TensorType::q8_0, "Q8_0", 32, 34},   {TensorType::q8_1, "Q8_1", 32, 36},
    {TensorType::q2_k, "Q2_K", 256, 84},  {TensorType::q3_k, "Q3_K", 256, 110},
    {TensorType::q4_k, "Q4_K", 256, 144}, {TensorType::q5_k, "Q5_K", 256, 176},
    {TensorType::q6_k, "Q6_K", 256, 210}, {TensorType::q8_k, "Q8_K", 256, 292},
    {TensorType::i8, "I8", 1, 1},         {TensorType::i16, "I16", 1, 2},
    {TensorType::i32, "I32", 1, 4},       {TensorType::i64, "I64", 1, 8},
    {TensorType::f64, "F64", 1, 8},       {TensorType::bf16, "BF16", 1, 2},
}};

}  // namespace

std::optional<TensorTypeTraits> tensor_type_traits(std::uint32_t ggml_type_id) {
  for (const TensorTypeTraits& traits : kTraits) {
    if (static_cast<std::uint32_t>(traits.type) == ggml_type_id) return traits;
  }
  return std::nullopt;
}

TensorTypeTraits tensor_type_traits(TensorType type) {
  return *tensor_type_traits(static_cast<std::uint32_t>(type));
}

std::string_view tensor_type_name(TensorType type) {
  return tensor_type_traits(type).name;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const TensorTypeTraits& traits : kTraits) {
    if (traits.name.size() != name.size()) continue;
    bool equal = true;
    for (std::size_t i = 0; i < name.size(); ++i) {
      equal = equal && std::toupper(static_cast<unsigned char>(name[i])) == traits.name[i];
    }
    if (equal) return traits.type;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> tensor_bytes(TensorType type, std::uint64_t elements) {
  const TensorTypeTraits traits = tensor_type_traits(type);
  const auto block_elements = static_cast<std::uint64_t>(traits.block_elements);
  if (elements % block_elements != 0) return std::nullopt;
  const std::uint64_t blocks = elements / block_elements;
  const auto block_bytes = static_cast<std::uint64_t>(traits.block_bytes);
  if (blocks > std::numeric_limits<std::uint64_t>::max() / block_bytes) return std::nullopt;
  return blocks * block_bytes;
}

}  // namespace tern::kernels
