#pragma once

// What one streamed chunk of /v1/completions or /v1/chat/completions says, as far as the load
// generator cares: did it carry generated text, the usage, or an error?
#include <string_view>

namespace tern::loadgen {

struct StreamChunk {
  bool valid = false;    // parsed as a JSON object
  bool content = false;  // a choice with non-empty `text` or `delta.content`
  bool usage = false;    // a `usage` object (the last chunk with include_usage)
  int prompt_tokens = 0;
  int completion_tokens = 0;
  bool error = false;  // an `error` object: the server failed mid-stream
};

// Parses one SSE `data:` payload (not "[DONE]"). Uses one parser per thread.
StreamChunk parse_stream_chunk(std::string_view data);

}  // namespace tern::loadgen
