#pragma once

// The handler of each endpoint, as routes.cpp's table names them; defined in http_session.cpp,
// where their type (Asio coroutines) is complete.
#include "service/routes.h"

namespace tern::service::detail {

extern const EndpointHandler health_handler;
extern const EndpointHandler ready_handler;
extern const EndpointHandler metrics_handler;
extern const EndpointHandler model_list_handler;
extern const EndpointHandler model_card_handler;
extern const EndpointHandler chat_completions_handler;
extern const EndpointHandler completions_handler;
extern const EndpointHandler tokenize_handler;
extern const EndpointHandler detokenize_handler;
extern const EndpointHandler messages_handler;
extern const EndpointHandler count_tokens_handler;
extern const EndpointHandler responses_handler;
extern const EndpointHandler stored_response_handler;
extern const EndpointHandler delete_response_handler;

}  // namespace tern::service::detail
