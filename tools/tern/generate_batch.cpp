#include "tools/tern/generate_batch.h"

#include <deque>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "engine/chat/value_json.h"
#include "engine/engine.h"
#include "kernels/cpu/thread_pool.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

using engine::chat::Value;
using engine::chat::ValueDict;
using engine::chat::ValueList;

// One input line as a request, or why it is not one.
Expected<engine::Request> parse_line(std::string_view line, const engine::Tokenizer* tokenizer,
                                     const GenerateBatchOptions& options) {
  auto parsed = engine::chat::parse_json_value(line);
  if (!parsed) return Error{parsed.error().message};
  if (!parsed->is_dict()) return Error{"each line must be a JSON object"};
  const ValueDict& fields = parsed->as_dict();
  engine::Request request;
  request.sampling = options.sampling;
  request.stop.max_tokens = options.max_tokens;
  if (const Value* text = fields.find("prompt")) {
    if (!text->is_string()) return Error{"prompt: must be a string"};
    if (tokenizer == nullptr) return Error{"prompt: the model has no tokenizer; use prompt_ids"};
    request.prompt_ids = tokenizer->encode(text->as_string(), true);
  } else if (const Value* ids = fields.find("prompt_ids")) {
    if (!ids->is_list()) return Error{"prompt_ids: must be a list of token ids"};
    for (const Value& id : ids->as_list()) {
      if (!id.is_int()) return Error{"prompt_ids: must be a list of token ids"};
      request.prompt_ids.push_back(static_cast<std::int32_t>(id.as_int()));
    }
  } else {
    return Error{"each line needs \"prompt\" or \"prompt_ids\""};
  }
  auto number = [&](std::string_view name) -> std::optional<double> {
    const Value* value = fields.find(name);
    if (value == nullptr || !value->is_number()) return std::nullopt;
    return value->is_float() ? value->as_float() : static_cast<double>(value->as_int());
  };
  if (auto value = number("max_tokens"))
    request.stop.max_tokens = static_cast<std::int32_t>(*value);
  if (auto value = number("temperature")) request.sampling.temperature = static_cast<float>(*value);
  if (auto value = number("top_p")) request.sampling.top_p = static_cast<float>(*value);
  if (auto value = number("seed")) request.sampling.seed = static_cast<std::uint64_t>(*value);
  if (const Value* stop = fields.find("stop")) {
    if (stop->is_string()) {
      request.stop.stop_strings.push_back(stop->as_string());
    } else if (stop->is_list()) {
      for (const Value& text : stop->as_list()) {
        if (!text.is_string()) return Error{"stop: must be a string or a list of strings"};
        request.stop.stop_strings.push_back(text.as_string());
      }
    }
  }
  return request;
}

std::string result_line(engine::RequestHandle& handle) {
  ValueList ids;
  std::string text;
  std::string finish_reason;
  std::string message;
  for (;;) {
    engine::RequestEvent event = handle.next();
    if (event.token >= 0) ids.push_back(Value::integer(event.token));
    text += event.text;
    if (event.finish_reason) finish_reason = std::string(engine::to_string(*event.finish_reason));
    if (!event.message.empty()) message = event.message;
    if (!event.done) continue;
    ValueDict line;
    line.set("output_ids", Value::list(std::move(ids)));
    line.set("text", Value::string(std::move(text)));
    line.set("finish_reason", Value::string(finish_reason));
    line.set("cached_tokens", Value::integer(event.usage.cached_tokens));
    if (!message.empty()) line.set("error", Value::string(message));
    auto json = engine::chat::to_json(Value::dict(std::move(line)));
    return json ? *json : std::string("{}");
  }
}

std::string error_line(std::string_view message) {
  ValueDict line;
  line.set("error", Value::string(std::string(message)));
  auto json = engine::chat::to_json(Value::dict(std::move(line)));
  return json ? *json : std::string("{}");
}

}  // namespace

int generate_batch(const engine::ModelWeights& weights, const engine::Tokenizer* tokenizer,
                   const GenerateBatchOptions& options) {
  std::ifstream file(options.prompts_file);
  if (!file) {
    fmt::print(stderr, "tern generate: cannot read {}\n", options.prompts_file);
    return kExitUsage;
  }
  const engine::ModelConfig& config = weights.config();
  kernels::ThreadPool pool(options.threads);
  engine::BackendSpec backend_spec = options.backend;
  backend_spec.options.max_sequences = options.parallel;
  backend_spec.options.max_batch_tokens = 512;
  backend_spec.options.max_context = config.context_length;
  auto backend = engine::create_backend(backend_spec, weights, pool);
  if (!backend) {
    fmt::print(stderr, "tern generate: {}\n", backend.error().message);
    return kExitFailure;
  }
  engine::EngineOptions engine_options;
  engine_options.context_length = config.context_length;
  engine_options.eos_token_ids = config.eos_token_ids;
  // Room for every sequence in flight at full context, up to 2 GiB.
  const std::uint64_t per_sequence =
      (*backend)->kv_block_bytes(engine_options.kv_cache_type, engine_options.block_size) *
      static_cast<std::uint64_t>((config.context_length + engine_options.block_size - 1) /
                                 engine_options.block_size);
  engine_options.kv_cache_bytes = std::min<std::uint64_t>(
      per_sequence * static_cast<std::uint64_t>(options.parallel), 2ull << 30);
  engine_options.scheduler.max_num_seqs = options.parallel;
  auto engine = engine::Engine::create(**backend, tokenizer, engine_options);
  if (!engine) {
    fmt::print(stderr, "tern generate: {}\n", engine.error().message);
    return kExitFailure;
  }

  // Lines leave in input order: the oldest in flight is read to its end while the others run.
  std::deque<std::optional<engine::RequestHandle>> in_flight;  // nullopt: the line failed
  std::deque<std::string> errors;
  auto write_oldest = [&] {
    if (in_flight.front()) {
      fmt::print("{}\n", result_line(*in_flight.front()));
    } else {
      fmt::print("{}\n", error_line(errors.front()));
      errors.pop_front();
    }
    std::fflush(stdout);
    in_flight.pop_front();
  };
  int exit_code = 0;
  for (std::string line; std::getline(file, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    while (static_cast<std::int32_t>(in_flight.size()) >= options.parallel) write_oldest();
    auto request = parse_line(line, tokenizer, options);
    auto handle = request ? (*engine)->submit(std::move(*request))
                          : Expected<engine::RequestHandle>(request.error());
    if (handle) {
      in_flight.emplace_back(std::move(*handle));
    } else {
      in_flight.emplace_back(std::nullopt);
      errors.push_back(handle.error().message);
      exit_code = kExitFailure;
    }
  }
  while (!in_flight.empty()) write_oldest();
  const engine::EngineStats stats = (*engine)->stats();
  fmt::print(stderr,
             "{} requests, {} prompt tokens ({} cached), {} generated in {} steps; preempted {}\n",
             stats.requests_finished, stats.prompt_tokens_total, stats.cached_tokens_total,
             stats.generated_tokens_total, stats.steps, stats.preempted_total);
  return exit_code;
}

}  // namespace tern::tools
