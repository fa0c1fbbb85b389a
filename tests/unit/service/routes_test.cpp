#include "service/routes.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

TEST(RoutesTest, MatchesMethodAndPath) {
  auto chat = match_route("POST", "/v1/chat/completions?x=1");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->endpoint, Endpoint::chat_completions);
  EXPECT_FALSE(chat->operational);
  auto health = match_route("GET", "/health");
  ASSERT_TRUE(health.ok());
  EXPECT_TRUE(health->operational);
  auto model = match_route("GET", "/v1/models/org%2Fname");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->endpoint, Endpoint::model);
  EXPECT_EQ(model->path_parameter, "org/name");
  EXPECT_EQ(match_route("GET", "/v1/models/")->endpoint, Endpoint::models);
  EXPECT_EQ(endpoint_label(Endpoint::model), "/v1/models/{id}");
}

TEST(RoutesTest, NotFoundAndMethodNotAllowed) {
  EXPECT_EQ(match_route("GET", "/v2/things").error().status, 404);
  const auto wrong = match_route("GET", "/v1/completions");
  EXPECT_EQ(wrong.error().status, 405);
  EXPECT_EQ(wrong.error().code, "method_not_allowed");
}

TEST(RoutesTest, HeadMatchesEveryGetRoute) {
  EXPECT_EQ(match_route("HEAD", "/health")->endpoint, Endpoint::health);
  EXPECT_EQ(match_route("HEAD", "/ready")->endpoint, Endpoint::ready);
  EXPECT_EQ(match_route("HEAD", "/v1/models")->endpoint, Endpoint::models);
  EXPECT_EQ(match_route("HEAD", "/v1/models/m")->path_parameter, "m");
  EXPECT_EQ(match_route("HEAD", "/v1/chat/completions").error().status, 405);
  EXPECT_EQ(match_route("HEAD", "/nope").error().status, 404);
}

// Anthropic's SDKs add ?beta=true (vllm#44576 answered it with a 400).
TEST(RoutesTest, AnthropicMessagesWithAnyQuery) {
  EXPECT_EQ(match_route("POST", "/v1/messages")->endpoint, Endpoint::messages);
  EXPECT_EQ(match_route("POST", "/v1/messages?beta=true")->endpoint, Endpoint::messages);
  EXPECT_EQ(match_route("POST", "/v1/messages/count_tokens?beta=true")->endpoint,
            Endpoint::messages_count_tokens);
  EXPECT_EQ(match_route("GET", "/v1/messages").error().status, 405);
  EXPECT_EQ(endpoint_label(Endpoint::messages), "/v1/messages");
  EXPECT_EQ(endpoint_label(Endpoint::messages_count_tokens), "/v1/messages/count_tokens");
}

TEST(RoutesTest, ResponsesAndStoredResponses) {
  EXPECT_EQ(match_route("POST", "/v1/responses")->endpoint, Endpoint::responses);
  const auto stored = match_route("GET", "/v1/responses/resp_1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->endpoint, Endpoint::response);
  EXPECT_EQ(stored->path_parameter, "resp_1");
  EXPECT_EQ(match_route("DELETE", "/v1/responses/resp_1")->endpoint, Endpoint::response_delete);
  EXPECT_EQ(match_route("GET", "/v1/responses").error().status, 405);
  EXPECT_EQ(match_route("PUT", "/v1/responses/resp_1").error().status, 405);
  EXPECT_EQ(endpoint_label(Endpoint::responses), "/v1/responses");
  EXPECT_EQ(endpoint_label(Endpoint::response), "/v1/responses/{id}");
  EXPECT_EQ(endpoint_label(Endpoint::response_delete), "/v1/responses/{id}");
}

}  // namespace
}  // namespace tern::service
