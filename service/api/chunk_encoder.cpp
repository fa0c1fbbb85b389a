#include "service/api/chunk_encoder.h"

#include "service/sse.h"

namespace tern::service::api {

void ChunkEncoder::error(std::string& out, const ApiError& error) {
  append_sse_data(out, encode_error(error));
  out += kSseDone;
}

void ChunkEncoder::keepalive(std::string& out) {
  append_sse_comment(out, "keepalive");
}

}  // namespace tern::service::api
