#pragma once

// What stream_writer.cpp offers the HTTP session and the server: a generation streamed as SSE or
// collected into one JSON body, and the cut of open streams at the drain timeout.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "service/api/chunk_encoder.h"
#include "service/server_core.h"

namespace tern::service::detail {

// Streams a generation as SSE: the header, then chunks as the engine produces them, with
// keepalive comments, a bounded buffer per stream and a watch for the client hanging up.
awaitable<bool> stream_events(ServerCore& core, beast::tcp_stream& stream,
                              beast::flat_buffer& buffer, const Request& request,
                              RequestRecord& record, GenerationStream& source,
                              api::ChunkEncoder& encoder);

// Collects a whole generation for one JSON body. nullopt when the client left.
using EncodeChoices =
    std::function<std::string(const std::vector<api::ChoiceOutput>&, const Usage&)>;
awaitable<std::optional<Reply>> collect_events(ServerCore& core, beast::tcp_stream& stream,
                                               beast::flat_buffer& buffer, RequestRecord& record,
                                               GenerationStream& source, EncodeChoices encode,
                                               ErrorEncoder encode_error = &api::encode_error);

// The drain timeout ran out: every open generation ends with an error event. Returns how many.
std::size_t cut_open_generations(ServerCore& core);

}  // namespace tern::service::detail
