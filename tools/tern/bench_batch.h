#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/backend_spec.h"
#include "engine/expected.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::tools {

// `tern bench --batch 1,4,16,32`: B requests of `prompt_tokens` random tokens generating
// `gen_tokens` each through one engine, as llama-batched-bench does. Prints a markdown table:
// B, PP t/s, TG t/s and the engine's own share (schedule + sample + detokenize) of step time.
// `backend` names the backend; its sizes are set here.
int bench_batch(const engine::ModelWeights& weights, const engine::Tokenizer* tokenizer,
                kernels::ThreadPool& pool, const engine::BackendSpec& backend,
                const std::vector<std::int32_t>& batch_sizes, std::int32_t prompt_tokens,
                std::int32_t gen_tokens,
                std::shared_ptr<const engine::grammar::TokenizedGrammar> grammar = nullptr);

// `--json-schema FILE`: the schema compiled for the model's vocabulary.
Expected<std::shared_ptr<const engine::grammar::TokenizedGrammar>> bench_grammar(
    const std::string& schema_path, const engine::Tokenizer* tokenizer,
    const engine::ModelConfig& config);

}  // namespace tern::tools
