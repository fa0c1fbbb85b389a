#pragma once

// The streamed answer of POST /v1/responses in OpenAI's event order, each event numbered by
// `sequence_number` from 0: response.created, response.in_progress; per output item
// response.output_item.added, its part and deltas, and response.output_item.done; then
// response.completed, response.incomplete (max_output_tokens) or response.failed. The openai
// SDKs' stream accumulators index deltas by output_index and content_index, so an item and its
// content part are always announced before their first delta.
//
// Item events: a reasoning item has one reasoning_text part (content_part.added,
// reasoning_text.delta …, reasoning_text.done, content_part.done); a message one output_text
// part (content_part.added, output_text.delta …, output_text.done, content_part.done); a
// function call arrives whole from the output parser, so function_call_arguments.delta carries
// all its arguments at once before function_call_arguments.done.
#include <functional>
#include <string>
#include <vector>

#include "service/api/chunk_encoder.h"
#include "service/api/response_common.h"
#include "service/responses/response_object.h"
#include "service/responses/responses_request.h"

namespace tern::service::responses {

// Called once with a completed or incomplete response (its id, the Response object and its
// output), to keep it for GET and previous_response_id; never for a failed one.
using ResponseFinished = std::function<void(const std::string& id, const std::string& json,
                                            const std::vector<OutputItem>& output)>;

class ResponsesStreamEncoder final : public api::ChunkEncoder {
 public:
  ResponsesStreamEncoder(api::ResponseMeta meta, ResponseSettings settings,
                         ResponseFinished on_finished)
      : meta_(std::move(meta)),
        settings_(std::move(settings)),
        on_finished_(std::move(on_finished)) {}

  void start(std::string& out, int prompt_tokens) override;
  // Opens an item when the kind of output changes: reasoning, message, one per function call.
  void delta(std::string& out, const GenerationEvent& event) override;
  void finish(std::string& out, int index, ChoiceFinishReason reason,
              std::string_view stop_sequence = {}) override;
  void done(std::string& out, const Usage& usage) override;
  // response.failed, with the error as the response's `error`; no [DONE], as OpenAI sends none.
  void error(std::string& out, const api::ApiError& error) override;

 private:
  void open(std::string& out, OutputItem::Type type);
  // Ends the open item; `cut_short` (max_output_tokens, a failure) marks it incomplete.
  void close(std::string& out, bool cut_short = false);
  void add_call(std::string& out, const ToolCallOutput& call);
  void lifecycle(std::string& out, std::string_view type, const ResponseState& state);

  api::ResponseMeta meta_;
  ResponseSettings settings_;
  ResponseFinished on_finished_;
  std::vector<OutputItem> output_;
  bool open_ = false;  // output_.back() still takes deltas
  int sequence_ = 0;
  ChoiceFinishReason reason_ = ChoiceFinishReason::stop;
};

}  // namespace tern::service::responses
