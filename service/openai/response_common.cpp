#include "service/openai/response_common.h"

#include "service/sse.h"

#include <atomic>
#include <chrono>
#include <random>

namespace tern::service::openai {

void write_stream_end(std::string& out, const ResponseMeta& meta, std::string_view object,
                      bool include_usage, const Usage& usage) {
  if (include_usage) {
    out += "data: ";
    JsonWriter json(out);
    json.begin_object()
        .field("id", meta.id)
        .field("object", object)
        .field("created", meta.created)
        .field("model", meta.model);
    json.key("choices").begin_array().end_array();
    write_usage(json, usage);
    json.end_object();
    out += "\n\n";
  }
  out += kSseDone;
}

void write_usage(JsonWriter& json, const Usage& usage) {
  json.key("usage").begin_object();
  json.field("prompt_tokens", usage.prompt_tokens)
      .field("completion_tokens", usage.completion_tokens)
      .field("total_tokens", usage.prompt_tokens + usage.completion_tokens);
  json.key("prompt_tokens_details").begin_object().field("cached_tokens", usage.cached_tokens);
  json.end_object();
  if (usage.reasoning_tokens > 0) {
    json.key("completion_tokens_details").begin_object();
    json.field("reasoning_tokens", usage.reasoning_tokens).end_object();
  }
  json.end_object();
}

void ChunkEncoder::error(std::string& out, const ApiError& error) {
  append_sse_data(out, encode_error(error));
  out += kSseDone;
}

void ChunkEncoder::keepalive(std::string& out) {
  append_sse_comment(out, "keepalive");
}

std::string make_response_id(std::string_view prefix) {
  // Unique, not secret: a per-thread generator seeded once, mixed with a process counter.
  thread_local std::mt19937_64 generator{
      std::random_device{}() ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t high = generator();
  const std::uint64_t low = generator() ^ counter.fetch_add(1, std::memory_order_relaxed);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  id += '-';
  for (const std::uint64_t word : {high, low}) {
    for (int shift = 60; shift >= 0; shift -= 4) id += kHex[(word >> shift) & 15];
  }
  return id;
}

}  // namespace tern::service::openai
