#include "service/engine_model_service.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "engine/chat/value_json.h"
#include "service/api/tool_values.h"
#include "service/chat_output_parsers.h"
#include "service/chat_prompt.h"
#include "service/engine_generation_stream.h"
#include "service/engine_request_builder.h"

namespace tern::service {
namespace {

ModelCard card_for(const engine::ServedModel& model, const std::string& id) {
  ModelCard card;
  card.id = id;
  card.root = model.spec.name;
  card.created = model.loaded_at;
  card.context_length = model.context_length;
  card.architecture = model.weights->config().architecture;
  card.quantization = model.quantization;
  card.note = model.spec.note;
  if (Status health = model.backend->health(); !health.ok()) card.error = health.message();
  return card;
}

// Ids that are not in the vocabulary would be silently dropped by decode; say so instead.
api::ApiResult<bool> check_ids(const engine::ServedModel& model,
                               const std::vector<std::int32_t>& ids, std::string_view param) {
  const std::int32_t vocab = model.tokenizer->vocab_size();
  for (const std::int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      return api::invalid_request(
          std::string(param),
          fmt::format("Token id {} is outside the model's vocabulary of {}", id, vocab));
    }
  }
  return true;
}

// The most tokens a request's prompt may have: what the context leaves after the completion's
// tokens (at least one), the check build_engine_request makes.
std::size_t prompt_token_limit(const engine::ServedModel& model,
                               const api::SamplingRequest& sampling) {
  const int completion = std::max(1, sampling.max_tokens.value_or(1));
  return static_cast<std::size_t>(std::max(0, model.context_length - completion));
}

// The prompt's ids, or a 400 as soon as the prompt is known to pass `limit` tokens: a huge
// prompt is refused after tokenizing about `limit` tokens of it, not all of it.
api::ApiResult<std::vector<std::int32_t>> encode_prompt(
    const engine::ServedModel& model, std::string_view text, bool add_special, std::size_t limit,
    const std::function<api::ApiError(std::size_t tokens_at_least)>& too_long) {
  engine::BoundedEncoding encoded = model.tokenizer->encode_bounded(text, add_special, limit);
  if (encoded.exceeded) return too_long(encoded.tokens_at_least);
  return std::move(encoded.ids);
}

// A generation's prompt past the context, with as much of the count as is known.
std::function<api::ApiError(std::size_t)> context_exceeded(const engine::ServedModel& model,
                                                           const api::SamplingRequest& sampling,
                                                           std::string_view prompt_param) {
  return [&model, &sampling, prompt_param](std::size_t prompt_tokens) {
    const int completion = std::max(1, sampling.max_tokens.value_or(1));
    return api::invalid_request(
        std::string(prompt_param),
        fmt::format("This model's maximum context length is {} tokens. However, you requested at "
                    "least {} tokens ({} or more in the {}, {} in the completion). Please reduce "
                    "the length of the {} or completion.",
                    model.context_length, prompt_tokens + static_cast<std::size_t>(completion),
                    prompt_tokens, prompt_param, completion, prompt_param),
        "context_length_exceeded");
  };
}

// The request's structured output compiled for the model (cached by the model's GrammarCache);
// null when it asks for none. Runs on the preparation pool: the engine never waits for it.
api::ApiResult<std::shared_ptr<const engine::grammar::TokenizedGrammar>> compile_structured_output(
    const engine::ServedModel& model, const engine::grammar::GrammarSpec& spec) {
  if (!spec.active() || !model.grammars) {
    return std::shared_ptr<const engine::grammar::TokenizedGrammar>();
  }
  auto compiled = model.grammars->get(spec);
  if (!compiled) {
    const Error& error = compiled.error();
    if (error.kind == ErrorKind::overloaded) {
      return api::too_many_requests(
          fmt::format("The model '{}' is compiling other grammars: {}; retry after {} s",
                      model.spec.name, error.message, error.retry_after_s),
          error.retry_after_s);
    }
    return api::invalid_request(error.field.empty() ? spec.field : error.field,
                                fmt::format("Invalid '{}': {}", spec.field, error.message),
                                "invalid_value");
  }
  return *compiled;
}

// What a chat answer is constrained to: the request's structured output, or, when tool_choice
// forces a call, a call of its tools in the format the model's tool parser reads.
api::ApiResult<engine::grammar::GrammarSpec> chat_output_constraint(
    const api::ChatRequest& request, const OutputParserSpec& parsers) {
  if (request.tool_choice != api::ToolChoice::required) return request.structured_output;
  if (request.structured_output.active()) {
    return api::invalid_request(
        "tool_choice",
        fmt::format("'tool_choice' forces a tool call and '{}' constrains the answer; give one",
                    request.structured_output.field),
        "invalid_value");
  }
  if (!api::has_tools(request.tools)) {
    return api::invalid_request("tool_choice", "'tool_choice' forces a call but no tools are given",
                                "invalid_value");
  }
  engine::grammar::GrammarSpec spec;
  spec.kind = engine::grammar::GrammarSpec::Kind::tool_calls;
  spec.field = "tool_choice";
  // The grammar's spec is text: the one form every structured output takes, and the key under
  // which the model's grammar cache keeps it compiled.
  auto tools_json = engine::chat::to_json(request.tools);
  if (!tools_json) return api::invalid_request("tools", tools_json.error().message);
  spec.text = std::move(*tools_json);
  spec.tool_parser = parsers.tool_parser;
  spec.tool_name = request.required_tool;
  spec.parallel_tool_calls = request.parallel_tool_calls;
  return spec;
}

}  // namespace

