// The HTTP session: one connection's read loop with its limits and timeouts, error replies, and
// the dispatch through the endpoint table. Non-streaming handlers return a Reply value, as in
// Beast's http_server_awaitable example; the generation handlers stream through stream_writer.cpp.
#include "service/http_session.h"
#include <array>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>

#include "service/anthropic/messages_error.h"
#include "service/anthropic/messages_request.h"
#include "service/anthropic/messages_response.h"
#include "service/anthropic/messages_stream_encoder.h"
#include "service/endpoint_handlers.h"
#include "service/openai/chat_completion_parser.h"
#include "service/openai/chat_response.h"
#include "service/openai/completion_parser.h"
#include "service/openai/completion_response.h"
#include "service/openai/models_response.h"
#include "service/openai/tokenize_parser.h"
#include "service/request_headers.h"
#include "service/responses/response_object.h"
#include "service/responses/responses_stream_encoder.h"
#include "service/server_hand_over.h"
#include "service/stream_writer.h"

namespace tern::service::detail {
namespace {

using namespace asio::experimental::awaitable_operators;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Generation and tokenizer requests move their connection to the streams loop; everything else
// (health, readiness, metrics, models, errors) is answered on the control loop.
bool served_on_streams(const Request& request) {
  const auto route = match_route(request.method_string(), request.target());
  return route && route->route->on_streams;
}

http::response<http::string_body> make_response(const ServerCore& core, const Request& request,
                                                int status, std::string body,
                                                std::string_view content_type, bool keep_alive) {
  http::response<http::string_body> response{static_cast<http::status>(status),
                                             request.version() ? request.version() : 11};
  response.set(http::field::server, "tern");
  response.set(http::field::content_type, content_type);
  response.keep_alive(keep_alive && request.keep_alive() && !core.draining.load());
  if (const auto id = request[kRequestIdHeader]; !id.empty()) response.set(kRequestIdHeader, id);
  response.body() = std::move(body);
  response.prepare_payload();
  // HEAD: GET's headers, Content-Length included, and no body.
  if (request.method() == http::verb::head) response.body().clear();
  return response;
}

// A request that could not be read: 408 for a timeout with part of it received, 431 for
// oversized headers, 400 for a malformed one; a silent close when the client left.
awaitable<void> reply_to_read_error(ServerCore& core, beast::tcp_stream& stream,
                                    boost::system::error_code ec, bool partial) {
  api::ApiError error;
  if (ec == beast::error::timeout) {
    if (!partial) co_return;
    error = api::request_timeout();
  } else if (ec == http::error::body_limit) {
    error = api::request_too_large(core.config.limits.max_body_bytes);
  } else if (ec == http::error::header_limit) {
    error = api::ApiError{431, "The request headers are too large", "invalid_request_error", "",
                          "request_header_fields_too_large"};
  } else if (ec == http::error::end_of_stream || ec == asio::error::eof ||
             ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
    co_return;
  } else {
    error = api::ApiError{400, fmt::format("Malformed HTTP request: {}", ec.message()),
                          "invalid_request_error", "", "bad_request"};
  }
  Request placeholder;
  placeholder.version(11);
  RequestRecord record;
  co_await send_reply(core, stream, placeholder, record, Reply::error(error, false));
}

// Runs `work` on the preparation queue in `client`'s line and resumes on the connection's
// executor with its result, wrapped in optional as the call sites read it. A job that throws
// (out of memory) answers 500 rather than ending the process on a pool thread.
template <typename Work>
awaitable<std::optional<std::invoke_result_t<Work&>>> on_pool(ServerCore& core,
                                                              std::string_view client, Work work) {
  using Result = std::optional<std::invoke_result_t<Work&>>;
  const auto executor = co_await asio::this_coro::executor;
  auto submit = [&core, client, &work, executor](auto handler) {
    core.preparation.submit(client, [&work, executor, handler = std::move(handler)]() mutable {
      Result result;
      try {
        result.emplace(work());
      } catch (const std::exception& error) {
        result.emplace(
            api::server_error(fmt::format("Preparing the request failed: {}", error.what())));
      }
      asio::post(executor, [handler = std::move(handler), result = std::move(result)]() mutable {
        std::move(handler)(std::move(result));
      });
    });
  };
  co_return co_await asio::async_initiate<const asio::use_awaitable_t<>, void(Result)>(
      submit, use_awaitable);
}

// RFC 9112, 3.2: a 400 for an HTTP/1.1 request without Host, and for any request with more
// than one. HTTP/1.0 had no Host, so a 1.0 request may go without.
bool host_header_valid(const Request& request) {
  const auto hosts = request.count(http::field::host);
  return hosts == 1 || (hosts == 0 && request.version() < 11);
}

ErrorEncoder error_encoder_for(ErrorShape shape) {
  return shape == ErrorShape::anthropic ? &anthropic::error_body : &api::encode_error;
}

// The key's identity when keys are set, whichever header carried the key; empty without keys.
std::string key_identity(const ServerCore& core, const Request& request) {
  return core.keys.identity(request[http::field::authorization], request["x-api-key"]);
}

// Who asks, for the per-client share of a model's waiting queue: the key's identity when keys
// are set (an address may front many users behind one proxy), else the peer's address.
std::string client_of(const ServerCore& core, beast::tcp_stream& stream, const Request& request) {
  if (core.keys.enabled()) return key_identity(core, request);
  boost::system::error_code ec;
  const tcp::endpoint peer = stream.socket().remote_endpoint(ec);
  return ec ? std::string() : peer.address().to_string();
}

// --- handlers that answer with a value ----------------------------------------------------------

awaitable<Reply> health(ServerCore&, const Request&, const RouteMatch&) {
  co_return Reply::json(R"({"status":"ok"})");
}

awaitable<Reply> ready(ServerCore& core, const Request&, const RouteMatch&) {
  if (core.draining.load()) {
    co_return Reply::error(api::service_unavailable("The server is draining"));
  }
  if (!core.models.ready()) {
    co_return Reply::error(api::service_unavailable("Models are still loading", 5));
  }
  co_return Reply::json(R"({"status":"ready"})");
}

awaitable<Reply> metrics_text(ServerCore& core, const Request&, const RouteMatch&) {
  core.metrics.update_model_stats(core.models.stats(), core.models.unavailable());
  const responses::ResponseStore::Stats store = core.responses.stats();
  std::vector<std::pair<std::string_view, std::uint64_t>> evictions;
  for (std::size_t reason = 0; reason < store.evictions.size(); ++reason) {
    evictions.emplace_back(responses::ResponseStore::eviction_name(
                               static_cast<responses::ResponseStore::Eviction>(reason)),
                           store.evictions[reason]);
  }
  core.metrics.update_responses_store(store.responses, store.bytes, evictions);
  Reply reply = Reply::json(core.metrics.render());
  reply.content_type = "text/plain; version=0.0.4; charset=utf-8";
  co_return reply;
}

awaitable<Reply> model_list(ServerCore& core, const Request&, const RouteMatch&) {
  co_return Reply::json(openai::encode_model_list(core.models.models(), core.models.unavailable()));
}

awaitable<Reply> model_card(ServerCore& core, const Request&, const RouteMatch& route) {
  for (const ModelCard& card : core.models.models()) {
    if (card.id == route.path_parameter) co_return Reply::json(openai::encode_model(card));
  }
  co_return Reply::error(api::model_not_found(route.path_parameter));
}

awaitable<Reply> tokenize(ServerCore& core, const Request& request, std::string_view client) {
  auto parsed = openai::parse_tokenize_request(request.body());
  if (!parsed) co_return Reply::error(parsed.error());
  auto result = co_await on_pool(core, client, [&] { return core.models.tokenize(*parsed); });
  if (!*result) co_return Reply::error(result->error());
  co_return Reply::json(openai::encode_tokenize(result->value(), parsed->return_token_strs));
}

awaitable<Reply> detokenize(ServerCore& core, const Request& request, std::string_view client) {
  auto parsed = openai::parse_detokenize_request(request.body());
  if (!parsed) co_return Reply::error(parsed.error());
  auto result = co_await on_pool(core, client, [&] { return core.models.detokenize(*parsed); });
  if (!*result) co_return Reply::error(result->error());
  co_return Reply::json(openai::encode_detokenize(result->value()));
}

// Anthropic's count_tokens: the prompt rendered and tokenized as start_chat would, so the count
// equals the same request's input_tokens plus cache_read_input_tokens.
awaitable<Reply> count_message_tokens(ServerCore& core, const Request& request,
                                      std::string_view client) {
  auto parsed = anthropic::parse_count_tokens_request(request.body());
  if (!parsed) co_return Reply::error(parsed.error(), true, &anthropic::error_body);
  auto result = co_await on_pool(core, client, [&] { return core.models.tokenize(*parsed); });
  if (!*result) co_return Reply::error(result->error(), true, &anthropic::error_body);
  co_return Reply::json(anthropic::encode_count_tokens(result->value().tokens.size()));
}

// A stored Responses answer (GET /v1/responses/{id}), and its deletion. Another key's response
// is the same 404 as one that never existed.
awaitable<Reply> stored_response(ServerCore& core, const Request& request,
                                 const RouteMatch& route) {
  const auto stored = core.responses.get(route.path_parameter, key_identity(core, request));
  if (!stored) co_return Reply::error(responses::response_not_found(route.path_parameter));
  co_return Reply::json(stored->json);
}

awaitable<Reply> delete_response(ServerCore& core, const Request& request,
                                 const RouteMatch& route) {
  if (!core.responses.erase(route.path_parameter, key_identity(core, request))) {
    co_return Reply::error(responses::response_not_found(route.path_parameter));
  }
  co_return Reply::json(responses::encode_deleted(route.path_parameter));
}

// --- generation: one piece of code over the request type ----------------------------------------

struct ChatEndpoint {
  using Parsed = api::ChatRequest;
  static constexpr std::string_view kIdPrefix = "chatcmpl";
  static auto parse(std::string_view body) { return openai::parse_chat_completion_request(body); }
  static auto start(ModelService& models, const Parsed& parsed, std::string& model_id) {
    return models.start_chat(parsed, model_id);
  }
  static openai::ChatChunkEncoder chunk_encoder(api::ResponseMeta meta, const Parsed& parsed) {
    return openai::ChatChunkEncoder(std::move(meta), parsed.include_usage, parsed.logprobs);
  }
  static EncodeChoices body_encoder(api::ResponseMeta meta, const Parsed& parsed) {
    return [meta = std::move(meta), logprobs = parsed.logprobs](
               const std::vector<api::ChoiceOutput>& choices, const Usage& usage) {
      return openai::encode_chat_completion(meta, choices, usage, logprobs);
    };
  }
};

struct CompletionEndpoint {
  using Parsed = api::CompletionRequest;
  static constexpr std::string_view kIdPrefix = "cmpl";
  static auto parse(std::string_view body) { return openai::parse_completion_request(body); }
  static auto start(ModelService& models, const Parsed& parsed, std::string& model_id) {
    return models.start_completion(parsed, model_id);
  }
  static openai::CompletionChunkEncoder chunk_encoder(api::ResponseMeta meta,
                                                      const Parsed& parsed) {
    return openai::CompletionChunkEncoder(std::move(meta), parsed.include_usage, parsed.logprobs);
  }
  static EncodeChoices body_encoder(api::ResponseMeta meta, const Parsed& parsed) {
    return [meta = std::move(meta), logprobs = parsed.logprobs](
               const std::vector<api::ChoiceOutput>& choices, const Usage& usage) {
      return openai::encode_text_completion(meta, choices, usage, logprobs);
    };
  }
};

// Anthropic's Messages door over the same chat path; only parsing and encoding differ.
struct AnthropicMessagesEndpoint {
  using Parsed = api::ChatRequest;
  static constexpr std::string_view kIdPrefix = "msg";
  static auto parse(std::string_view body) { return anthropic::parse_messages_request(body); }
  static auto start(ModelService& models, const Parsed& parsed, std::string& model_id) {
    return models.start_chat(parsed, model_id);
  }
  static anthropic::MessagesStreamEncoder chunk_encoder(api::ResponseMeta meta, const Parsed&) {
    meta.id = anthropic::message_id(meta.id);
    return anthropic::MessagesStreamEncoder(std::move(meta));
  }
  static EncodeChoices body_encoder(api::ResponseMeta meta, const Parsed&) {
    meta.id = anthropic::message_id(meta.id);
    return [meta = std::move(meta)](const std::vector<api::ChoiceOutput>& choices,
                                    const Usage& usage) {
      return anthropic::encode_message(meta, choices, usage);
    };
  }
};

// OpenAI's Responses door over the same chat path. previous_response_id continues a stored
// conversation, and the answer is stored for the next one unless `store` is false.
struct ResponsesEndpoint {
  struct Parsed : responses::ResponsesRequest {
    responses::ResponseStore* store = nullptr;  // set by prepare
    std::string owner;  // the key's identity; "" without keys, where the store is one space
    std::shared_ptr<const responses::StoredResponse> previous;
    std::size_t previous_messages = 0;  // inserted from `previous` at conversation_start()
  };
  static constexpr std::string_view kIdPrefix = "resp";
  static api::ApiResult<Parsed> parse(std::string_view body) {
    auto parsed = responses::parse_responses_request(body);
    if (!parsed) return parsed.error();
    return Parsed{std::move(*parsed)};
  }
  // The previous response's conversation goes after the new instructions (OpenAI does not carry
  // instructions over), so the prompt repeats its prefix and the prefix cache serves it.
  static std::optional<api::ApiError> prepare(ServerCore& core, Parsed& parsed) {
    parsed.store = &core.responses;
    parsed.owner = core.keys.enabled() ? parsed.client : std::string();
    const std::optional<std::string>& previous_id = parsed.settings.previous_response_id;
    if (!previous_id) return std::nullopt;
    parsed.previous = core.responses.get(*previous_id, parsed.owner);
    if (!parsed.previous) {
      return responses::response_not_found(*previous_id, "previous_response_id");
    }
    std::vector<api::ChatMessage> earlier = responses::conversation_of(*parsed.previous);
    parsed.previous_messages = earlier.size();
    const auto at =
        parsed.messages.begin() + static_cast<std::ptrdiff_t>(parsed.conversation_start());
    parsed.messages.insert(at, std::make_move_iterator(earlier.begin()),
                           std::make_move_iterator(earlier.end()));
    return std::nullopt;
  }
  static auto start(ModelService& models, const Parsed& parsed, std::string& model_id) {
    return models.start_chat(parsed, model_id);
  }
  // Keeps only this request's own input and its answer, linked to the response it continued.
  static responses::ResponseFinished saver(const Parsed& parsed) {
    if (!parsed.settings.store || parsed.store == nullptr) return nullptr;
    const std::size_t own_start = parsed.conversation_start() + parsed.previous_messages;
    std::vector<api::ChatMessage> turn(
        parsed.messages.begin() + static_cast<std::ptrdiff_t>(own_start), parsed.messages.end());
    return [store = parsed.store, owner = parsed.owner, previous = parsed.previous,
            turn = std::move(turn)](const std::string& id, const std::string& json,
                                    const std::vector<responses::OutputItem>& output) mutable {
      turn.push_back(responses::assistant_message(output));
      store->put(id, std::move(owner),
                 responses::StoredResponse{json, std::move(turn), std::move(previous)});
    };
  }
  static responses::ResponsesStreamEncoder chunk_encoder(api::ResponseMeta meta,
                                                         const Parsed& parsed) {
    meta.id = responses::response_id(meta.id);
    return responses::ResponsesStreamEncoder(std::move(meta), parsed.settings, saver(parsed));
  }
  static EncodeChoices body_encoder(api::ResponseMeta meta, const Parsed& parsed) {
    meta.id = responses::response_id(meta.id);
    return [meta = std::move(meta), settings = parsed.settings, save = saver(parsed)](
               const std::vector<api::ChoiceOutput>& choices, const Usage& usage) {
      const api::ChoiceOutput empty;
      const api::ChoiceOutput& choice = choices.empty() ? empty : choices.front();
      const std::vector<responses::OutputItem> output = responses::output_items(choice);
      const responses::ResponseState state{responses::finished_status(choice.finish_reason),
                                           &output, &usage};
      std::string body = responses::encode_response(meta, settings, state);
      if (save) save(meta.id, body, output);
      return body;
    };
  }
};

template <typename Kind>
awaitable<bool> generate(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                         const Request& request, RequestRecord& record) {
  const ErrorEncoder encode_error = error_encoder_for(record.route->errors);
  auto parsed = Kind::parse(request.body());
  if (!parsed) {
    co_return co_await send_reply(core, stream, request, record,
                                  Reply::error(parsed.error(), true, encode_error));
  }
  parsed->client = client_of(core, stream, request);
  // A door that needs the server's state before it starts (the Responses store).
  if constexpr (requires { Kind::prepare(core, *parsed); }) {
    if (std::optional<api::ApiError> error = Kind::prepare(core, *parsed)) {
      co_return co_await send_reply(core, stream, request, record,
                                    Reply::error(*error, true, encode_error));
    }
  }
  std::string model_id;
  auto started = co_await on_pool(core, parsed->client,
                                  [&] { return Kind::start(core.models, *parsed, model_id); });
  if (!*started) {
    co_return co_await send_reply(core, stream, request, record,
                                  Reply::error(started->error(), true, encode_error));
  }
  record.model = model_id;
  api::ResponseMeta meta{api::make_response_id(Kind::kIdPrefix), unix_now(), model_id};
  std::unique_ptr<GenerationStream> generation = std::move(started->value());
  if (parsed->stream) {
    auto encoder = Kind::chunk_encoder(std::move(meta), *parsed);
    co_return co_await stream_events(core, stream, buffer, request, record, *generation, encoder);
  }
  std::optional<Reply> reply =
      co_await collect_events(core, stream, buffer, record, *generation,
                              Kind::body_encoder(std::move(meta), *parsed), encode_error);
  if (!reply) co_return false;
  co_return co_await send_reply(core, stream, request, record, std::move(*reply));
}

// The tokenizer endpoints answer with a value, but their work waits in its client's line on the
// preparation queue, so they need to know who asks.
using ClientReplyHandler = awaitable<Reply> (*)(ServerCore&, const Request&, std::string_view);

template <ClientReplyHandler handler>
awaitable<bool> reply_for_client(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer&,
                                 const Request& request, RequestRecord& record) {
  const std::string client = client_of(core, stream, request);
  Reply reply = co_await handler(core, request, client);
  co_return co_await send_reply(core, stream, request, record, std::move(reply));
}

}  // namespace

// --- the handlers of routes.cpp's table ---------------------------------------------------------

using ReplyHandler = awaitable<Reply> (*)(ServerCore&, const Request&, const RouteMatch&);
using StreamHandler = awaitable<bool> (*)(ServerCore&, beast::tcp_stream&, beast::flat_buffer&,
                                          const Request&, RequestRecord&);

// Exactly one of the two.
struct EndpointHandler {
  ReplyHandler reply;
  StreamHandler stream;
};

const EndpointHandler health_handler{&health, nullptr};
const EndpointHandler ready_handler{&ready, nullptr};
const EndpointHandler metrics_handler{&metrics_text, nullptr};
const EndpointHandler model_list_handler{&model_list, nullptr};
const EndpointHandler model_card_handler{&model_card, nullptr};
const EndpointHandler chat_completions_handler{nullptr, &generate<ChatEndpoint>};
const EndpointHandler completions_handler{nullptr, &generate<CompletionEndpoint>};
const EndpointHandler tokenize_handler{nullptr, &reply_for_client<&tokenize>};
const EndpointHandler detokenize_handler{nullptr, &reply_for_client<&detokenize>};
const EndpointHandler messages_handler{nullptr, &generate<AnthropicMessagesEndpoint>};
const EndpointHandler count_tokens_handler{nullptr, &reply_for_client<&count_message_tokens>};
const EndpointHandler responses_handler{nullptr, &generate<ResponsesEndpoint>};
const EndpointHandler stored_response_handler{&stored_response, nullptr};
const EndpointHandler delete_response_handler{&delete_response, nullptr};

Reply Reply::error(const api::ApiError& error, bool keep_alive, ErrorEncoder encode) {
  return Reply{error.status, encode(error), "application/json", error.retry_after_s, keep_alive};
}

awaitable<bool> send_reply(ServerCore& core, beast::tcp_stream& stream, const Request& request,
                           RequestRecord& record, Reply reply) {
  record.status = reply.status;
  auto response = make_response(core, request, reply.status, std::move(reply.body),
                                reply.content_type, reply.keep_alive);
  if (reply.retry_after_s > 0) {
    response.set(http::field::retry_after, std::to_string(reply.retry_after_s));
  }
  const bool keep_alive = response.keep_alive();
  stream.expires_after(seconds(core.config.timeouts.slow_client_s));
  auto [ec, bytes] = co_await http::async_write(stream, response, kUseTuple);
  stream.expires_never();
  co_return !ec && keep_alive;
}

awaitable<bool> answer(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                       const Request& request, RequestRecord& record) {
  auto route = match_route(request.method_string(), request.target());
  if (!route) {
    // A wrong method or path under Anthropic's endpoints still answers in Anthropic's shape.
    const ErrorEncoder encode = error_encoder_for(error_shape_of_unrouted(request.target()));
    co_return co_await send_reply(core, stream, request, record,
                                  Reply::error(route.error(), true, encode));
  }
  record.route = route->route;
  const ErrorEncoder encode_error = error_encoder_for(record.route->errors);
  if (core.keys.enabled() &&
      (!record.route->operational || core.config.protect_operational_endpoints)) {
    const ApiKeys::Verdict verdict =
        core.keys.check(request[http::field::authorization], request["x-api-key"]);
    if (verdict != ApiKeys::Verdict::allowed) {
      // A named local: GCC mishandles a ?: temporary that lives across a co_await.
      const api::ApiError error =
          verdict == ApiKeys::Verdict::missing ? api::missing_api_key() : api::invalid_api_key();
      co_return co_await send_reply(core, stream, request, record,
                                    Reply::error(error, true, encode_error));
    }
  }
  // Only JSON bodies: this also shuts the browser's cross-site form post out.
  if (request.method() == http::verb::post && !request.body().empty() &&
      !is_json_content_type(request[http::field::content_type])) {
    const api::ApiError error = api::unsupported_media_type(request[http::field::content_type]);
    co_return co_await send_reply(core, stream, request, record,
                                  Reply::error(error, true, encode_error));
  }
  const EndpointHandler& handler = *record.route->handler;
  if (handler.stream != nullptr) {
    co_return co_await handler.stream(core, stream, buffer, request, record);
  }
  Reply reply = co_await handler.reply(core, request, *route);
  co_return co_await send_reply(core, stream, request, record, std::move(reply));
}

namespace {

// The next request off the connection, read whole, with its id and counted in active_requests;
// nullopt when the connection ends instead (closed, idle too long, or a malformed, slow or
// oversized request answered with its error). `first`: the connection's first read, which the
// header deadline alone bounds.
awaitable<std::optional<Request>> read_request(ServerCore& core, beast::tcp_stream& stream,
                                               beast::flat_buffer& buffer, bool first) {
  const ServerConfig& config = core.config;
  // Idle keep-alive: wait for the next request's first byte.
  if (!first && buffer.size() == 0) {
    stream.expires_after(seconds(config.timeouts.idle_s));
    auto [ec, bytes] = co_await stream.async_read_some(buffer.prepare(4096), kUseTuple);
    if (ec) co_return std::nullopt;
    buffer.commit(bytes);
  }
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(
      std::min<std::uint64_t>(config.limits.max_header_bytes, UINT32_MAX)));
  parser.body_limit(config.limits.max_body_bytes);

