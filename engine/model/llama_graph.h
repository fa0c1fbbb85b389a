#pragma once

#include "engine/model/model_graph.h"

namespace tern::engine {

// The decoder of every supported architecture (llama, mistral, qwen2 with QKV bias, qwen3 with
// Q/K norms; Mixtral and Qwen3-MoE with routed experts; DeepSeek-V3 with latent attention and
// routed plus shared experts): pre-norm attention (grouped KV heads and RoPE, or latent), then a
// SwiGLU FFN (dense, or a mixture of experts), each added to the residual stream; the final norm
// and the output projection run only on the rows whose logits are wanted.
void llama_graph(const GraphSpec& spec, BatchOps& ops);

}  // namespace tern::engine
