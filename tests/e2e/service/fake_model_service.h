#pragma once

// A ModelService without a model, for the server's tests: it streams canned tokens with a
// delay from one producer thread (like an engine thread) and records cancellations.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "service/model_service.h"

namespace tern::service::testing {

class FakeModelService final : public ModelService {
 public:
  struct Options {
    std::chrono::milliseconds token_interval{2};
    int default_max_tokens = 5;
    // Padding appended to every token's text, to make streams produce many bytes fast.
    std::size_t token_padding_bytes = 0;
    std::chrono::milliseconds block_duration{2000};
  };
  explicit FakeModelService(Options options);
  FakeModelService() : FakeModelService(Options{}) {}
  ~FakeModelService() override;

  std::vector<ModelCard> models() const override;
  std::vector<ModelStats> stats() const override;
  bool ready() const override { return ready_.load(); }
  // Model "fake" (alias "fake-alias"); model "busy" answers 429. Tokens are "tok0 ", "tok1 ",
  // ... one choice after another per step; a prompt containing "FAIL" ends in an error event.
  // A prompt containing "BLOCK" makes the server's first read of its events block the calling
  // (streams) thread for Options::block_duration. As an output parser would report them: with
  // "THINK" the first two tokens are reasoning ("think0 ", "think1 "); with "TOOL" the last
  // event also calls get_weather({"city":"Paris"}) and finishes with tool_calls; with "CACHED"
  // three prompt tokens come from the prefix cache. The prompt is the messages' contents
  // concatenated, one token per byte, and /tokenize of messages counts it the same way. A prompt
  // containing "HOLD" (chat, completion or /tokenize) holds its preparation, and so a thread of
  // the server's preparation pool, until release_held().
  api::ApiResult<std::unique_ptr<GenerationStream>> start_chat(const api::ChatRequest& request,
                                                               std::string& model_id) override;
  api::ApiResult<std::unique_ptr<GenerationStream>> start_completion(
      const api::CompletionRequest& request, std::string& model_id) override;
  api::ApiResult<TokenizeResult> tokenize(const api::TokenizeRequest& request) override;
  api::ApiResult<DetokenizeResult> detokenize(const api::DetokenizeRequest& request) override;

  void set_ready(bool ready) { ready_.store(ready); }
  int cancelled_count() const { return cancelled_.load(); }
  int active_count() const;
  int started_count() const { return started_.load(); }
  // The messages of the latest start_chat call, as the server built them.
  std::vector<api::ChatMessage> last_chat_messages() const;
  // True while a "BLOCK" stream holds the thread that reads it.
  bool blocking() const { return blocking_.load(); }
  // Preparations of "HOLD" prompts held now, and started so far.
  int held_count() const;
  int holds_started() const;
  // Lets every held preparation, and every later "HOLD" one, go on.
  void release_held();

  struct State;

 private:
  api::ApiResult<std::unique_ptr<GenerationStream>> start(const std::string& model,
                                                          const std::string& prompt, int choices,
                                                          std::optional<int> max_tokens,
                                                          std::string& model_id);
  void produce();
  // Waits for release_held() when `prompt` asks to be held.
  void hold_if_asked(const std::string& prompt);

  Options options_;
  std::atomic<bool> ready_{true};
  std::atomic<int> cancelled_{0};
  std::atomic<int> started_{0};
  std::atomic<bool> blocking_{false};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<State>> active_;
  std::vector<api::ChatMessage> last_chat_messages_;  // under mutex_
  bool stopping_ = false;
  int held_ = 0;           // under mutex_
  int holds_started_ = 0;  // under mutex_
  bool released_ = false;  // under mutex_
  std::condition_variable held_changed_;
  std::thread producer_;
};

}  // namespace tern::service::testing
