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
// as llama.cpp's quantizer does; norms, biases and expert routers stay F32. Experts are written
// as llama.cpp does, one 3-D tensor per kind (`ffn_{gate,up,down}_exps`, experts outermost), and
// DeepSeek's latent attention under `deepseek2`'s names (kv_b whole, or split per head as
// `attn_k_b`/`attn_v_b` when the input has it so). HF input gets GGUF metadata (architecture
// keys, tokenizer, chat template) and, for `llama` (Mixtral too), Q/K rows permuted to GGUF's
// interleaved RoPE layout; DeepSeek's are permuted only if its config says rotate-half.
Expected<QuantizeReport> quantize_model(const std::string& input, const std::string& output,
                                        kernels::TensorType type);

}  // namespace tern::engine
