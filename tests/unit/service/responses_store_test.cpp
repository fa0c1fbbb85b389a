// The in-memory store of Responses answers: lookups, the count bound (oldest out first), the
// TTL, deletion, concurrent use from several threads; each response's owner, the byte bound,
// each key's share, and links that refer to the earlier responses instead of copying them.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "service/responses/response_store.h"

namespace tern::service::responses {
namespace {

using Clock = ResponseStore::Clock;
using std::chrono::seconds;

StoredResponse response(std::string json, std::string said = {},
                        std::shared_ptr<const StoredResponse> previous = nullptr) {
  api::ChatMessage message;
  message.content = std::move(said);
  return StoredResponse{std::move(json), {std::move(message)}, std::move(previous)};
}

TEST(ResponseStoreTest, KeepsAndReturnsResponses) {
  ResponseStore store(10, 60);
  const Clock::time_point now = Clock::now();
  store.put("resp_1", "", response("{1}", "hello"), now);
  const auto found = store.get("resp_1", "", now);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->json, "{1}");
  ASSERT_EQ(found->turn.size(), 1u);
  EXPECT_EQ(found->turn[0].content, "hello");
  EXPECT_EQ(store.get("resp_2", "", now), nullptr);
  EXPECT_EQ(store.size(now), 1u);
}

TEST(ResponseStoreTest, TheOldestGoesPastTheBound) {
  ResponseStore store(2, 60);
  const Clock::time_point now = Clock::now();
  store.put("a", "", response("A"), now);
  store.put("b", "", response("B"), now + seconds(1));
  store.put("c", "", response("C"), now + seconds(2));
  EXPECT_EQ(store.get("a", "", now + seconds(2)), nullptr);
  EXPECT_NE(store.get("b", "", now + seconds(2)), nullptr);
  EXPECT_NE(store.get("c", "", now + seconds(2)), nullptr);
  EXPECT_EQ(store.size(now + seconds(2)), 2u);
  // Storing an id again replaces it and makes it the newest.
  store.put("b", "", response("B2"), now + seconds(3));
  store.put("d", "", response("D"), now + seconds(4));
  EXPECT_EQ(store.get("c", "", now + seconds(4)), nullptr);
  EXPECT_EQ(store.get("b", "", now + seconds(4))->json, "B2");
}

TEST(ResponseStoreTest, ResponsesExpireAfterTheTtl) {
  ResponseStore store(10, 30);
  const Clock::time_point now = Clock::now();
  store.put("a", "", response("A"), now);
  store.put("b", "", response("B"), now + seconds(20));
  EXPECT_NE(store.get("a", "", now + seconds(29)), nullptr);
  EXPECT_EQ(store.get("a", "", now + seconds(30)), nullptr);
  EXPECT_NE(store.get("b", "", now + seconds(30)), nullptr);
  EXPECT_EQ(store.size(now + seconds(30)), 1u);
  EXPECT_FALSE(store.erase("b", "", now + seconds(50)));  // expired: nothing to delete
  EXPECT_EQ(store.size(now + seconds(50)), 0u);
}

TEST(ResponseStoreTest, DeleteRemoves) {
  ResponseStore store(10, 60);
  const Clock::time_point now = Clock::now();
  store.put("a", "", response("A"), now);
  const auto held = store.get("a", "", now);
  EXPECT_TRUE(store.erase("a", "", now));
  EXPECT_FALSE(store.erase("a", "", now));
  EXPECT_EQ(store.get("a", "", now), nullptr);
  EXPECT_EQ(held->json, "A");              // a reader that already has it keeps it
  store.put("b", "", response("B"), now);  // the order of the rest is intact
  EXPECT_EQ(store.size(now), 1u);
}

TEST(ResponseStoreTest, ZeroKeepsNothing) {
  ResponseStore store(0, 60);
  store.put("a", "", response("A"));
  EXPECT_EQ(store.get("a", ""), nullptr);
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
        store.put(id, "", response(id));
        const auto found = store.get(id, "");
        if (found != nullptr) {
          EXPECT_EQ(found->json, id);
        }
        if (i % 3 == 0) store.erase(id, "");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(store.size(), 64u);
}

ResponseStoreLimits limits(std::size_t max_responses, std::size_t max_bytes, double share) {
  return ResponseStoreLimits{max_responses, max_bytes, share, 3600};
}

// Another key's response is the same miss as one that never existed, for GET and DELETE alike.
TEST(ResponseStoreTest, AResponseBelongsToItsOwner) {
  ResponseStore store(limits(100, 1 << 20, 0.5));
  ASSERT_TRUE(store.put("resp_a", "key:0", response("A")));
  EXPECT_NE(store.get("resp_a", "key:0"), nullptr);
  EXPECT_EQ(store.get("resp_a", "key:1"), nullptr);
  EXPECT_EQ(store.get("resp_a", ""), nullptr);
  EXPECT_FALSE(store.erase("resp_a", "key:1"));
  EXPECT_NE(store.get("resp_a", "key:0"), nullptr);
  EXPECT_TRUE(store.erase("resp_a", "key:0"));
}

// One key's flood of 1,000 responses evicts only its own: the other key's response survives.
TEST(ResponseStoreTest, AFloodEvictsOnlyTheFloodersOwnResponses) {
  ResponseStore store(limits(1000, std::size_t{256} << 20, 0.25));
  ASSERT_TRUE(store.put("resp_victim", "key:1", response("V", "kept")));
  for (int i = 0; i < 1000; ++i) {
    store.put("resp_flood_" + std::to_string(i), "key:0", response("F"));
  }
  EXPECT_NE(store.get("resp_victim", "key:1"), nullptr);
  EXPECT_EQ(store.size(), 251u);  // the flooder's share of 1,000, and the victim's one
  EXPECT_NE(store.get("resp_flood_999", "key:0"), nullptr);
  EXPECT_EQ(store.get("resp_flood_749", "key:0"), nullptr);
  const ResponseStore::Stats stats = store.stats();
  EXPECT_EQ(stats.evictions[static_cast<std::size_t>(ResponseStore::Eviction::key_share)], 750u);
}

// 131 responses with 7.9 MB metadata each took RSS to 1.18 GB: the bytes are now bounded, per
// key by its share and in all by max_bytes, and other keys' responses stay.
TEST(ResponseStoreTest, BytesStayWithinTheBoundAndTheKeysShare) {
  const std::size_t max_bytes = std::size_t{64} << 20;
  ResponseStore store(limits(1000, max_bytes, 0.25));
  ASSERT_TRUE(store.put("resp_victim", "key:1", response("V")));
  const std::string big(std::size_t{7900} << 10, 'x');
  for (int i = 0; i < 131; ++i) {
    store.put("resp_big_" + std::to_string(i), "key:0", response(big));
    EXPECT_LE(store.stats().bytes, max_bytes / 4 + stored_bytes(response("V")));
  }
  EXPECT_NE(store.get("resp_victim", "key:1"), nullptr);
  EXPECT_NE(store.get("resp_big_130", "key:0"), nullptr);
  // With several keys each under its share, the store's own bound holds too.
  for (int key = 2; key < 8; ++key) {
    for (int i = 0; i < 3; ++i) {
      store.put("resp_" + std::to_string(key) + "_" + std::to_string(i),
                "key:" + std::to_string(key), response(big));
      EXPECT_LE(store.stats().bytes, max_bytes);
    }
  }
  EXPECT_GT(store.stats().evictions[static_cast<std::size_t>(ResponseStore::Eviction::max_bytes)],
            0u);
}

// A response larger than its key's share is never kept.
TEST(ResponseStoreTest, AResponseLargerThanTheShareIsNotKept) {
  ResponseStore store(limits(100, 1 << 20, 0.25));
  EXPECT_FALSE(store.put("resp_huge", "key:0", response(std::string(300 << 10, 'x'))));
  EXPECT_EQ(store.get("resp_huge", "key:0"), nullptr);
  EXPECT_EQ(store.stats().evictions[static_cast<std::size_t>(ResponseStore::Eviction::too_large)],
            1u);
  EXPECT_TRUE(store.put("resp_small", "key:0", response("s")));
}

// 12 links each carrying one 4 MB input took RSS from 138 to 578 MB, each link copying the whole
// conversation. A link now holds its own turn and refers to the earlier ones: the store's bytes
// grow by one turn a link, and the conversation reads back whole, in order.
TEST(ResponseStoreTest, LinksReferToEarlierResponsesInsteadOfCopyingThem) {
  ResponseStore store(limits(1000, std::size_t{256} << 20, 1.0));
  const std::string input(std::size_t{4} << 20, 'i');
  std::shared_ptr<const StoredResponse> previous;
  for (int link = 0; link < 12; ++link) {
    const std::string id = "resp_" + std::to_string(link);
    ASSERT_TRUE(store.put(id, "", response(id, input + std::to_string(link), previous)));
    previous = store.get(id, "");
    ASSERT_NE(previous, nullptr);
  }
  EXPECT_LE(store.stats().bytes, 12 * (input.size() + 4096));
  const std::vector<api::ChatMessage> conversation = conversation_of(*previous);
  ASSERT_EQ(conversation.size(), 12u);
  for (int link = 0; link < 12; ++link) {
    EXPECT_EQ(conversation[static_cast<std::size_t>(link)].content, input + std::to_string(link));
  }
}

// An evicted response that a later link refers to stays in memory and is counted: the bounds
// hold for what is really held, and the conversation of the later link stays whole.
TEST(ResponseStoreTest, EvictedEarlierLinksStayCountedWhileReferredTo) {
  ResponseStore store(limits(2, 1 << 20, 1.0));
  store.put("a", "", response("A", "first"));
  store.put("b", "", response("B", "second", store.get("a", "")));
  store.put("c", "", response("C", "third", store.get("b", "")));
  EXPECT_EQ(store.get("a", ""), nullptr);
  const std::size_t three = store.stats().bytes;
  EXPECT_GE(three, 3 * stored_bytes(response("A", "first")));
  const auto last = store.get("c", "");
  ASSERT_NE(last, nullptr);
  ASSERT_EQ(conversation_of(*last).size(), 3u);
  EXPECT_EQ(conversation_of(*last)[0].content, "first");
  EXPECT_TRUE(store.erase("b", ""));
  EXPECT_TRUE(store.erase("c", ""));
  EXPECT_EQ(store.stats().bytes, three);  // `last` still holds the chain
}

// A chain of many links is released without one stack frame per link.
TEST(ResponseStoreTest, ALongChainIsReleasedWithoutRecursion) {
  auto chain = std::make_shared<const StoredResponse>(response("0"));
  for (int link = 1; link < 1'000'000; ++link) {
    chain =
        std::make_shared<const StoredResponse>(StoredResponse{std::string(), {}, std::move(chain)});
  }
  chain.reset();  // a frame a link would take far more than a thread's 8 MiB stack
}

TEST(ResponseStoreTest, NothingIsLeftCountedOnceAllIsGone) {
  auto store = std::make_unique<ResponseStore>(limits(10, 1 << 20, 1.0));
  store->put("a", "", response("A"));
  store->put("b", "", response("B", "x", store->get("a", "")));
  EXPECT_GT(store->stats().bytes, 0u);
  EXPECT_TRUE(store->erase("a", ""));
  EXPECT_TRUE(store->erase("b", ""));
  EXPECT_EQ(store->stats().bytes, 0u);
}

}  // namespace
}  // namespace tern::service::responses