api::ApiResult<const engine::ServedModel*> EngineModelService::resolve(
    const std::string& name) const {
  if (const engine::ServedModel* model = registry_.find(name)) return model;
  if (!name.empty() && registry_.is_configured(name)) {
    return api::service_unavailable(
        registry_.loading_finished()
            ? fmt::format("The model '{}' failed to load; see the server log", name)
            : fmt::format("The model '{}' is still loading", name),
        registry_.loading_finished() ? 0 : 5);
  }
  if (name.empty()) {
    return api::service_unavailable(
        registry_.loading_finished() ? "No model is loaded" : "The models are still loading", 5);
  }
  return api::model_not_found(name);
}

std::vector<ModelCard> EngineModelService::models() const {
  std::vector<ModelCard> cards;
  for (const engine::ServedModel* model : registry_.loaded()) {
    cards.push_back(card_for(*model, model->spec.name));
    for (const std::string& alias : model->spec.aliases) cards.push_back(card_for(*model, alias));
  }
  return cards;
}

bool EngineModelService::ready() const {
  if (!registry_.ready()) return false;
  return std::ranges::all_of(registry_.loaded(), [](const engine::ServedModel* model) {
    return model->backend->health().ok();
  });
}

std::vector<ModelUnavailable> EngineModelService::unavailable() const {
  std::vector<ModelUnavailable> models;
  for (const auto& [name, state] : registry_.load_states()) {
    if (state == engine::ModelRegistry::LoadState::loaded) continue;
    models.push_back({name, state == engine::ModelRegistry::LoadState::failed});
  }
  return models;
}

std::vector<ModelStats> EngineModelService::stats() const {
  std::vector<ModelStats> stats;
  for (const engine::ServedModel* model : registry_.loaded()) {
    const engine::EngineStats engine_stats = model->engine->stats();
    ModelStats entry;
    entry.model = model->spec.name;
    entry.running_requests = engine_stats.running;
    entry.waiting_requests = engine_stats.waiting;
    if (engine_stats.kv_blocks > 0) {
      entry.kv_cache_usage = 1.0 - static_cast<double>(engine_stats.kv_free_blocks) /
                                       static_cast<double>(engine_stats.kv_blocks);
    }
    entry.prefix_cache_hit_rate = engine_stats.prefix_hit_rate;
    entry.kv_cache_bytes = engine_stats.kv_cache_bytes;
    entry.kv_bytes_per_token = engine_stats.kv_bytes_per_token;
    entry.healthy = model->backend->health().ok();
    entry.tokens_sampled_from_candidates = engine_stats.logit_rows_from_candidates;
    entry.tokens_sampled_from_whole_rows = engine_stats.logit_rows_whole;
    entry.logit_rows_fetched = engine_stats.logit_rows_fetched;
    if (model->grammars) {
      const engine::grammar::GrammarCache::Stats grammars = model->grammars->stats();
      entry.grammars_compiled = grammars.compiled;
      entry.grammar_cache_hits = grammars.hits;
      entry.grammars_failed = grammars.failed;
      entry.grammars_busy = grammars.busy;
      entry.grammar_compiles_running = grammars.compiles_running;
    }
    if (const auto memory = model->backend->device_memory(); memory) {
      entry.device_memory_total_bytes = memory->device_total;
      entry.device_memory_bytes = {{"weights", memory->weights},
                                   {"activations", memory->activations},
                                   {"graphs", memory->graphs},
                                   {"kv_cache", memory->kv_cache}};
    }
    stats.push_back(std::move(entry));
  }
  return stats;
}

