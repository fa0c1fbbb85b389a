#include "service/routes.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

TEST(RoutesTest, MatchesMethodAndPath) {
  auto chat = match_route("POST", "/v1/chat/completions?x=1");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->route->label, "/v1/chat/completions");
  EXPECT_FALSE(chat->route->operational);
  EXPECT_TRUE(chat->route->on_streams);
  auto health = match_route("GET", "/health");
  ASSERT_TRUE(health.ok());
  EXPECT_TRUE(health->route->operational);
  EXPECT_TRUE(health->route->probe);
  EXPECT_FALSE(health->route->on_streams);
  auto model = match_route("GET", "/v1/models/org%2Fname");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->route->label, "/v1/models/{id}");
  EXPECT_EQ(model->path_parameter, "org/name");
  EXPECT_EQ(match_route("GET", "/v1/models/")->route->label, "/v1/models");
}

TEST(RoutesTest, NotFoundAndMethodNotAllowed) {
  EXPECT_EQ(match_route("GET", "/v2/things").error().status, 404);
  const auto wrong = match_route("GET", "/v1/completions");
  EXPECT_EQ(wrong.error().status, 405);
  EXPECT_EQ(wrong.error().code, "method_not_allowed");
}

TEST(RoutesTest, HeadMatchesEveryGetRoute) {
  EXPECT_EQ(match_route("HEAD", "/health")->route->label, "/health");
  EXPECT_EQ(match_route("HEAD", "/ready")->route->label, "/ready");
  EXPECT_EQ(match_route("HEAD", "/v1/models")->route->label, "/v1/models");
  EXPECT_EQ(match_route("HEAD", "/v1/models/m")->path_parameter, "m");
  EXPECT_EQ(match_route("HEAD", "/v1/chat/completions").error().status, 405);
  EXPECT_EQ(match_route("HEAD", "/nope").error().status, 404);
}

// Anthropic's SDKs add ?beta=true (vllm#44576 answered it with a 400).
TEST(RoutesTest, AnthropicMessagesWithAnyQuery) {
  EXPECT_EQ(match_route("POST", "/v1/messages")->route->label, "/v1/messages");
  EXPECT_EQ(match_route("POST", "/v1/messages?beta=true")->route->label, "/v1/messages");
  EXPECT_EQ(match_route("POST", "/v1/messages/count_tokens?beta=true")->route->label,
            "/v1/messages/count_tokens");
  EXPECT_EQ(match_route("GET", "/v1/messages").error().status, 405);
  EXPECT_EQ(match_route("POST", "/v1/messages")->route->errors, ErrorShape::anthropic);
  EXPECT_EQ(error_shape_of_unrouted("/v1/messages/batches"), ErrorShape::anthropic);
  EXPECT_EQ(error_shape_of_unrouted("/v1/chat"), ErrorShape::openai);
}

TEST(RoutesTest, ResponsesAndStoredResponses) {
  EXPECT_EQ(match_route("POST", "/v1/responses")->route->label, "/v1/responses");
  const auto stored = match_route("GET", "/v1/responses/resp_1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->route->label, "/v1/responses/{id}");
  EXPECT_EQ(stored->path_parameter, "resp_1");
  EXPECT_EQ(match_route("DELETE", "/v1/responses/resp_1")->route->method, "DELETE");
  EXPECT_EQ(match_route("GET", "/v1/responses").error().status, 405);
  EXPECT_EQ(match_route("PUT", "/v1/responses/resp_1").error().status, 405);
}

// Every row is whole: a handler, a label, and no two rows of one method and path.
TEST(RoutesTest, EveryRowHasAHandlerAndALabel) {
  for (const Route& route : routes()) {
    EXPECT_NE(route.handler, nullptr) << route.method << " " << route.path;
    EXPECT_FALSE(route.label.empty()) << route.method << " " << route.path;
    int same = 0;
    for (const Route& other : routes()) {
      same += other.method == route.method && other.path == route.path;
    }
    EXPECT_EQ(same, 1) << route.method << " " << route.path;
  }
}

}  // namespace
}  // namespace tern::service
