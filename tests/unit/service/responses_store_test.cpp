// The in-memory store of Responses answers: lookups, the count bound (oldest out first), the
// TTL, deletion, and concurrent use from several threads.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "service/responses/response_store.h"

namespace tern::service::responses {
namespace {

using Clock = ResponseStore::Clock;
using std::chrono::seconds;

StoredResponse response(std::string json, std::string said = {}) {
  StoredResponse stored{std::move(json), {}};
  openai::ChatMessage message;
  message.content = std::move(said);
  stored.conversation.push_back(std::move(message));
  return stored;
}

TEST(ResponseStoreTest, KeepsAndReturnsResponses) {
  ResponseStore store(10, 60);
  const Clock::time_point now = Clock::now();
  store.put("resp_1", response("{1}", "hello"), now);
  const auto found = store.get("resp_1", now);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->json, "{1}");
  ASSERT_EQ(found->conversation.size(), 1u);
  EXPECT_EQ(found->conversation[0].content, "hello");
  EXPECT_EQ(store.get("resp_2", now), nullptr);
  EXPECT_EQ(store.size(now), 1u);
}

TEST(ResponseStoreTest, TheOldestGoesPastTheBound) {
  ResponseStore store(2, 60);
  const Clock::time_point now = Clock::now();
  store.put("a", response("A"), now);
  store.put("b", response("B"), now + seconds(1));
  store.put("c", response("C"), now + seconds(2));
  EXPECT_EQ(store.get("a", now + seconds(2)), nullptr);
  EXPECT_NE(store.get("b", now + seconds(2)), nullptr);
  EXPECT_NE(store.get("c", now + seconds(2)), nullptr);
  EXPECT_EQ(store.size(now + seconds(2)), 2u);
  // Storing an id again replaces it and makes it the newest.
  store.put("b", response("B2"), now + seconds(3));
  store.put("d", response("D"), now + seconds(4));
  EXPECT_EQ(store.get("c", now + seconds(4)), nullptr);
  EXPECT_EQ(store.get("b", now + seconds(4))->json, "B2");
}

TEST(ResponseStoreTest, ResponsesExpireAfterTheTtl) {
  ResponseStore store(10, 30);
  const Clock::time_point now = Clock::now();
  store.put("a", response("A"), now);
  store.put("b", response("B"), now + seconds(20));
  EXPECT_NE(store.get("a", now + seconds(29)), nullptr);
  EXPECT_EQ(store.get("a", now + seconds(30)), nullptr);
  EXPECT_NE(store.get("b", now + seconds(30)), nullptr);
  EXPECT_EQ(store.size(now + seconds(30)), 1u);
  EXPECT_FALSE(store.erase("b", now + seconds(50)));  // expired: nothing to delete
  EXPECT_EQ(store.size(now + seconds(50)), 0u);
}

TEST(ResponseStoreTest, DeleteRemoves) {
  ResponseStore store(10, 60);
  const Clock::time_point now = Clock::now();
  store.put("a", response("A"), now);
  const auto held = store.get("a", now);
  EXPECT_TRUE(store.erase("a", now));
  EXPECT_FALSE(store.erase("a", now));
  EXPECT_EQ(store.get("a", now), nullptr);
  EXPECT_EQ(held->json, "A");          // a reader that already has it keeps it
  store.put("b", response("B"), now);  // the order of the rest is intact
  EXPECT_EQ(store.size(now), 1u);
}

TEST(ResponseStoreTest, ZeroKeepsNothing) {
  ResponseStore store(0, 60);
  store.put("a", response("A"));
  EXPECT_EQ(store.get("a"), nullptr);
  EXPECT_EQ(store.size(), 0u);
}

// Generations finish on several streams threads while GETs and DELETEs arrive on another.
TEST(ResponseStoreTest, ConcurrentUse) {
  ResponseStore store(64, 60);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 500; ++i) {
        const std::string id = "resp_" + std::to_string(t) + "_" + std::to_string(i);
        store.put(id, response(id));
        const auto found = store.get(id);
        if (found != nullptr) {
          EXPECT_EQ(found->json, id);
        }
        if (i % 3 == 0) store.erase(id);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(store.size(), 64u);
}

}  // namespace
}  // namespace tern::service::responses
