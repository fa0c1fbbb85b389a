#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "engine/expected.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

struct QuantizeReport {
  std::map<std::string, int> tensors_by_type;  // "Q4_K" -> count
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;
};

// Converts a GGUF file or a Hugging Face directory into a GGUF file whose matrices have `type`
// (F16, Q8_0, Q4_0, Q4_K or Q6_K). A matrix whose rows are not a whole number of `type` blocks
// falls back to the nearest type that fits (Q4_K -> Q4_0 -> Q8_0 -> F16, Q6_K -> Q8_0 -> F16),
// as llama.cpp's quantizer does; norms and biases stay F32. HF input gets GGUF metadata
// (architecture keys, tokenizer, chat template) and, for `llama`, Q/K rows permuted to GGUF's
// interleaved RoPE layout.
Expected<QuantizeReport> quantize_model(const std::string& input, const std::string& output,
                                        kernels::TensorType type);

}  // namespace tern::engine
