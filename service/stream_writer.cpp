// The stream writer: a generation's pump (engine events into a bounded buffer), writer (the
// buffer onto the socket, with keepalive comments) and disconnect watch, which run together on
// the connection's strand; and the cut of open generations when the drain timeout runs out.
#include "service/stream_writer.h"

#include <spdlog/spdlog.h>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "service/http_session.h"
#include "service/request_headers.h"
#include "service/sse.h"

namespace tern::service::detail {

using namespace asio::experimental::awaitable_operators;

// Bridges GenerationStream's waker to the connection's strand: wake() (on an engine thread)
// posts a cancel of `timer`, on which the pump waits. It keeps itself alive while armed, so a
// wake() already on its way when the connection ends finds a live object.
class StreamWaker final : public engine::ChannelWaker,
                          public std::enable_shared_from_this<StreamWaker> {
 public:
  explicit StreamWaker(const asio::any_io_executor& executor)
      : timer(executor, Clock::time_point::max()) {}

  void wake() override {
    std::shared_ptr<StreamWaker> self = std::move(self_);
    asio::post(timer.get_executor(), [self] {
      self->armed_ = false;
      self->timer.cancel();
    });
  }

  // Strand only. False when an event is already there.
  bool arm(GenerationStream& stream) {
    if (armed_) return true;
    self_ = shared_from_this();
    if (stream.arm(*this)) {
      armed_ = true;
      return true;
    }
    self_.reset();
    return false;
  }

  // Strand only, when the connection is done with the stream.
  void release(GenerationStream& stream) {
    if (armed_ && stream.disarm()) {
      armed_ = false;
      self_.reset();
    }
    // Otherwise a wake() is on its way and drops the last reference when it lands.
  }

  asio::steady_timer timer;

 private:
  std::shared_ptr<StreamWaker> self_;
  bool armed_ = false;
};

// What the pump, the writer and the disconnect watcher of one request share. All three run on
// the connection's strand, so plain fields suffice.
struct StreamState {
  StreamState(GenerationStream& source_in, const asio::any_io_executor& executor,
              const ServerConfig& config, ServiceMetrics& metrics,
              ServiceMetrics::ModelHistograms histograms_in, Clock::time_point start_in)
      : source(source_in),
        waker(std::make_shared<StreamWaker>(executor)),
        writer_signal(executor, Clock::time_point::max()),
        buffer(config.limits.stream_buffer_bytes, seconds(config.timeouts.slow_client_s)),
        buffered_bytes(metrics.stream_buffered_bytes()),
        buffer_peak_bytes(metrics.stream_buffer_peak_bytes()),
        histograms(histograms_in),
        start(start_in) {}
  ~StreamState() { buffered_bytes.add(-static_cast<double>(reported_bytes)); }
  StreamState(const StreamState&) = delete;
  StreamState& operator=(const StreamState&) = delete;

  // The drain timeout ran out: the pump ends the stream with an error event.
  void cut_now() {
    cut = true;
    waker->timer.cancel();
    writer_signal.cancel();
  }

  // Publishes the buffer's pending bytes and peak to /metrics; after each change to it.
  void account_buffer() {
    const std::size_t pending = buffer.pending_bytes();
    buffered_bytes.add(static_cast<double>(pending) - static_cast<double>(reported_bytes));
    reported_bytes = pending;
    if (buffer.peak_bytes() > reported_peak_bytes) {
      reported_peak_bytes = buffer.peak_bytes();
      buffer_peak_bytes.raise_to(static_cast<double>(reported_peak_bytes));
    }
  }

  // Token timing for the latency histograms.
  void saw_tokens(Clock::time_point now) {
    if (!first_token_at) {
      first_token_at = now;
      histograms.time_to_first_token.observe(std::chrono::duration<double>(now - start).count());
    } else {
      histograms.inter_token_latency.observe(
          std::chrono::duration<double>(now - last_token_at).count());
    }
    last_token_at = now;
  }

