#include "service/api/chat_request.h"

namespace tern::service::api {

std::string_view role_name(ChatRole role) {
  switch (role) {
    case ChatRole::system:
      return "system";
    case ChatRole::developer:
      return "developer";
    case ChatRole::user:
      return "user";
    case ChatRole::assistant:
      return "assistant";
    case ChatRole::tool:
      return "tool";
  }
  return "user";
}

}  // namespace tern::service::api
