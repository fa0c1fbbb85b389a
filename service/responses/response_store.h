#pragma once

// The responses kept for previous_response_id and GET/DELETE /v1/responses/{id}: in this
// process's memory only, bounded in count and age (server.responses_store). Generations finish on
// the streams loop's threads while GETs arrive on the control loop, so every call locks.
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "service/openai/chat_request.h"

namespace tern::service::responses {

struct StoredResponse {
  std::string json;  // the Response object, as GET returns it
  // What a follow-up continues: the request's conversation without its instructions (OpenAI
  // does not carry instructions over) and the answer as an assistant turn.
  std::vector<openai::ChatMessage> conversation;
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;

  // max_responses 0 keeps nothing: every lookup misses.
  ResponseStore(std::size_t max_responses, double ttl_s);

  // Keeps `response` under `id`, evicting the oldest past max_responses.
  void put(std::string id, StoredResponse response, Clock::time_point now = Clock::now());
  // Shared, not copied: a long conversation is read by its follow-up without a copy under the lock.
  std::shared_ptr<const StoredResponse> get(std::string_view id,
                                            Clock::time_point now = Clock::now());
  // False when no live response has that id.
  bool erase(std::string_view id, Clock::time_point now = Clock::now());
  std::size_t size(Clock::time_point now = Clock::now());

 private:
  struct Entry {
    std::shared_ptr<const StoredResponse> response;
    Clock::time_point expires;
    std::list<std::string>::iterator age;  // its place in oldest_first_
  };

  void expire(Clock::time_point now);  // under mutex_
  void remove(std::unordered_map<std::string, Entry>::iterator entry);

  const std::size_t max_responses_;
  const Clock::duration ttl_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  // Every entry's id by insertion; with one TTL for all, the oldest also expires first.
  std::list<std::string> oldest_first_;
};

}  // namespace tern::service::responses
