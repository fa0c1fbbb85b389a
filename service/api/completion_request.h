#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/grammar_spec.h"
#include "service/api/sampling_request.h"

namespace tern::service::api {

// One prompt of a completion request: text, or token ids when is_token_ids.
struct CompletionPrompt {
  std::string text;
  std::vector<std::int32_t> token_ids;
  bool is_token_ids = false;
};

// POST /v1/completions. `prompt` may be a string, an array of strings, an array of token ids or
// an array of token-id arrays; each prompt gets `n` choices, numbered prompt * n + i.
struct CompletionRequest {
  std::string model;  // empty: the server's default model
  std::vector<CompletionPrompt> prompts;
  SamplingRequest sampling;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;
  std::optional<int> logprobs;  // how many alternatives per token, 0..20
  std::string user;
  bool add_special_tokens = true;
  engine::grammar::GrammarSpec structured_output;
  std::string client;  // not from the body: see ChatRequest::client
};

}  // namespace tern::service::api
