#include "engine/request.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tern::engine {

std::string_view to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      break;
  }
  return "error";
}

namespace detail {

void BlockingWaker::wake() {
  signalled_.store(1, std::memory_order_release);
  signalled_.notify_one();
}

void BlockingWaker::wait() {
  signalled_.wait(0, std::memory_order_acquire);
  signalled_.store(0, std::memory_order_relaxed);
}

}  // namespace detail

std::optional<RequestEvent> RequestHandle::try_next() {
  std::optional<RequestEvent> event = channel_->events.try_pop();
  // A sample paused for room in this channel resumes once there is some.
  if (event && channel_->engine_waiting_for_room.load(std::memory_order_seq_cst) &&
      channel_->engine_waiting_for_room.exchange(false, std::memory_order_seq_cst)) {
    channel_->engine->wake();
  }
  return event;
}

RequestEvent RequestHandle::next() {
  for (;;) {
    if (std::optional<RequestEvent> event = try_next()) return std::move(*event);
    // The waker lives in the shared channel, so it outlives a wake() still running after ours.
    if (channel_->events.arm(channel_->blocking_waker)) channel_->blocking_waker.wait();
  }
}

void RequestHandle::cancel() {
  channel_->cancel_requested.store(true, std::memory_order_release);
  channel_->engine->wake();
}

std::size_t event_channel_capacity(std::size_t per_request, std::int32_t n) {
  return std::max<std::size_t>(per_request, 2) + static_cast<std::size_t>(std::max(n, 1)) - 1;
}

namespace {

Error field_error(std::string_view field, std::string_view message,
                  ErrorKind kind = ErrorKind::invalid_field) {
  return Error{fmt::format("{}: {}", field, message), kind, std::string(field)};
}

bool valid_token(std::int32_t token, const RequestLimits& limits) {
  return token >= 0 && token < limits.vocab_size;
}

Status validate_sampling(const SamplingParams& sampling, const RequestLimits& limits) {
  if (std::isnan(sampling.temperature) || sampling.temperature < 0) {
    return field_error("temperature", fmt::format("must be >= 0, got {}", sampling.temperature));
  }
  if (sampling.top_k < 0) {
    return field_error("top_k",
                       fmt::format("must be >= 0 (0 disables it), got {}", sampling.top_k));
  }
  if (std::isnan(sampling.top_p) || sampling.top_p <= 0 || sampling.top_p > 1) {
    return field_error("top_p", fmt::format("must be in (0, 1], got {}", sampling.top_p));
  }
  if (std::isnan(sampling.min_p) || sampling.min_p < 0 || sampling.min_p > 1) {
    return field_error("min_p", fmt::format("must be in [0, 1], got {}", sampling.min_p));
  }
  if (!std::isfinite(sampling.repetition_penalty) || sampling.repetition_penalty <= 0) {
    return field_error("repetition_penalty",
                       fmt::format("must be > 0, got {}", sampling.repetition_penalty));
  }
  for (const auto& [field, value] : {std::pair{"presence_penalty", sampling.presence_penalty},
                                     std::pair{"frequency_penalty", sampling.frequency_penalty}}) {
    if (std::isnan(value) || value < -2 || value > 2) {
      return field_error(field, fmt::format("must be in [-2, 2], got {}", value));
    }
  }
  for (const auto& [token, bias] : sampling.logit_bias) {
    if (!valid_token(token, limits)) {
      return field_error("logit_bias", fmt::format("unknown token id {}", token));
    }
    if (std::isnan(bias) || bias < -100 || bias > 100) {
      return field_error(
          "logit_bias",
          fmt::format("bias of token {} must be in [-100, 100], got {}", token, bias));
    }
  }
  if (sampling.top_logprobs < 0 || sampling.top_logprobs > kMaxTopLogprobs) {
    return field_error("top_logprobs", fmt::format("must be in [0, {}], got {}", kMaxTopLogprobs,
                                                   sampling.top_logprobs));
  }
  return Status::success();
}

Status validate_stop(const StopCondition& stop, std::size_t prompt_tokens,
                     const RequestLimits& limits) {
  if (stop.max_tokens < 1) {
    return field_error("max_tokens", fmt::format("must be >= 1, got {}", stop.max_tokens));
  }
  if (stop.min_tokens < 0 || stop.min_tokens > stop.max_tokens) {
    return field_error("min_tokens", fmt::format("must be in [0, max_tokens = {}], got {}",
                                                 stop.max_tokens, stop.min_tokens));
  }
  if (prompt_tokens + static_cast<std::size_t>(stop.max_tokens) >
      static_cast<std::size_t>(limits.context_length)) {
    return field_error("max_tokens",
                       fmt::format("the prompt's {} tokens plus max_tokens {} exceed the model's "
                                   "context of {} tokens",
                                   prompt_tokens, stop.max_tokens, limits.context_length),
                       ErrorKind::context_length);
  }
  for (const std::int32_t token : stop.stop_token_ids) {
    if (!valid_token(token, limits)) {
      return field_error("stop_token_ids", fmt::format("unknown token id {}", token));
    }
  }
  if (stop.stop_strings.size() > kMaxStopStrings) {
    return field_error("stop", fmt::format("at most {} stop strings, got {}", kMaxStopStrings,
                                           stop.stop_strings.size()));
  }
  for (const std::string& text : stop.stop_strings) {
    if (text.empty()) return field_error("stop", "stop strings must not be empty");
  }
  if (!stop.stop_strings.empty() && !limits.has_tokenizer) {
    return field_error("stop", "stop strings need the model's tokenizer, which is not loaded");
  }
  return Status::success();
}

}  // namespace

Status validate_request(const Request& request, const RequestLimits& limits) {
  if (request.prompt_ids.empty()) return field_error("prompt", "the prompt has no tokens");
  for (const std::int32_t token : request.prompt_ids) {
    if (!valid_token(token, limits)) {
      return field_error("prompt", fmt::format("token id {} is outside the vocabulary of {}", token,
                                               limits.vocab_size));
    }
  }
  if (request.n < 1 || request.n > kMaxParallelSamples) {
    return field_error("n",
                       fmt::format("must be in [1, {}], got {}", kMaxParallelSamples, request.n));
  }
  if (Status status = validate_sampling(request.sampling, limits); !status.ok()) return status;
  return validate_stop(request.stop, request.prompt_ids.size(), limits);
}

}  // namespace tern::engine
