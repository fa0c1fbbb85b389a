#pragma once

// The responses kept for previous_response_id and GET/DELETE /v1/responses/{id}: in this
// process's memory only, bounded in count, bytes and age (server.responses_store). Each response
// belongs to the key that made it, and one key holds at most its share of the store, so a key
// that floods the store evicts only its own responses. Generations finish on the streams loop's
// threads while GETs arrive on the control loop, so every call locks.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "service/api/chat_request.h"

namespace tern::service::responses {

struct StoredResponse {
  StoredResponse() = default;
  StoredResponse(std::string json_in, std::vector<api::ChatMessage> turn_in,
                 std::shared_ptr<const StoredResponse> previous_in = nullptr)
      : json(std::move(json_in)), turn(std::move(turn_in)), previous(std::move(previous_in)) {}
  StoredResponse(StoredResponse&&) = default;
  StoredResponse& operator=(StoredResponse&&) = default;
  // A long chain of links is released one link at a time, not by recursion.
  ~StoredResponse();

  std::string json;  // the Response object, as GET returns it
  // This response's own turn: the request's input without its instructions (OpenAI does not
  // carry instructions over), then the answer as an assistant turn.
  std::vector<api::ChatMessage> turn;
  // The response this one continued (previous_response_id): its conversation comes before
  // `turn`. A link refers to the earlier ones instead of copying them, so a conversation of n
  // links costs its own size once, not n times. Mutable only for the destructor's unlinking.
  mutable std::shared_ptr<const StoredResponse> previous;
};

// The whole conversation a follow-up continues: every earlier link's turn, oldest first.
std::vector<api::ChatMessage> conversation_of(const StoredResponse& response);

// What a response costs the store: its JSON and its turn's text, plus a fixed overhead.
std::size_t stored_bytes(const StoredResponse& response);

struct ResponseStoreLimits {
  std::size_t max_responses = 1000;  // 0 keeps nothing: every lookup misses
  std::size_t max_bytes = std::size_t{256} << 20;
  double max_share_per_key = 0.25;  // of both bounds, for each key; the keyless owner "" has all
  double ttl_s = 3600;
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;

  // Why responses left the store, for /metrics. `too_large` is a response never kept: its
  // conversation alone passed its key's share.
  enum class Eviction { expired, max_responses, max_bytes, key_share, too_large };
  static constexpr std::size_t kEvictionKinds = 5;
  static std::string_view eviction_name(Eviction reason);

  struct Stats {
    std::size_t responses = 0;
    // Bytes of every stored response still in memory, with those that left the store but are
    // still referred to by a later link or a running request.
    std::size_t bytes = 0;
    std::array<std::uint64_t, kEvictionKinds> evictions{};
  };

  explicit ResponseStore(ResponseStoreLimits limits);
  ResponseStore(std::size_t max_responses, double ttl_s)
      : ResponseStore(ResponseStoreLimits{max_responses, std::size_t{256} << 20, 1.0, ttl_s}) {}
  ~ResponseStore();
  ResponseStore(const ResponseStore&) = delete;
  ResponseStore& operator=(const ResponseStore&) = delete;

  // Keeps `response` under `id` for `owner` (a key's identity; "" without keys), evicting past
  // the bounds: first the owner's own oldest past its share, then, past the store's bounds, the
  // oldest of whichever owner holds the most. False when the response was not kept (too large
  // for its owner's share, or a store that keeps nothing).
  bool put(std::string id, std::string owner, StoredResponse response,
           Clock::time_point now = Clock::now());
  // Shared, not copied: a long conversation is read by its follow-up without a copy under the
  // lock. Null for an unknown id and for another owner's response alike.
  std::shared_ptr<const StoredResponse> get(std::string_view id, std::string_view owner,
                                            Clock::time_point now = Clock::now());
  // False when the owner has no live response with that id.
  bool erase(std::string_view id, std::string_view owner, Clock::time_point now = Clock::now());
  std::size_t size(Clock::time_point now = Clock::now());
  Stats stats(Clock::time_point now = Clock::now());

 private:
  class Ledger;
  struct Node;
  struct Entry {
    std::shared_ptr<const Node> node;
    std::string owner;
    Clock::time_point expires;
    std::list<std::string>::iterator age;        // its place in oldest_first_
    std::list<std::string>::iterator owner_age;  // its place in its owner's list
  };
  using Entries = std::unordered_map<std::string, Entry>;

  void expire(Clock::time_point now);  // under mutex_
  void evict(Entries::iterator entry, Eviction reason);
  void remove(Entries::iterator entry);
  // The oldest entry of the owner that holds the most entries (by_bytes false) or bytes.
  Entries::iterator heaviest_owners_oldest(bool by_bytes);
  std::size_t owner_count_cap(std::string_view owner) const;
  std::size_t owner_byte_cap(std::string_view owner) const;

  const ResponseStoreLimits limits_;
  const Clock::duration ttl_;
  std::shared_ptr<Ledger> ledger_;  // shared with every node, which may outlive the store
  std::mutex mutex_;
  Entries entries_;
  // Every entry's id by insertion; with one TTL for all, the oldest also expires first.
  std::list<std::string> oldest_first_;
  std::unordered_map<std::string, std::list<std::string>> by_owner_;  // ids, oldest first
  std::array<std::atomic<std::uint64_t>, kEvictionKinds> evictions_{};
};

}  // namespace tern::service::responses