api::ApiResult<std::unique_ptr<GenerationStream>> EngineModelService::start_chat(
    const api::ChatRequest& request, std::string& model_id) {
  auto resolved = resolve(request.model);
  if (!resolved) return resolved.error();
  const engine::ServedModel& model = **resolved;
  auto prompt = render_chat_prompt(
      *model.chat_template,
      ChatPromptInput{&request.messages, request.tools, request.chat_template_kwargs,
                      request.add_generation_prompt, request.continue_final_message});
  if (!prompt) return prompt.error();
  const RequestShape shape{true, request.logprobs, request.top_logprobs, "messages"};
  // The template already wrote BOS and friends; vLLM tokenizes with add_special_tokens=False.
  auto ids = encode_prompt(model, *prompt, false, prompt_token_limit(model, request.sampling),
                           context_exceeded(model, request.sampling, shape.prompt_param));
  if (!ids) return ids.error();
  const int prompt_tokens = static_cast<int>(ids->size());
  auto built = build_engine_request(model, request.sampling, std::move(*ids), shape);
  if (!built) return built.error();
  OutputParserSpec parsers = output_parsers_for(model, request, *prompt);
  auto constraint = chat_output_constraint(request, parsers);
  if (!constraint) return constraint.error();
  auto grammar = compile_structured_output(model, *constraint);
  if (!grammar) return grammar.error();
  built->grammar = std::move(*grammar);
  built->grammar_field = constraint->field;
  if (parsers.active()) {
    built->kept_special_tokens = parser_marker_tokens(*model.tokenizer, parsers);
    if (request.sampling.skip_special_tokens) {
      for (const std::int32_t token : built->kept_special_tokens) {
        parsers.hidden_markers.push_back(model.tokenizer->decode({&token, 1}, false));
      }
    }
    built->reasoning_budget = reasoning_budget_for(
        *model.tokenizer, parsers, request.reasoning_budget_tokens, built->grammar != nullptr);
  }
  const int choices = built->n;
  std::vector<engine::Request> requests;
  requests.push_back(std::move(*built));
  auto handles = submit_to_engine(model, std::move(requests), request.client, shape.prompt_param);
  if (!handles) return handles.error();
  model_id = request.model.empty() ? model.spec.name : request.model;
  std::vector<EngineGenerationStream::Part> parts;
  parts.push_back({std::move(handles->front()), 0, choices, {}, false});
  auto stream = std::make_unique<EngineGenerationStream>(
      *model.tokenizer, std::move(parts),
      EngineGenerationStream::Options{request.logprobs, model.spec.name, shape.prompt_param,
                                      prompt_tokens});
  if (!parsers.active()) return std::unique_ptr<GenerationStream>(std::move(stream));
  return std::unique_ptr<GenerationStream>(
      std::make_unique<ParsingGenerationStream>(std::move(stream), std::move(parsers)));
}

