#pragma once

#include "engine/model/model_graph.h"

namespace tern::engine {

// The Llama family's decoder (llama, mistral, qwen2 with QKV bias, qwen3 with Q/K norms):
// pre-norm attention with grouped KV heads and RoPE, then a SwiGLU FFN, each added to the
// residual stream; the final norm and the output projection run only on the rows whose logits
// are wanted.
void llama_graph(const GraphSpec& spec, BatchOps& ops);

}  // namespace tern::engine