  // Header and body deadlines race a timer rather than using the stream's expiry, which
  // would close the socket before a 408 could be sent.
  asio::steady_timer deadline(stream.get_executor());
  deadline.expires_after(seconds(config.timeouts.header_s));
  auto header = co_await (http::async_read_header(stream, buffer, parser, kUseTuple) ||
                          deadline.async_wait(kUseTuple));
  if (header.index() == 1) {
    co_await reply_to_read_error(core, stream, beast::error::timeout, buffer.size() > 0);
    co_return std::nullopt;
  }
  if (const auto [header_ec, header_bytes] = std::get<0>(header); header_ec) {
    co_await reply_to_read_error(core, stream, header_ec, buffer.size() > 0 || header_bytes > 0);
    co_return std::nullopt;
  }
  RequestRecord record;
  if (!host_header_valid(parser.get())) {
    const api::ApiError error{400, "An HTTP/1.1 request needs exactly one Host header",
                              "invalid_request_error", "", "bad_request"};
    co_await send_reply(core, stream, parser.get(), record, Reply::error(error, false));
    co_return std::nullopt;
  }
  const auto content_length = parser.content_length();
  if (content_length && *content_length > config.limits.max_body_bytes) {
    co_await send_reply(core, stream, parser.get(), record,
                        Reply::error(api::request_too_large(config.limits.max_body_bytes), false));
    co_return std::nullopt;
  }
  if (!parser.is_done()) {
    if (const auto expect = parser.get()[http::field::expect];
        beast::iequals(expect, "100-continue")) {
      http::response<http::empty_body> proceed{http::status::continue_, 11};
      stream.expires_after(seconds(config.timeouts.body_s));
      auto [write_ec, ignored] = co_await http::async_write(stream, proceed, kUseTuple);
      if (write_ec) co_return std::nullopt;
    }
    deadline.expires_after(seconds(config.timeouts.body_s));
    auto body = co_await (http::async_read(stream, buffer, parser, kUseTuple) ||
                          deadline.async_wait(kUseTuple));
    const boost::system::error_code body_ec =
        body.index() == 1 ? beast::error::timeout : std::get<0>(std::get<0>(body));
    if (body_ec) {
      if (body_ec == http::error::body_limit) {
        co_await send_reply(
            core, stream, parser.get(), record,
            Reply::error(api::request_too_large(config.limits.max_body_bytes), false));
      } else {
        co_await reply_to_read_error(core, stream, body_ec, true);
      }
      co_return std::nullopt;
    }
  }
  stream.expires_never();
  Request request = parser.release();
  assign_request_id(request);
  core.active_requests.fetch_add(1);
  co_return request;
}

// Answers a request read off the connection and writes its log line; false when the connection
// ends after it.
awaitable<bool> answer_and_log(ServerCore& core, beast::tcp_stream& stream,
                               beast::flat_buffer& buffer, const Request& request,
                               std::string_view client) {
  RequestRecord record;
  const bool keep_alive = co_await answer(core, stream, buffer, request, record);
  core.active_requests.fetch_sub(1);
  log_request(core, request, record, client);
  co_return keep_alive && !core.draining.load();
}

void close_sending(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace

awaitable<void> run_session(ServerCore& core, tcp::socket socket,
                            std::unique_ptr<ConnectionCount> count) {
  // Tokens go out as small writes; with Nagle's algorithm each waited for the client's delayed
  // ACK, about 40 ms on Linux, before the first token of every stream.
  boost::system::error_code no_delay_error;  // a socket that refuses still works
  socket.set_option(tcp::no_delay(true), no_delay_error);
  const std::string client = peer_address(socket);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (bool first = true;; first = false) {
    std::optional<Request> request = co_await read_request(core, stream, buffer, first);
    if (!request) break;
    if (served_on_streams(*request) && hand_over(core, stream, buffer, *request, count)) co_return;
    if (!co_await answer_and_log(core, stream, buffer, *request, client)) break;
  }
  close_sending(stream);
}

awaitable<void> continue_on_streams(ServerCore& core, tcp::socket socket, beast::flat_buffer buffer,
                                    Request request,
                                    [[maybe_unused]] std::unique_ptr<ConnectionCount> count) {
  // `count` counts the connection open until this session ends.
  const std::string client = peer_address(socket);
  beast::tcp_stream stream(std::move(socket));
  bool open = co_await answer_and_log(core, stream, buffer, request, client);
  while (open) {
    std::optional<Request> next = co_await read_request(core, stream, buffer, false);
    open = next && co_await answer_and_log(core, stream, buffer, *next, client);
  }
  close_sending(stream);
}

void assign_request_id(Request& request) {
  if (!usable_request_id(request[kRequestIdHeader])) {
    request.set(kRequestIdHeader, new_request_id());
  }
}

std::string peer_address(const tcp::socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return "-";
  if (peer.address().is_v6()) {
    return fmt::format("[{}]:{}", peer.address().to_string(), peer.port());
  }
  return fmt::format("{}:{}", peer.address().to_string(), peer.port());
}

void log_request(ServerCore& core, const Request& request, const RequestRecord& record,
                 std::string_view client) {
  const std::string_view endpoint = record.route != nullptr ? record.route->label : "other";
  core.metrics.count_request(record.model, endpoint, record.status);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - record.start).count();
  const bool operational = record.route != nullptr && record.route->operational;
  const auto level =
      operational && record.status < 400 ? spdlog::level::debug : spdlog::level::info;
  spdlog::log(level,
              "{} {} {} {} request_id={} model={} prompt_tokens={} completion_tokens={} "
              "{:.1f}ms{}{}",
              client, std::string_view(request.method_string()), std::string_view(request.target()),
              record.status, std::string_view(request[kRequestIdHeader]),
              record.model.empty() ? "-" : record.model, record.usage.prompt_tokens,
              record.usage.completion_tokens, ms,
              record.reason.empty() ? "" : " reason=", record.reason);
}

}  // namespace tern::service::detail
