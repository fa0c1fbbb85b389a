#include "service/openai/unimplemented_fields.h"

#include <limits>
#include <string>

#include <fmt/format.h>

namespace tern::service::openai {
namespace {

api::json::Check check_best_of(const api::json::element& value) {
  int best_of = 1;
  if (api::json::Check error =
          api::json::read_int(value, "best_of", 1, std::numeric_limits<int>::max(), best_of)) {
    return error;
  }
  if (best_of == 1) return std::nullopt;
  return api::not_implemented("best_of", "'best_of' above 1 is not supported yet");
}

}  // namespace

api::json::Check refuse_unimplemented_field(std::string_view key, const api::json::element& value) {
  if (key == "best_of") return check_best_of(value);
  return std::nullopt;
}

}  // namespace tern::service::openai
