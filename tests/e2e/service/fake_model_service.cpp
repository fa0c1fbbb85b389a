#include "tests/e2e/service/fake_model_service.h"

#include <algorithm>
#include <deque>
#include <utility>

#include <fmt/format.h>

namespace tern::service::testing {

struct FakeModelService::State {
  std::mutex mutex;
  std::deque<GenerationEvent> events;
  engine::ChannelWaker* waker = nullptr;
  std::atomic<bool> cancelled{false};
  bool finished = false;
  // Producer-side progress.
  int choices = 1;
  int max_tokens = 5;
  int produced = 0;  // tokens per choice so far
  int prompt_tokens = 0;
  bool fail = false;
  bool block = false;  // the first try_next() blocks its caller
  bool stop_finish = true;
  bool think = false;  // the first two tokens are reasoning
  bool tool = false;   // the last event calls a tool
  int cached_tokens = 0;

  void push(GenerationEvent event) {
    engine::ChannelWaker* to_wake = nullptr;
    {
      std::lock_guard lock(mutex);
      events.push_back(std::move(event));
      std::swap(to_wake, waker);
    }
    if (to_wake != nullptr) to_wake->wake();
  }
};

namespace {

class FakeStream final : public GenerationStream {
 public:
  FakeStream(std::shared_ptr<FakeModelService::State> state, std::atomic<int>& cancelled,
             std::atomic<bool>& blocking, std::chrono::milliseconds block_duration)
      : state_(std::move(state)),
        cancelled_(cancelled),
        blocking_(blocking),
        block_duration_(block_duration) {}
  ~FakeStream() override {
    if (!state_->finished) cancel();
  }

  std::optional<GenerationEvent> try_next() override {
    if (std::exchange(state_->block, false)) {
      blocking_.store(true);
      std::this_thread::sleep_for(block_duration_);
      blocking_.store(false);
    }
    std::lock_guard lock(state_->mutex);
    if (state_->events.empty()) return std::nullopt;
    GenerationEvent event = std::move(state_->events.front());
    state_->events.pop_front();
    if (event.kind == GenerationEvent::Kind::done || event.kind == GenerationEvent::Kind::error) {
      state_->finished = true;
    }
    if (event.kind == GenerationEvent::Kind::delta) ++delivered_tokens_;
    return event;
  }
  bool arm(engine::ChannelWaker& waker) override {
    std::lock_guard lock(state_->mutex);
    if (!state_->events.empty()) return false;
    state_->waker = &waker;
    return true;
  }
  bool disarm() override {
    std::lock_guard lock(state_->mutex);
    const bool had = state_->waker != nullptr;
    state_->waker = nullptr;
    return had;
  }
  void cancel() override {
    if (!state_->cancelled.exchange(true)) cancelled_.fetch_add(1);
  }
  int prompt_tokens() const override { return state_->prompt_tokens; }
  Usage usage_so_far() const override {
    return Usage{state_->prompt_tokens, delivered_tokens_, 0, 0};
  }

 private:
  int delivered_tokens_ = 0;
  std::shared_ptr<FakeModelService::State> state_;
  std::atomic<int>& cancelled_;
  std::atomic<bool>& blocking_;
  std::chrono::milliseconds block_duration_;
};

}  // namespace

FakeModelService::FakeModelService(Options options)
    : options_(options), producer_([this] { produce(); }) {}

FakeModelService::~FakeModelService() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  held_changed_.notify_all();
  producer_.join();
}

std::vector<ModelCard> FakeModelService::models() const {
  ModelCard card{"fake", "fake", 1700000000, 2048, "llama", "f32", "canned tokens"};
  ModelCard alias = card;
  alias.id = "fake-alias";
  return {card, alias};
}

std::vector<ModelStats> FakeModelService::stats() const {
  return {ModelStats{"fake", active_count(), 0, 0.25, 0.5}};
}

std::vector<api::ChatMessage> FakeModelService::last_chat_messages() const {
  std::lock_guard lock(mutex_);
  return last_chat_messages_;
}

int FakeModelService::held_count() const {
  std::lock_guard lock(mutex_);
  return held_;
}

int FakeModelService::holds_started() const {
  std::lock_guard lock(mutex_);
  return holds_started_;
}

void FakeModelService::release_held() {
  {
    std::lock_guard lock(mutex_);
    released_ = true;
  }
  held_changed_.notify_all();
}

void FakeModelService::hold_if_asked(const std::string& prompt) {
  if (prompt.find("HOLD") == std::string::npos) return;
  std::unique_lock lock(mutex_);
  ++held_;
  ++holds_started_;
  held_changed_.notify_all();
  held_changed_.wait(lock, [&] { return released_ || stopping_; });
  --held_;
}

int FakeModelService::active_count() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(active_.size());
}

