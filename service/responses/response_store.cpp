#include "service/responses/response_store.h"

#include <algorithm>
#include <cmath>

#include "engine/chat/value_json.h"

namespace tern::service::responses {

StoredResponse::~StoredResponse() {
  // Destroying the last holder of a long chain would otherwise recurse once per link.
  std::shared_ptr<const StoredResponse> next = std::move(previous);
  while (next && next.use_count() == 1) {  // the only holder: nobody can copy it meanwhile
    std::shared_ptr<const StoredResponse> after = std::move(next->previous);
    next.reset();
    next = std::move(after);
  }
}

std::vector<api::ChatMessage> conversation_of(const StoredResponse& response) {
  std::vector<const StoredResponse*> links;
  std::size_t messages = 0;
  for (const StoredResponse* link = &response; link != nullptr; link = link->previous.get()) {
    links.push_back(link);
    messages += link->turn.size();
  }
  std::vector<api::ChatMessage> conversation;
  conversation.reserve(messages);
  for (auto link = links.rbegin(); link != links.rend(); ++link) {
    conversation.insert(conversation.end(), (*link)->turn.begin(), (*link)->turn.end());
  }
  return conversation;
}

std::size_t json_bytes(const engine::chat::Value& value) {
  if (value.is_undefined()) return 0;
  auto json = engine::chat::to_json(value);
  return json ? json->size() : 0;
}

std::size_t stored_bytes(const StoredResponse& response) {
  // Allocation headers, the map entry, the id and list nodes: small next to any real turn.
  constexpr std::size_t kOverhead = 512;
  std::size_t bytes = kOverhead + response.json.size();
  for (const api::ChatMessage& message : response.turn) {
    bytes += sizeof(api::ChatMessage) + message.content.value_or(std::string()).size() +
             message.name.size() + json_bytes(message.tool_calls) + message.tool_call_id.size() +
             message.reasoning_content.size();
  }
  return bytes;
}

namespace {

std::size_t chain_bytes(const StoredResponse& response) {
  std::size_t bytes = 0;
  for (const StoredResponse* link = &response; link != nullptr; link = link->previous.get()) {
    bytes += stored_bytes(*link);
  }
  return bytes;
}

}  // namespace

// The bytes of every stored response alive in memory, by owner. A response leaves the store's
// index at eviction but its memory only when its last holder lets go (a later link, a running
// follow-up), so the bounds count it until then.
class ResponseStore::Ledger {
 public:
  void charge(const std::string& owner, std::size_t bytes) {
    const std::lock_guard lock(mutex_);
    by_owner_[owner] += bytes;
    total_ += bytes;
  }
  void release(const std::string& owner, std::size_t bytes) {
    const std::lock_guard lock(mutex_);
    const auto found = by_owner_.find(owner);
    if (found != by_owner_.end()) {
      found->second -= std::min(found->second, bytes);
      if (found->second == 0) by_owner_.erase(found);
    }
    total_ -= std::min(total_, bytes);
  }
  std::size_t owner_bytes(const std::string& owner) {
    const std::lock_guard lock(mutex_);
    const auto found = by_owner_.find(owner);
    return found == by_owner_.end() ? 0 : found->second;
  }
  std::size_t total() {
    const std::lock_guard lock(mutex_);
    return total_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> by_owner_;
  std::size_t total_ = 0;
};

struct ResponseStore::Node {
  Node(StoredResponse response_in, std::string owner_in, std::size_t bytes_in,
       std::shared_ptr<Ledger> ledger_in)
      : response(std::move(response_in)),
        owner(std::move(owner_in)),
        bytes(bytes_in),
        ledger(std::move(ledger_in)) {
    ledger->charge(owner, bytes);
  }
  ~Node() { ledger->release(owner, bytes); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  StoredResponse response;
  std::string owner;
  std::size_t bytes;
  std::shared_ptr<Ledger> ledger;
};

std::string_view ResponseStore::eviction_name(Eviction reason) {
  switch (reason) {
    case Eviction::expired:
      return "expired";
    case Eviction::max_responses:
      return "max_responses";
    case Eviction::max_bytes:
      return "max_bytes";
    case Eviction::key_share:
      return "key_share";
    case Eviction::too_large:
      return "too_large";
  }
  return "unknown";
}

ResponseStore::ResponseStore(ResponseStoreLimits limits)
    : limits_(limits),
      ttl_(
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.ttl_s))),
      ledger_(std::make_shared<Ledger>()) {}

ResponseStore::~ResponseStore() = default;

std::size_t ResponseStore::owner_count_cap(std::string_view owner) const {
  if (owner.empty()) return limits_.max_responses;
  const auto share = static_cast<double>(limits_.max_responses) * limits_.max_share_per_key;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(share)));
}

