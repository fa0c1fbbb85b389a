#include "tests/support/scripted_model_service.h"

#include <algorithm>
#include <deque>
#include <utility>

#include <fmt/format.h>

#include "engine/stop_checker.h"
#include "engine/tokenizer/detokenizer.h"
#include "service/chat_output_parsers.h"
#include "service/parsing_generation_stream.h"
#include "tests/support/scripted_replies.h"

namespace tern::testing {

namespace api = service::api;
using service::ChoiceFinishReason;
using service::GenerationEvent;
using service::GenerationStream;

// One stream's events: `script` not yet released, `ready` for the server to read.
struct ScriptedModelService::Feed {
  std::mutex mutex;
  std::deque<GenerationEvent> script;
  std::deque<GenerationEvent> ready;
  engine::ChannelWaker* waker = nullptr;
  std::atomic<bool> cancelled{false};
  int prompt_tokens = 0;

  // Moves the next event to `ready`; false once nothing is left to release.
  bool release() {
    engine::ChannelWaker* to_wake = nullptr;
    bool more = false;
    {
      std::lock_guard lock(mutex);
      if (!script.empty()) {
        ready.push_back(std::move(script.front()));
        script.pop_front();
        std::swap(to_wake, waker);
      }
      more = !script.empty() && !cancelled.load();
    }
    if (to_wake != nullptr) to_wake->wake();
    return more;
  }
};

namespace {

class ScriptedStream final : public GenerationStream {
 public:
  explicit ScriptedStream(std::shared_ptr<ScriptedModelService::Feed> feed)
      : feed_(std::move(feed)) {}
  ~ScriptedStream() override { cancel(); }

  std::optional<GenerationEvent> try_next() override {
    std::lock_guard lock(feed_->mutex);
    if (feed_->ready.empty()) return std::nullopt;
    GenerationEvent event = std::move(feed_->ready.front());
    feed_->ready.pop_front();
    return event;
  }
  bool arm(engine::ChannelWaker& waker) override {
    std::lock_guard lock(feed_->mutex);
    if (!feed_->ready.empty()) return false;
    feed_->waker = &waker;
    return true;
  }
  bool disarm() override {
    std::lock_guard lock(feed_->mutex);
    return std::exchange(feed_->waker, nullptr) != nullptr;
  }
  void cancel() override { feed_->cancelled.store(true); }
  int prompt_tokens() const override { return feed_->prompt_tokens; }

 private:
  std::shared_ptr<ScriptedModelService::Feed> feed_;
};

// The reply's tokens as the engine would report them (engine/generation.cpp describe_token):
// each token's text through the detokenizer and the stop strings; finish at a stop string, at
// max_tokens, or at the end-of-turn token that follows the script.
std::deque<GenerationEvent> token_events(const engine::Tokenizer& tokenizer,
                                         const ScriptedReply& reply, int max_tokens,
                                         const std::vector<std::string>& stop, int& generated) {
  std::vector<std::int32_t> ids = tokenizer.encode(reply.text, false);
  const std::vector<std::int32_t> eos = tokenizer.eos_ids();
  ids.push_back(eos.empty() ? 0 : eos.front());
  engine::Detokenizer detokenizer(tokenizer, false);
  engine::StopChecker stops(stop);
  std::deque<GenerationEvent> events;
  const auto flush = [&](std::string& text) {
    const engine::StopChecker::Result checked = stops.push(detokenizer.flush());
    text.append(checked.text);
    if (!checked.stopped) text.append(stops.flush());
  };
  generated = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (generated == reply.fail_after_tokens) {
      GenerationEvent& error = events.emplace_back();
      error.kind = GenerationEvent::Kind::error;
      error.error = api::server_error("The scripted model failed on purpose");
      break;
    }
    ++generated;
    GenerationEvent& event = events.emplace_back();
    if (i + 1 == ids.size()) {  // the end-of-turn token: its text is not output
      event.kind = GenerationEvent::Kind::finish;
      flush(event.text);
      break;
    }
    const engine::StopChecker::Result checked = stops.push(detokenizer.push(ids[i]));
    event.text.assign(checked.text);
    if (checked.stopped) {
      event.kind = GenerationEvent::Kind::finish;
      event.stop_sequence.assign(checked.matched);
      break;
    }
    if (generated >= max_tokens) {
      event.kind = GenerationEvent::Kind::finish;
      event.finish_reason = ChoiceFinishReason::length;
      flush(event.text);
      break;
    }
  }
  return events;
}

bool has_assistant_turn(const std::vector<api::ChatMessage>& messages) {
  return std::ranges::any_of(messages, [](const api::ChatMessage& message) {
    return message.role == api::ChatRole::assistant;
  });
}

}  // namespace

