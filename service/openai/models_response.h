#pragma once

#include <string>
#include <vector>

#include "service/model_service.h"

namespace tern::service::openai {

// GET /v1/models: {"object":"list","data":[model objects]}.
// Configured models that are not serving are listed apart, under "tern_unavailable", as
// {"id","status":"loading"|"failed"}, so clients see only what they can use in "data".
std::string encode_model_list(const std::vector<ModelCard>& models,
                              const std::vector<ModelUnavailable>& unavailable = {});
// GET /v1/models/{id}: one model object. The tern-specific metadata sits under "tern".
std::string encode_model(const ModelCard& model);

// POST /tokenize and /detokenize responses, as in vLLM.
std::string encode_tokenize(const TokenizeResult& result, bool with_token_strs);
std::string encode_detokenize(const DetokenizeResult& result);

}  // namespace tern::service::openai
