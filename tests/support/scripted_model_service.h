#pragma once

// A ModelService whose "model" answers from a script (tests/support/scripted_replies.h): the
// script's text is tokenized with a real tokenizer (Qwen3's) and streamed a token at a time,
// each token's text through an engine::Detokenizer as the engine writes it, with max_tokens
// and stop strings applied, then read back by the same output parsers (hermes, qwen3) that
// EngineModelService puts over a Qwen3 model. tern_scripted_server serves it to the official
// SDKs (tests/e2e/sdk_clients).
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "service/model_service.h"

namespace tern::testing {

class ScriptedModelService final : public service::ModelService {
 public:
  static constexpr const char* kModel = "qwen3-scripted";
  static constexpr int kContextLength = 32768;
  static constexpr int kDefaultMaxTokens = 1024;

  // One event is released per stream every `token_interval` (zero: as fast as read).
  ScriptedModelService(std::unique_ptr<engine::Tokenizer> tokenizer,
                       std::chrono::milliseconds token_interval);
  ~ScriptedModelService() override;

  std::vector<service::ModelCard> models() const override;
  std::vector<service::ModelStats> stats() const override;
  bool ready() const override { return true; }

  // The prompt is conversation_text() of the messages and tools; its token count is the usage's
  // prompt_tokens and what tokenize() of the same messages returns. A conversation that already
  // holds an assistant turn reports half of its prompt as read from the prefix cache.
  service::api::ApiResult<std::unique_ptr<service::GenerationStream>> start_chat(
      const service::api::ChatRequest& request, std::string& model_id) override;
  // Text completions are not scripted: a 400.
  service::api::ApiResult<std::unique_ptr<service::GenerationStream>> start_completion(
      const service::api::CompletionRequest& request, std::string& model_id) override;
  service::api::ApiResult<service::TokenizeResult> tokenize(
      const service::api::TokenizeRequest& request) override;
  service::api::ApiResult<service::DetokenizeResult> detokenize(
      const service::api::DetokenizeRequest& request) override;

  struct Feed;

 private:
  void pace();

  std::unique_ptr<engine::Tokenizer> tokenizer_;
  std::chrono::milliseconds token_interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Feed>> feeds_;  // streams with events still to release
  bool stopping_ = false;
  std::thread pacer_;
};

}  // namespace tern::testing
