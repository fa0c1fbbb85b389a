#include "service/responses/response_store.h"

namespace tern::service::responses {

ResponseStore::ResponseStore(std::size_t max_responses, double ttl_s)
    : max_responses_(max_responses),
      ttl_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ttl_s))) {}

void ResponseStore::put(std::string id, StoredResponse response, Clock::time_point now) {
  if (max_responses_ == 0) return;
  auto shared = std::make_shared<const StoredResponse>(std::move(response));
  const std::lock_guard lock(mutex_);
  expire(now);
  if (const auto existing = entries_.find(id); existing != entries_.end()) remove(existing);
  while (entries_.size() >= max_responses_) remove(entries_.find(oldest_first_.front()));
  oldest_first_.push_back(id);
  entries_.emplace(std::move(id),
                   Entry{std::move(shared), now + ttl_, std::prev(oldest_first_.end())});
}

std::shared_ptr<const StoredResponse> ResponseStore::get(std::string_view id,
                                                         Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  expire(now);
  const auto entry = entries_.find(std::string(id));
  if (entry == entries_.end()) return nullptr;
  return entry->second.response;
}

bool ResponseStore::erase(std::string_view id, Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  expire(now);
  const auto entry = entries_.find(std::string(id));
  if (entry == entries_.end()) return false;
  remove(entry);
  return true;
}

std::size_t ResponseStore::size(Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  expire(now);
  return entries_.size();
}

void ResponseStore::expire(Clock::time_point now) {
  while (!oldest_first_.empty()) {
    const auto oldest = entries_.find(oldest_first_.front());
    if (oldest->second.expires > now) return;
    remove(oldest);
  }
}

void ResponseStore::remove(std::unordered_map<std::string, Entry>::iterator entry) {
  oldest_first_.erase(entry->second.age);
  entries_.erase(entry);
}

}  // namespace tern::service::responses