  GenerationStream& source;
  std::shared_ptr<StreamWaker> waker;
  asio::steady_timer writer_signal;
  SseBuffer buffer;
  Gauge& buffered_bytes;
  Gauge& buffer_peak_bytes;
  std::size_t reported_bytes = 0;  // of buffer.pending_bytes(), in buffered_bytes
  std::size_t reported_peak_bytes = 0;
  ServiceMetrics::ModelHistograms histograms;
  Clock::time_point start;
  std::optional<Clock::time_point> first_token_at;
  Clock::time_point last_token_at;
  bool finished = false;  // done or error delivered
  bool dropped = false;   // slow client
  bool cut = false;       // by the drain timeout
  // The pump waits for the writer to take bytes from a full buffer.
  bool waiting_for_room = false;
  bool client_gone = false;
  bool write_failed = false;
  std::optional<api::ApiError> error;
  Usage usage;
};

namespace {

bool has_output(const GenerationEvent& event) {
  return !event.text.empty() || !event.reasoning.empty() || !event.tool_calls.empty() ||
         !event.logprobs.empty();
}

// Lists a generation in open_generations for as long as it lives. One that starts after the
// drain timeout (its request was still being prepared) is cut from the start.
struct OpenStreamState {
  OpenStreamState(ServerCore& owner, StreamState& listed) : impl(owner), generation(listed) {
    const std::lock_guard lock(impl.generations_mutex);
    impl.open_generations.insert(&generation);
    if (impl.drain_timed_out.load()) generation.cut = true;
  }
  ~OpenStreamState() {
    const std::lock_guard lock(impl.generations_mutex);
    impl.open_generations.erase(&generation);
  }
  OpenStreamState(const OpenStreamState&) = delete;
  OpenStreamState& operator=(const OpenStreamState&) = delete;
  ServerCore& impl;
  StreamState& generation;
};

// Drains the stream's events through `on_event` until it reports finished. In a stream it
// then idles until the writer is done; it returns early only to drop a slow client. It takes
// no event while the buffer is full: the engine's channel then fills up and the engine pauses
// (or cancels, by its SlowConsumerPolicy) the request, so a stream holds at most
// stream_buffer_bytes plus one event.
template <typename OnEvent>
awaitable<void> pump(StreamState& generation, OnEvent on_event, bool streaming) {
  for (;;) {
    bool any = false;
    while (!generation.finished && !generation.cut && !generation.buffer.full()) {
      std::optional<GenerationEvent> event = generation.source.try_next();
      if (!event) break;
      any = true;
      on_event(*event);
    }
    if (generation.cut && !generation.finished) {
      GenerationEvent shutdown;
      shutdown.kind = GenerationEvent::Kind::error;
      shutdown.error = api::service_unavailable(
          "The server is shutting down: its drain timeout ended this request");
      on_event(shutdown);
      generation.source.cancel();
      any = true;
    }
    const auto now = Clock::now();
    if (any) {
      generation.buffer.appended(now);
      generation.account_buffer();
      generation.writer_signal.cancel();
    }
    if (generation.finished) {
      if (!streaming) co_return;
      generation.waker->timer.expires_at(Clock::time_point::max());
      co_await generation.waker->timer.async_wait(kUseTuple);
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
      continue;
    }
    if (generation.buffer.should_drop(now)) {
      generation.dropped = true;
      co_return;
    }
    if (generation.buffer.full()) {
      generation.waiting_for_room = true;
      generation.waker->timer.expires_at(
          generation.buffer.drop_deadline().value_or(Clock::time_point::max()));
      co_await generation.waker->timer.async_wait(kUseTuple);
      generation.waiting_for_room = false;
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
      continue;
    }
    if (!generation.waker->arm(generation.source)) continue;
    generation.waker->timer.expires_at(
        generation.buffer.drop_deadline().value_or(Clock::time_point::max()));
    co_await generation.waker->timer.async_wait(kUseTuple);
    if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
  }
}

// Sends what the pump queued, as HTTP chunks; a comment line keeps an idle stream (a long
// prefill) alive. Returns when everything up to [DONE] is out, or when a write fails.
awaitable<void> write_events(const ServerConfig& config, beast::tcp_stream& stream,
                             StreamState& generation, api::ChunkEncoder& encoder, bool chunked) {
  auto last_write = Clock::now();
  const auto keepalive = seconds(config.timeouts.sse_keepalive_s);
  for (;;) {
    if (!generation.buffer.empty()) {
      const std::string bytes = generation.buffer.take_for_write();
      stream.expires_after(seconds(config.timeouts.slow_client_s));
      boost::system::error_code ec;
      if (chunked) {
        std::tie(ec, std::ignore) =
            co_await asio::async_write(stream, http::make_chunk(asio::buffer(bytes)), kUseTuple);
      } else {
        std::tie(ec, std::ignore) =
            co_await asio::async_write(stream, asio::buffer(bytes), kUseTuple);
      }
      stream.expires_never();
      if (ec) {
        generation.write_failed = true;
        if (ec == beast::error::timeout) generation.dropped = true;  // for slow_client_s
        co_return;
      }
      last_write = Clock::now();
      generation.buffer.written(bytes.size(), last_write);
      generation.account_buffer();
      if (generation.waiting_for_room) generation.waker->timer.cancel();
      continue;
    }
    if (generation.finished) {
      if (chunked) {
        stream.expires_after(seconds(config.timeouts.slow_client_s));
        auto [ec, ignored] = co_await asio::async_write(stream, http::make_chunk_last(), kUseTuple);
        stream.expires_never();
        if (ec) generation.write_failed = true;
        if (ec == beast::error::timeout) generation.dropped = true;
      }
      co_return;
    }
    generation.writer_signal.expires_at(last_write + keepalive);
    auto [ec] = co_await generation.writer_signal.async_wait(kUseTuple);
    if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
    if (!ec) {
      encoder.keepalive(generation.buffer.queue());
      generation.buffer.appended(Clock::now());
      generation.account_buffer();
    }
  }
}

// Notices a client that hangs up while its request runs. Bytes it sends meanwhile (a
// pipelined request) are kept for the next read.
awaitable<void> watch_disconnect(const ServerConfig& config, beast::tcp_stream& stream,
                                 beast::flat_buffer& buffer, StreamState& generation) {
  for (;;) {
    if (buffer.size() > config.limits.max_header_bytes + config.limits.max_body_bytes) {
      generation.client_gone = true;  // far ahead of us: not a well-behaved client
      co_return;
    }
    auto [ec, bytes] = co_await stream.socket().async_read_some(buffer.prepare(4096), kUseTuple);
    // Before the cancellation check: a read that completed as the watch was cancelled (the
    // response just ended, the client already sent its next request) holds that request's
    // bytes, and dropping them left the connection waiting for it until idle_s.
    buffer.commit(bytes);
    if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
    if (ec) {
      generation.client_gone = true;
      co_return;
    }
  }
}

void finish_generation(ServerCore& core, StreamState& generation, RequestRecord& record) {
  const ServerConfig& config = core.config;
  generation.waker->release(generation.source);
  const bool completed = generation.finished && !generation.error && !generation.dropped &&
                         !generation.client_gone && !generation.write_failed;
  if (!completed && !generation.finished) generation.source.cancel();
  if (generation.dropped) {
    spdlog::warn("dropped a slow client: {} bytes still pending after slow_client_s ({} s)",
                 generation.buffer.pending_bytes(), config.timeouts.slow_client_s);
    record.reason = "slow_client";
  } else if (generation.cut) {
    record.reason = "drain_timeout";
  }
  if (!record.reason.empty()) core.metrics.count_dropped_stream(record.model, record.reason);
  if (generation.client_gone || generation.dropped) record.status = 499;
  // A stream cut before its end never got its final usage: log what it delivered.
  const bool has_final_usage = generation.finished && !generation.error;
  record.usage = has_final_usage ? generation.usage : generation.source.usage_so_far();
  if (has_final_usage) {
    generation.histograms.prompt_tokens.observe(generation.usage.prompt_tokens);
    generation.histograms.generation_tokens.observe(generation.usage.completion_tokens);
  }
  generation.histograms.end_to_end_latency.observe(
      std::chrono::duration<double>(Clock::now() - record.start).count());
}

}  // namespace

awaitable<bool> stream_events(ServerCore& core, beast::tcp_stream& stream,
                              beast::flat_buffer& buffer, const Request& request,
                              RequestRecord& record, GenerationStream& source,
                              api::ChunkEncoder& encoder) {
  const ServerConfig& config = core.config;
  const bool chunked = request.version() >= 11;
  http::response<http::empty_body> response{http::status::ok, request.version()};
  response.set(http::field::server, "tern");
  response.set(http::field::content_type, "text/event-stream");
  response.set(http::field::cache_control, "no-cache");
  response.set("X-Accel-Buffering", "no");
  response.set(kRequestIdHeader, request[kRequestIdHeader]);
  response.keep_alive(chunked && request.keep_alive() && !core.draining.load());
  if (chunked) response.chunked(true);
  const bool keep_alive = response.keep_alive();
  record.status = 200;
  http::response_serializer<http::empty_body> serializer{response};
  stream.expires_after(seconds(config.timeouts.slow_client_s));
  auto [header_ec, header_bytes] = co_await http::async_write_header(stream, serializer, kUseTuple);
  stream.expires_never();

  const auto executor = co_await asio::this_coro::executor;
  StreamState generation(source, executor, config, core.metrics,
                         core.metrics.histograms(record.model), record.start);
  const OpenStreamState listed(core, generation);
  if (header_ec) {
    generation.write_failed = true;
    finish_generation(core, generation, record);
    co_return false;
  }
  encoder.start(generation.buffer.queue(), source.prompt_tokens());
  generation.buffer.appended(Clock::now());
  auto on_event = [&](GenerationEvent& event) {
    std::string& out = generation.buffer.queue();
    switch (event.kind) {
      case GenerationEvent::Kind::delta:
        generation.saw_tokens(Clock::now());
        encoder.delta(out, event);
        break;
      case GenerationEvent::Kind::finish:
        if (has_output(event)) {
          generation.saw_tokens(Clock::now());
          encoder.delta(out, event);
        }
        encoder.finish(out, event.index, event.finish_reason, event.stop_sequence);
        break;
      case GenerationEvent::Kind::done:
        generation.usage = event.usage;
        encoder.done(out, event.usage);
        generation.finished = true;
        break;
      case GenerationEvent::Kind::error:
        // Headers are out; the error travels as an event in the API's shape.
        encoder.error(out, event.error);
        generation.error = event.error;
        generation.finished = true;
        break;
    }
  };
  co_await (write_events(config, stream, generation, encoder, chunked) ||
            pump(generation, on_event, true) ||
            watch_disconnect(config, stream, buffer, generation));
  finish_generation(core, generation, record);
  const bool clean = generation.finished && !generation.dropped && !generation.client_gone &&
                     !generation.write_failed;
  co_return clean&& keep_alive;
}

awaitable<std::optional<Reply>> collect_events(ServerCore& core, beast::tcp_stream& stream,
                                               beast::flat_buffer& buffer, RequestRecord& record,
                                               GenerationStream& source, EncodeChoices encode,
                                               ErrorEncoder encode_error) {
  const auto executor = co_await asio::this_coro::executor;
  StreamState generation(source, executor, core.config, core.metrics,
                         core.metrics.histograms(record.model), record.start);
  const OpenStreamState listed(core, generation);
  std::vector<api::ChoiceOutput> choices;
  auto choice = [&](int index) -> api::ChoiceOutput& {
    const std::size_t slot = index < 0 ? 0 : static_cast<std::size_t>(index);
    if (choices.size() <= slot) choices.resize(slot + 1);
    return choices[slot];
  };
  auto on_event = [&](GenerationEvent& event) {
    switch (event.kind) {
      case GenerationEvent::Kind::delta:
      case GenerationEvent::Kind::finish: {
        if (has_output(event)) generation.saw_tokens(Clock::now());
        api::ChoiceOutput& output = choice(event.index);
        if (output.logprobs.empty() && !event.logprobs.empty()) {
          output.logprobs_text_offset = output.text.size();
        }
        output.reasoning += event.reasoning;
        output.text += event.text;
        for (ToolCallOutput& call : event.tool_calls) {
          output.tool_calls.push_back(std::move(call));
          output.tool_call_text_offsets.push_back(output.text.size());
        }
        for (TokenLogprob& token : event.logprobs) output.logprobs.push_back(std::move(token));
        if (event.kind == GenerationEvent::Kind::finish) {
          output.finish_reason = event.finish_reason;
          output.stop_sequence = std::move(event.stop_sequence);
        }
        break;
      }
      case GenerationEvent::Kind::done:
        generation.usage = event.usage;
        generation.finished = true;
        break;
      case GenerationEvent::Kind::error:
        generation.error = event.error;
        generation.finished = true;
        break;
    }
  };
  co_await (pump(generation, on_event, false) ||
            watch_disconnect(core.config, stream, buffer, generation));
  finish_generation(core, generation, record);
  if (generation.client_gone || !generation.finished) co_return std::nullopt;
  if (generation.error) co_return Reply::error(*generation.error, true, encode_error);
  co_return Reply::json(encode(choices, generation.usage));
}

// Cuts every open generation on its own strand; returns how many there were. A generation
// still listed when its strand runs the cut is alive: it unlists itself on that strand.
std::size_t cut_open_generations(ServerCore& core) {
  const std::lock_guard lock(core.generations_mutex);
  for (StreamState* generation : core.open_generations) {
    asio::post(generation->writer_signal.get_executor(), [&core, generation] {
      const std::lock_guard strand_lock(core.generations_mutex);
      if (core.open_generations.contains(generation)) generation->cut_now();
    });
  }
  return core.open_generations.size();
}

}  // namespace tern::service::detail
