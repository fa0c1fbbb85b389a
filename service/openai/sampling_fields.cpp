#include "service/openai/sampling_fields.h"

#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace tern::service::openai {
namespace {

api::json::Check read_stop(const api::json::element& value, std::vector<std::string>& stop) {
  stop.clear();
  auto add = [&](const api::json::element& item, std::string_view param) -> api::json::Check {
    std::string text;
    if (api::json::Check error = api::json::read_string(item, param, text)) return error;
    if (text.empty()) {
      return api::invalid_request(std::string(param), "Stop sequences must not be empty",
                                  "invalid_value");
    }
    stop.push_back(std::move(text));
    return std::nullopt;
  };
  if (value.is_string()) return add(value, "stop");
  api::json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return api::json::wrong_type("stop", "string or array of strings", value);
  }
  if (items.size() > static_cast<std::size_t>(api::kMaxStopSequences)) {
    return api::invalid_request("stop",
                                fmt::format("At most {} stop sequences are allowed, got {}",
                                            api::kMaxStopSequences, items.size()),
                                "invalid_value");
  }
  std::size_t index = 0;
  for (api::json::element item : items) {
    if (api::json::Check error = add(item, fmt::format("stop[{}]", index++))) return error;
  }
  return std::nullopt;
}

api::json::Check read_logit_bias(const api::json::element& value,
                                 std::vector<std::pair<std::int32_t, double>>& bias) {
  api::json::object entries;
  if (value.get_object().get(entries) != simdjson::SUCCESS) {
    return api::json::wrong_type("logit_bias", "object", value);
  }
  bias.clear();
  for (auto [key, amount] : entries) {
    const std::string param = fmt::format("logit_bias.{}", key);
    const std::string text(key);
    char* end = nullptr;
    const long long id = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || id < 0 || id > std::numeric_limits<std::int32_t>::max()) {
      return api::invalid_request(
          param, fmt::format("Invalid key in 'logit_bias': '{}' is not a token id", key),
          "invalid_value");
    }
    double number = 0;
    if (api::json::Check error = api::json::read_number(amount, param, -100, 100, number))
      return error;
    bias.emplace_back(static_cast<std::int32_t>(id), number);
  }
  return std::nullopt;
}

template <typename T>
api::json::Check read_optional_number(const api::json::element& value, std::string_view param,
                                      double min, double max, std::optional<T>& out) {
  double number = 0;
  if (api::json::Check error = api::json::read_number(value, param, min, max, number)) return error;
  out = number;
  return std::nullopt;
}

}  // namespace

bool read_sampling_field(std::string_view key, const api::json::element& value,
                         api::SamplingRequest& sampling, api::json::Check& error) {
  // null means "not given" for every optional field, as the OpenAI SDKs sometimes send it.
  const bool is_null = value.is_null();
  if (key == "max_tokens" || key == "max_completion_tokens") {
    if (is_null) return true;
    int tokens = 0;
    error = api::json::read_int(value, key, 1, api::kMaxTokensLimit, tokens);
    const bool completion_field = key == "max_completion_tokens";
    if (!error && (completion_field || !sampling.max_tokens_from_completion_field)) {
      sampling.max_tokens = tokens;
      sampling.max_tokens_from_completion_field = completion_field;
    }
  } else if (key == "temperature") {
    if (!is_null) error = read_optional_number(value, key, 0.0, 2.0, sampling.temperature);
  } else if (key == "top_p") {
    if (is_null) return true;
    error = read_optional_number(value, key, 0.0, 1.0, sampling.top_p);
    if (!error && *sampling.top_p <= 0.0) {
      error = api::invalid_request("top_p", "Invalid value for 'top_p': must be in (0, 1]",
                                   "invalid_value");
    }
  } else if (key == "top_k") {
    if (is_null) return true;
    int top_k = 0;
    error = api::json::read_int(value, key, -1, std::numeric_limits<int>::max(), top_k);
    if (!error) sampling.top_k = top_k;
  } else if (key == "min_p") {
    if (!is_null) error = read_optional_number(value, key, 0.0, 1.0, sampling.min_p);
  } else if (key == "repetition_penalty") {
    if (is_null) return true;
    error = read_optional_number(value, key, 0.0, 10.0, sampling.repetition_penalty);
    if (!error && *sampling.repetition_penalty <= 0.0) {
      error = api::invalid_request("repetition_penalty",
                                   "Invalid value for 'repetition_penalty': must be > 0",
                                   "invalid_value");
    }
  } else if (key == "presence_penalty") {
    if (!is_null) error = read_optional_number(value, key, -2.0, 2.0, sampling.presence_penalty);
  } else if (key == "frequency_penalty") {
    if (!is_null) error = read_optional_number(value, key, -2.0, 2.0, sampling.frequency_penalty);
  } else if (key == "seed") {
    if (is_null) return true;
    std::int64_t seed = 0;
    error = api::json::read_integer(value, key, std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::max(), seed);
    if (!error) sampling.seed = seed;
  } else if (key == "n") {
    if (!is_null) error = api::json::read_int(value, key, 1, api::kMaxChoices, sampling.n);
  } else if (key == "stop") {
    if (!is_null) error = read_stop(value, sampling.stop);
  } else if (key == "stop_token_ids") {
    if (!is_null) error = api::json::read_token_ids(value, key, sampling.stop_token_ids);
  } else if (key == "logit_bias") {
    if (!is_null) error = read_logit_bias(value, sampling.logit_bias);
  } else if (key == "min_tokens") {
    if (!is_null)
      error = api::json::read_int(value, key, 0, api::kMaxTokensLimit, sampling.min_tokens);
  } else if (key == "ignore_eos") {
    if (!is_null) error = api::json::read_bool(value, key, sampling.ignore_eos);
  } else if (key == "skip_special_tokens") {
    if (!is_null) error = api::json::read_bool(value, key, sampling.skip_special_tokens);
  } else {
    return false;
  }
  return true;
}

api::json::Check validate_sampling(const api::SamplingRequest& sampling) {
  if (sampling.max_tokens && sampling.min_tokens > *sampling.max_tokens) {
    return api::invalid_request("min_tokens",
                                fmt::format("'min_tokens' ({}) must not exceed 'max_tokens' ({})",
                                            sampling.min_tokens, *sampling.max_tokens),
                                "invalid_value");
  }
  return std::nullopt;
}

api::json::Check read_stream_options(const api::json::element& value, bool& include_usage) {
  if (value.is_null()) return std::nullopt;
  api::json::object options;
  if (value.get_object().get(options) != simdjson::SUCCESS) {
    return api::json::wrong_type("stream_options", "object", value);
  }
  for (auto [key, field] : options) {
    if (key == "include_usage" && !field.is_null()) {
      if (api::json::Check error =
              api::json::read_bool(field, "stream_options.include_usage", include_usage)) {
        return error;
      }
    }
  }
  return std::nullopt;
}

}  // namespace tern::service::openai
