#pragma once

#include <string>

#include "engine/grammar/grammar_spec.h"
#include "service/api/sampling_request.h"

namespace tern::service::api {

// What a chat and a text completion request share: the model, how to sample and stop, how to
// answer (streamed, with a usage chunk), who asks, and what the answer must be.
struct GenerationRequest {
  std::string model;  // empty: the server's default model
  SamplingRequest sampling;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  // Structured output: what the answer must be (response_format and its relatives).
  engine::grammar::GrammarSpec structured_output;
  // Not from the body: who is asking (the API key, or the address without keys), for the
  // per-client share of the waiting queue. Set by the server.
  std::string client;
};

}  // namespace tern::service::api
