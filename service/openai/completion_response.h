#pragma once

#include <optional>
#include <string>
#include <vector>

#include "service/api/chunk_encoder.h"
#include "service/api/response_common.h"

namespace tern::service::openai {

// A non-streamed text_completion object. `logprobs` is the request's count, or nullopt for
// "logprobs": null on every choice.
std::string encode_text_completion(const api::ResponseMeta& meta,
                                   const std::vector<api::ChoiceOutput>& choices,
                                   const Usage& usage, std::optional<int> logprobs);

// Streamed text_completion chunks: text deltas, a finish_reason chunk per choice, a usage chunk
// when include_usage, then [DONE]. Each call appends whole SSE events to `out`.
class CompletionChunkEncoder final : public api::ChunkEncoder {
 public:
  CompletionChunkEncoder(api::ResponseMeta meta, bool include_usage, std::optional<int> logprobs)
      : meta_(std::move(meta)), include_usage_(include_usage), logprobs_(logprobs) {}

  void delta(std::string& out, const GenerationEvent& event) override;
  void finish(std::string& out, int index, ChoiceFinishReason reason,
              std::string_view stop_sequence = {}) override;
  void done(std::string& out, const Usage& usage) override;

 private:
  void chunk(std::string& out, int index, std::string_view text,
             const std::vector<TokenLogprob>* logprobs, const ChoiceFinishReason* reason);

  api::ResponseMeta meta_;
  bool include_usage_;
  std::optional<int> logprobs_;
  std::vector<std::size_t> text_offset_;  // per choice: characters sent so far
};

// {"tokens","token_logprobs","top_logprobs","text_offset"}, offsets counted from `offset`.
void write_completion_logprobs(api::JsonWriter& json, const std::vector<TokenLogprob>& logprobs,
                               std::size_t offset);

}  // namespace tern::service::openai
