#include "service/api/response_common.h"

#include "service/random_id.h"
#include "service/sse.h"

namespace tern::service::api {

std::string make_response_id(std::string_view prefix) {
  return random_id(prefix);
}

}  // namespace tern::service::api