api::ApiResult<std::unique_ptr<GenerationStream>> FakeModelService::start(
    const std::string& model, const std::string& prompt, int choices, std::optional<int> max_tokens,
    std::string& model_id) {
  if (model == "busy") return api::too_many_requests("The model's queue is full", 2);
  if (!model.empty() && model != "fake" && model != "fake-alias") {
    return api::model_not_found(model);
  }
  hold_if_asked(prompt);
  if (prompt.size() > 4000) return api::context_length_exceeded(4000, 16, 2048);
  model_id = model.empty() ? "fake" : model;
  auto state = std::make_shared<State>();
  state->choices = choices;
  state->max_tokens = max_tokens.value_or(options_.default_max_tokens);
  state->stop_finish = !max_tokens.has_value();
  state->prompt_tokens = static_cast<int>(prompt.size());
  state->fail = prompt.find("FAIL") != std::string::npos;
  state->block = prompt.find("BLOCK") != std::string::npos;
  state->think = prompt.find("THINK") != std::string::npos;
  state->tool = prompt.find("TOOL") != std::string::npos;
  if (prompt.find("CACHED") != std::string::npos) {
    state->cached_tokens = std::min(3, state->prompt_tokens);
  }
  started_.fetch_add(1);
  {
    std::lock_guard lock(mutex_);
    active_.push_back(state);
  }
  wake_.notify_all();
  return std::unique_ptr<GenerationStream>(
      std::make_unique<FakeStream>(state, cancelled_, blocking_, options_.block_duration));
}

api::ApiResult<std::unique_ptr<GenerationStream>> FakeModelService::start_chat(
    const api::ChatRequest& request, std::string& model_id) {
  {
    std::lock_guard lock(mutex_);
    last_chat_messages_ = request.messages;
  }
  std::string prompt;
  for (const auto& message : request.messages) prompt += message.content.value_or("");
  return start(request.model, prompt, request.sampling.n, request.sampling.max_tokens, model_id);
}

api::ApiResult<std::unique_ptr<GenerationStream>> FakeModelService::start_completion(
    const api::CompletionRequest& request, std::string& model_id) {
  std::string prompt;
  for (const auto& part : request.prompts) prompt += part.text;
  const int choices = request.sampling.n * static_cast<int>(request.prompts.size());
  return start(request.model, prompt, choices, request.sampling.max_tokens, model_id);
}

api::ApiResult<TokenizeResult> FakeModelService::tokenize(const api::TokenizeRequest& request) {
  if (!request.model.empty() && request.model != "fake") return api::model_not_found(request.model);
  TokenizeResult result;
  result.max_model_len = 2048;
  std::string text = request.prompt;
  if (request.is_chat) {
    text.clear();
    for (const auto& message : request.messages) text += message.content.value_or("");
  }
  hold_if_asked(text);
  for (const unsigned char c : text) {
    result.tokens.push_back(c);
    result.token_strs.emplace_back(1, static_cast<char>(c));
  }
  return result;
}

api::ApiResult<DetokenizeResult> FakeModelService::detokenize(
    const api::DetokenizeRequest& request) {
  DetokenizeResult result;
  for (const std::int32_t token : request.tokens) {
    if (token > 255) {
      return api::invalid_request("tokens", fmt::format("Token id {} is out of range", token));
    }
    result.prompt += static_cast<char>(token);
  }
  return result;
}

void FakeModelService::produce() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (active_.empty()) {
      wake_.wait(lock, [&] { return stopping_ || !active_.empty(); });
      continue;
    }
    std::vector<std::shared_ptr<State>> batch = active_;
    lock.unlock();
    std::vector<State*> done;
    for (const auto& state : batch) {
      if (state->cancelled.load()) {
        done.push_back(state.get());
        continue;
      }
      if (state->fail && state->produced == 1) {
        GenerationEvent error;
        error.kind = GenerationEvent::Kind::error;
        error.error = api::server_error("the fake engine failed on purpose");
        state->push(std::move(error));
        done.push_back(state.get());
        continue;
      }
      const bool last = state->produced + 1 >= state->max_tokens;
      for (int choice = 0; choice < state->choices; ++choice) {
        GenerationEvent event;
        event.kind = last ? GenerationEvent::Kind::finish : GenerationEvent::Kind::delta;
        event.index = choice;
        if (state->think && state->produced < 2) {
          event.reasoning = fmt::format("think{} ", state->produced);
        } else {
          event.text = fmt::format("tok{} ", state->produced);
          event.text.append(options_.token_padding_bytes, 'x');
          event.logprobs.push_back(TokenLogprob{event.text, -0.5, {{event.text, -0.5}, {"x", -2}}});
        }
        event.finish_reason =
            state->stop_finish ? ChoiceFinishReason::stop : ChoiceFinishReason::length;
        if (state->tool && last) {
          event.tool_calls.push_back(ToolCallOutput{0, fmt::format("fake{}", choice), "get_weather",
                                                    R"({"city":"Paris"})"});
          event.finish_reason = ChoiceFinishReason::tool_calls;
        }
        state->push(std::move(event));
      }
      ++state->produced;
      if (last) {
        GenerationEvent event;
        event.kind = GenerationEvent::Kind::done;
        event.usage =
            Usage{state->prompt_tokens, state->produced * state->choices, state->cached_tokens};
        state->push(std::move(event));
        done.push_back(state.get());
      }
    }
    lock.lock();
    std::erase_if(active_, [&](const std::shared_ptr<State>& state) {
      return std::find(done.begin(), done.end(), state.get()) != done.end();
    });
    wake_.wait_for(lock, options_.token_interval, [&] { return stopping_; });
  }
}

}  // namespace tern::service::testing
