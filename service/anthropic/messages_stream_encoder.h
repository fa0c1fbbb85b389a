#pragma once

// The streamed answer of POST /v1/messages in Anthropic's event sequence: message_start; per
// content block content_block_start, its deltas (thinking_delta then one signature_delta,
// text_delta, or input_json_delta) and content_block_stop; message_delta with stop_reason and
// usage; message_stop. `event: ping` keeps an idle stream (a long prefill) alive, and a failure
// after the headers is an `event: error`.
#include <string>

#include "service/api/chunk_encoder.h"
#include "service/api/response_common.h"

namespace tern::service::anthropic {

class MessagesStreamEncoder final : public api::ChunkEncoder {
 public:
  explicit MessagesStreamEncoder(api::ResponseMeta meta) : meta_(std::move(meta)) {}

  void start(std::string& out, int prompt_tokens) override;
  // Opens a block when the kind of output changes: thinking, text, and one block per tool call.
  void delta(std::string& out, const GenerationEvent& event) override;
  void finish(std::string& out, int index, ChoiceFinishReason reason,
              std::string_view stop_sequence = {}) override;
  void done(std::string& out, const Usage& usage) override;
  void error(std::string& out, const api::ApiError& error) override;
  void keepalive(std::string& out) override;

 private:
  enum class Block { none, thinking, text };

  void open(std::string& out, Block block);
  void close(std::string& out);

  api::ResponseMeta meta_;
  Block open_ = Block::none;
  int next_index_ = 0;  // the next content block's index
  ChoiceFinishReason reason_ = ChoiceFinishReason::stop;
  std::string stop_sequence_;
};

}  // namespace tern::service::anthropic
