#include "service/engine_request_builder.h"

#include "service/engine_error.h"

#include <random>

namespace tern::service {
namespace {

// Completions without max_tokens get 16 tokens, as OpenAI's legacy endpoint and vLLM do; chat
// gets whatever the context leaves.
constexpr int kCompletionDefaultMaxTokens = 16;

template <typename T>
float pick(const std::optional<double>& requested, const std::optional<double>& configured,
           const std::optional<T>& model_default, float engine_default) {
  if (requested) return static_cast<float>(*requested);
  if (configured) return static_cast<float>(*configured);
  if (model_default) return static_cast<float>(*model_default);
  return engine_default;
}

// A request without a seed gets a fresh one, so that equal prompts do not sample equal text.
std::uint64_t fresh_seed() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

}  // namespace

api::ApiResult<engine::Request> build_engine_request(const engine::ServedModel& model,
                                                     const api::SamplingRequest& sampling,
                                                     std::vector<std::int32_t> prompt_ids,
                                                     const RequestShape& shape) {
  const engine::SamplingDefaults& configured = model.spec.sampling;
  const engine::GenerationDefaults& shipped = model.weights->config().generation;
  const int prompt_tokens = static_cast<int>(prompt_ids.size());
  const int room = model.context_length - prompt_tokens;
  auto exceeded = [&](int max_tokens) {
    api::ApiError error =
        api::context_length_exceeded(prompt_tokens, max_tokens, model.context_length);
    error.param = std::string(shape.prompt_param);
    return error;
  };
  if (sampling.max_tokens && *sampling.max_tokens > room) return exceeded(*sampling.max_tokens);
  if (room < 1) return exceeded(1);

  engine::Request request;
  request.prompt_ids = std::move(prompt_ids);
  int max_tokens = room;
  if (sampling.max_tokens) {
    max_tokens = *sampling.max_tokens;
  } else if (configured.max_tokens) {
    max_tokens = std::min(*configured.max_tokens, room);
  } else if (!shape.chat) {
    max_tokens = std::min(kCompletionDefaultMaxTokens, room);
  }
  request.stop.max_tokens = max_tokens;
  request.stop.min_tokens = sampling.min_tokens;
  request.stop.stop_strings = sampling.stop;
  request.stop.stop_token_ids = sampling.stop_token_ids;
  request.stop.ignore_eos = sampling.ignore_eos;
  request.n = sampling.n;
  request.skip_special_tokens = sampling.skip_special_tokens;

  engine::SamplingParams& params = request.sampling;
  params.temperature =
      pick(sampling.temperature, configured.temperature, shipped.temperature, params.temperature);
  params.top_p = pick(sampling.top_p, configured.top_p, shipped.top_p, params.top_p);
  params.min_p = pick(sampling.min_p, configured.min_p, shipped.min_p, params.min_p);
  params.repetition_penalty = pick(sampling.repetition_penalty, configured.repetition_penalty,
                                   shipped.repetition_penalty, params.repetition_penalty);
  params.presence_penalty = pick(sampling.presence_penalty, configured.presence_penalty,
                                 std::optional<float>{}, params.presence_penalty);
  params.frequency_penalty = pick(sampling.frequency_penalty, configured.frequency_penalty,
                                  std::optional<float>{}, params.frequency_penalty);
  const std::optional<int> top_k = sampling.top_k     ? sampling.top_k
                                   : configured.top_k ? configured.top_k
                                                      : shipped.top_k;
  params.top_k = top_k && *top_k > 0 ? *top_k : 0;  // -1 and 0 both mean off
  if (sampling.seed) {
    params.seed = static_cast<std::uint64_t>(*sampling.seed);
  } else if (configured.seed) {
    params.seed = *configured.seed;
  } else {
    params.seed = fresh_seed();
  }
  params.logit_bias.reserve(sampling.logit_bias.size());
  for (const auto& [token, bias] : sampling.logit_bias) {
    params.logit_bias.emplace_back(token, static_cast<float>(bias));
  }
  params.logprobs = shape.logprobs;
  params.top_logprobs = shape.logprobs ? shape.top_logprobs : 0;
  return request;
}

api::ApiResult<std::vector<engine::RequestHandle>> submit_to_engine(
    const engine::ServedModel& model, std::vector<engine::Request> requests,
    std::string_view client, std::string_view prompt_param) {
  auto handles = model.engine->submit_all(std::move(requests), client);
  if (!handles) return api_error_from(handles.error(), model.spec.name, prompt_param);
  return std::move(*handles);
}

}  // namespace tern::service