api::ApiResult<std::unique_ptr<GenerationStream>> EngineModelService::start_completion(
    const api::CompletionRequest& request, std::string& model_id) {
  auto resolved = resolve(request.model);
  if (!resolved) return resolved.error();
  const engine::ServedModel& model = **resolved;
  const RequestShape shape{false, request.logprobs.has_value(), request.logprobs.value_or(0),
                           "prompt"};
  auto grammar = compile_structured_output(model, request.structured_output);
  if (!grammar) return grammar.error();
  // Every prompt is checked before any is queued, so a bad one queues nothing.
  std::vector<engine::Request> requests;
  std::vector<std::string> echo_texts;
  for (const api::CompletionPrompt& prompt : request.prompts) {
    std::vector<std::int32_t> ids;
    if (prompt.is_token_ids) {
      if (auto valid = check_ids(model, prompt.token_ids, "prompt"); !valid) return valid.error();
      ids = prompt.token_ids;
    } else {
      auto encoded = encode_prompt(model, prompt.text, request.add_special_tokens,
                                   prompt_token_limit(model, request.sampling),
                                   context_exceeded(model, request.sampling, shape.prompt_param));
      if (!encoded) return encoded.error();
      ids = std::move(*encoded);
    }
    if (request.echo) {
      echo_texts.push_back(prompt.is_token_ids
                               ? model.tokenizer->decode(ids, request.sampling.skip_special_tokens)
                               : prompt.text);
    }
    auto built = build_engine_request(model, request.sampling, std::move(ids), shape);
    if (!built) return built.error();
    built->grammar = *grammar;
    built->grammar_field = request.structured_output.field;
    requests.push_back(std::move(*built));
  }
  const int choices = request.sampling.n;
  int prompt_tokens = 0;
  for (const engine::Request& queued : requests) {
    prompt_tokens += static_cast<int>(queued.prompt_ids.size());
  }
  auto handles = submit_to_engine(model, std::move(requests), request.client, shape.prompt_param);
  if (!handles) return handles.error();
  std::vector<EngineGenerationStream::Part> parts;
  for (std::size_t i = 0; i < handles->size(); ++i) {
    EngineGenerationStream::Part part{
        std::move((*handles)[i]), static_cast<int>(i) * choices, choices, {}, request.echo};
    if (request.echo) part.echo_text = std::move(echo_texts[i]);
    parts.push_back(std::move(part));
  }
  model_id = request.model.empty() ? model.spec.name : request.model;
  return std::unique_ptr<GenerationStream>(std::make_unique<EngineGenerationStream>(
      *model.tokenizer, std::move(parts),
      EngineGenerationStream::Options{request.logprobs.has_value(), model.spec.name,
                                      shape.prompt_param, prompt_tokens}));
}

api::ApiResult<TokenizeResult> EngineModelService::tokenize(const api::TokenizeRequest& request) {
  auto resolved = resolve(request.model);
  if (!resolved) return resolved.error();
  const engine::ServedModel& model = **resolved;
  std::string text = request.prompt;
  if (request.is_chat) {
    auto prompt = render_chat_prompt(
        *model.chat_template,
        ChatPromptInput{&request.messages, request.tools, request.chat_template_kwargs,
                        request.add_generation_prompt, request.continue_final_message});
    if (!prompt) return prompt.error();
    text = std::move(*prompt);
  }
  // Counting stops at the context, like a generation's check: a text past it is a 400 after
  // about that many tokens, whatever its length (docs/api.md).
  const std::string_view param = request.is_chat ? "messages" : "prompt";
  const auto limit = static_cast<std::size_t>(std::max(0, model.context_length));
  auto tokens = encode_prompt(
      model, text, request.add_special_tokens, limit, [&](std::size_t tokens_at_least) {
        return api::invalid_request(
            std::string(param),
            fmt::format("The {} encode to at least {} tokens, more than this model's context "
                        "length of {}; tokens are counted up to the context length",
                        param, tokens_at_least, model.context_length),
            "context_length_exceeded");
      });
  if (!tokens) return tokens.error();
  TokenizeResult result;
  result.tokens = std::move(*tokens);
  result.max_model_len = model.context_length;
  if (request.return_token_strs) {
    result.token_strs.reserve(result.tokens.size());
    for (const std::int32_t id : result.tokens) {
      result.token_strs.emplace_back(model.tokenizer->token_text(id));
    }
  }
  return result;
}

api::ApiResult<DetokenizeResult> EngineModelService::detokenize(
    const api::DetokenizeRequest& request) {
  auto resolved = resolve(request.model);
  if (!resolved) return resolved.error();
  const engine::ServedModel& model = **resolved;
  if (auto valid = check_ids(model, request.tokens, "tokens"); !valid) return valid.error();
  return DetokenizeResult{model.tokenizer->decode(request.tokens, false)};
}

}  // namespace tern::service