ScriptedModelService::ScriptedModelService(std::unique_ptr<engine::Tokenizer> tokenizer,
                                           std::chrono::milliseconds token_interval)
    : tokenizer_(std::move(tokenizer)),
      token_interval_(token_interval),
      pacer_([this] { pace(); }) {}

ScriptedModelService::~ScriptedModelService() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  pacer_.join();
}

std::vector<service::ModelCard> ScriptedModelService::models() const {
  return {service::ModelCard{kModel, kModel, 1700000000, kContextLength, "qwen3", "bf16",
                             "scripted replies through the Qwen3 tokenizer"}};
}

std::vector<service::ModelStats> ScriptedModelService::stats() const {
  return {service::ModelStats{kModel}};
}

api::ApiResult<std::unique_ptr<GenerationStream>> ScriptedModelService::start_chat(
    const api::ChatRequest& request, std::string& model_id) {
  if (!request.model.empty() && request.model != kModel) {
    return api::model_not_found(request.model);
  }
  model_id = kModel;
  auto feed = std::make_shared<Feed>();
  const std::string prompt = conversation_text(request.messages, request.tools);
  feed->prompt_tokens = static_cast<int>(tokenizer_->encode(prompt, false).size());
  int generated = 0;
  feed->script = token_events(*tokenizer_, scripted_reply(request.messages),
                              request.sampling.max_tokens.value_or(kDefaultMaxTokens),
                              request.sampling.stop, generated);
  if (feed->script.back().kind != GenerationEvent::Kind::error) {
    GenerationEvent& done = feed->script.emplace_back();
    done.kind = GenerationEvent::Kind::done;
    const int cached = has_assistant_turn(request.messages) ? feed->prompt_tokens / 2 : 0;
    done.usage = service::Usage{feed->prompt_tokens, generated, cached};
  }
  {
    std::lock_guard lock(mutex_);
    feeds_.push_back(feed);
  }
  wake_.notify_all();

  // A Qwen3 model's parsers, through the service's own choice of what the request turns on; the
  // scripts open their reasoning themselves, so no prompt ends in `<think>`.
  service::OutputParserSpec parsers = service::output_parsers_for(request, "hermes", "qwen3", "");
  return std::unique_ptr<GenerationStream>(std::make_unique<service::ParsingGenerationStream>(
      std::make_unique<ScriptedStream>(std::move(feed)), std::move(parsers)));
}

api::ApiResult<std::unique_ptr<GenerationStream>> ScriptedModelService::start_completion(
    const api::CompletionRequest&, std::string&) {
  return api::invalid_request("prompt", "The scripted model only answers chat requests");
}

api::ApiResult<service::TokenizeResult> ScriptedModelService::tokenize(
    const api::TokenizeRequest& request) {
  if (!request.model.empty() && request.model != kModel) {
    return api::model_not_found(request.model);
  }
  service::TokenizeResult result;
  result.max_model_len = kContextLength;
  result.tokens = request.is_chat ? tokenizer_->encode(
                                        conversation_text(request.messages, request.tools), false)
                                  : tokenizer_->encode(request.prompt, request.add_special_tokens);
  if (request.return_token_strs) {
    for (const std::int32_t id : result.tokens) {
      result.token_strs.emplace_back(tokenizer_->token_text(id));
    }
  }
  return result;
}

api::ApiResult<service::DetokenizeResult> ScriptedModelService::detokenize(
    const api::DetokenizeRequest& request) {
  if (!request.model.empty() && request.model != kModel) {
    return api::model_not_found(request.model);
  }
  return service::DetokenizeResult{tokenizer_->decode(request.tokens, false)};
}

// Releases one event per stream per interval, like an engine step.
void ScriptedModelService::pace() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (feeds_.empty()) {
      wake_.wait(lock, [&] { return stopping_ || !feeds_.empty(); });
      continue;
    }
    std::vector<std::shared_ptr<Feed>> feeds = feeds_;
    lock.unlock();
    std::vector<Feed*> finished;
    for (const auto& feed : feeds) {
      bool more = feed->release();
      while (more && token_interval_.count() == 0) more = feed->release();
      if (!more) finished.push_back(feed.get());
    }
    lock.lock();
    std::erase_if(feeds_, [&](const std::shared_ptr<Feed>& feed) {
      return std::ranges::find(finished, feed.get()) != finished.end();
    });
    wake_.wait_for(lock, token_interval_, [&] { return stopping_; });
  }
}

}  // namespace tern::testing
