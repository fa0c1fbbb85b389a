#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "service/api/json_writer.h"
#include "service/generation_stream.h"

namespace tern::service::api {

// What every response object of one request repeats.
struct ResponseMeta {
  std::string id;  // chatcmpl-... or cmpl-...
  std::int64_t created = 0;
  std::string model;
};

// One finished choice of a non-streamed response.
struct ChoiceOutput {
  std::string reasoning;  // from an output parser; see GenerationEvent
  std::string text;
  std::vector<ToolCallOutput> tool_calls;
  // Per call, the length `text` had when the call came: text after it was written after it.
  std::vector<std::size_t> tool_call_text_offsets;
  std::vector<TokenLogprob> logprobs;
  // Where in `text` the first logprob token starts: after an echoed prompt, its length.
  std::size_t logprobs_text_offset = 0;
  ChoiceFinishReason finish_reason = ChoiceFinishReason::stop;
  std::string stop_sequence;  // the stop string that ended it, if one did
};

// A fresh id such as "chatcmpl-3f9c..." (prefix plus 32 random hex digits).
std::string make_response_id(std::string_view prefix);

}  // namespace tern::service::api
