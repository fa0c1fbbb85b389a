#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "service/api/generation_request.h"

namespace tern::service::api {

// One prompt of a completion request: text, or token ids when is_token_ids.
struct CompletionPrompt {
  std::string text;
  std::vector<std::int32_t> token_ids;
  bool is_token_ids = false;
};

// POST /v1/completions. `prompt` may be a string, an array of strings, an array of token ids or
// an array of token-id arrays; each prompt gets `n` choices, numbered prompt * n + i.
struct CompletionRequest : GenerationRequest {
  std::vector<CompletionPrompt> prompts;
  bool echo = false;
  std::optional<int> logprobs;  // how many alternatives per token, 0..20
  bool add_special_tokens = true;
};

}  // namespace tern::service::api
