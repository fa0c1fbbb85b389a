#pragma once

#include <cstdint>
#include <string>

#include "engine/backend/backend_spec.h"
#include "engine/model/model_weights.h"
#include "engine/sampling_params.h"
#include "engine/tokenizer/tokenizer.h"

namespace tern::tools {

struct GenerateBatchOptions {
  std::string prompts_file;
  std::int32_t parallel = 4;
  std::int32_t threads = 1;
  engine::BackendSpec backend;   // its sizes are set from `parallel` and the model's context
  std::int32_t max_tokens = 64;  // per line unless it says otherwise
  engine::SamplingParams sampling;
};

// `tern generate --prompts-file F.jsonl --parallel N`: every line through one engine, at most N
// in flight, one JSON line per prompt on stdout in input order. Returns the exit code.
int generate_batch(const engine::ModelWeights& weights, const engine::Tokenizer* tokenizer,
                   const GenerateBatchOptions& options);

}  // namespace tern::tools