std::size_t ResponseStore::owner_byte_cap(std::string_view owner) const {
  if (owner.empty()) return limits_.max_bytes;
  return static_cast<std::size_t>(
      std::floor(static_cast<double>(limits_.max_bytes) * limits_.max_share_per_key));
}

bool ResponseStore::put(std::string id, std::string owner, StoredResponse response,
                        Clock::time_point now) {
  if (limits_.max_responses == 0 || limits_.max_bytes == 0) return false;
  const std::size_t bytes = stored_bytes(response);
  const std::size_t conversation_bytes = chain_bytes(response);
  const std::lock_guard lock(mutex_);
  expire(now);
  if (const auto existing = entries_.find(id); existing != entries_.end()) remove(existing);
  if (conversation_bytes > owner_byte_cap(owner)) {
    evictions_[static_cast<std::size_t>(Eviction::too_large)].fetch_add(1);
    return false;
  }
  auto node = std::make_shared<const Node>(std::move(response), owner, bytes, ledger_);
  std::list<std::string>& owned = by_owner_[owner];
  oldest_first_.push_back(id);
  owned.push_back(id);
  entries_.emplace(id, Entry{std::move(node), owner, now + ttl_, std::prev(oldest_first_.end()),
                             std::prev(owned.end())});

  // The owner's share first: a flood evicts its own responses, never another key's.
  while (owned.size() > 1 && (owned.size() > owner_count_cap(owner) ||
                              ledger_->owner_bytes(owner) > owner_byte_cap(owner))) {
    evict(entries_.find(owned.front()), Eviction::key_share);
  }
  while (entries_.size() > limits_.max_responses) {
    evict(heaviest_owners_oldest(false), Eviction::max_responses);
  }
  while (!entries_.empty() && ledger_->total() > limits_.max_bytes) {
    evict(heaviest_owners_oldest(true), Eviction::max_bytes);
  }
  return entries_.contains(id);
}

ResponseStore::Entries::iterator ResponseStore::heaviest_owners_oldest(bool by_bytes) {
  const std::list<std::string>* heaviest = nullptr;
  std::size_t most = 0;
  for (const auto& [owner, ids] : by_owner_) {
    if (ids.empty()) continue;
    const std::size_t weight = by_bytes ? ledger_->owner_bytes(owner) : ids.size();
    if (heaviest == nullptr || weight > most) {
      heaviest = &ids;
      most = weight;
    }
  }
  return entries_.find(heaviest->front());
}

std::shared_ptr<const StoredResponse> ResponseStore::get(std::string_view id,
                                                         std::string_view owner,
                                                         Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  expire(now);
  const auto entry = entries_.find(std::string(id));
  if (entry == entries_.end() || entry->second.owner != owner) return nullptr;
  const std::shared_ptr<const Node>& node = entry->second.node;
  return std::shared_ptr<const StoredResponse>(node, &node->response);
}

bool ResponseStore::erase(std::string_view id, std::string_view owner, Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  expire(now);
  const auto entry = entries_.find(std::string(id));
  if (entry == entries_.end() || entry->second.owner != owner) return false;
  remove(entry);
  return true;
}

std::size_t ResponseStore::size(Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  expire(now);
  return entries_.size();
}

ResponseStore::Stats ResponseStore::stats(Clock::time_point now) {
  Stats stats;
  {
    const std::lock_guard lock(mutex_);
    expire(now);
    stats.responses = entries_.size();
  }
  stats.bytes = ledger_->total();
  for (std::size_t i = 0; i < kEvictionKinds; ++i) stats.evictions[i] = evictions_[i].load();
  return stats;
}

void ResponseStore::expire(Clock::time_point now) {
  while (!oldest_first_.empty()) {
    const auto oldest = entries_.find(oldest_first_.front());
    if (oldest->second.expires > now) return;
    evict(oldest, Eviction::expired);
  }
}

void ResponseStore::evict(Entries::iterator entry, Eviction reason) {
  evictions_[static_cast<std::size_t>(reason)].fetch_add(1);
  remove(entry);
}

void ResponseStore::remove(Entries::iterator entry) {
  oldest_first_.erase(entry->second.age);
  const auto owned = by_owner_.find(entry->second.owner);
  owned->second.erase(entry->second.owner_age);
  if (owned->second.empty()) by_owner_.erase(owned);
  entries_.erase(entry);
}

}  // namespace tern::service::responses
