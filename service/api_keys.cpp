#include "service/api_keys.h"

namespace tern::service {
namespace {

constexpr std::string_view kScheme = "Bearer ";

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// The scheme is case-insensitive (RFC 7235); only the key is secret.
bool has_bearer_scheme(std::string_view authorization) {
  if (authorization.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (lower(authorization[i]) != lower(kScheme[i])) return false;
  }
  return true;
}

std::string_view trimmed(std::string_view key) {
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  return key;
}

}  // namespace

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer one in full so a length mismatch costs as much as a byte mismatch.
  const std::size_t length = a.size() > b.size() ? a.size() : b.size();
  unsigned difference = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned>(x ^ y);
  }
  // Keep the compiler from turning the loop back into an early exit.
  volatile unsigned result = difference;
  return result == 0;
}

ApiKeys::Verdict ApiKeys::check(std::string_view authorization) const {
  if (!enabled()) return Verdict::allowed;
  if (!has_bearer_scheme(authorization)) return Verdict::missing;
  return check_key(authorization.substr(kScheme.size()));
}

ApiKeys::Verdict ApiKeys::check(std::string_view authorization, std::string_view x_api_key) const {
  const Verdict bearer = check(authorization);
  if (bearer != Verdict::missing || x_api_key.empty()) return bearer;
  return check_key(x_api_key);
}

ApiKeys::Verdict ApiKeys::check_key(std::string_view key) const {
  if (!enabled()) return Verdict::allowed;
  if (trimmed(key).empty()) return Verdict::missing;
  return matching_key(key) ? Verdict::allowed : Verdict::wrong;
}

std::optional<std::size_t> ApiKeys::matching_key(std::string_view key) const {
  key = trimmed(key);
  if (key.empty()) return std::nullopt;
  // Every key is compared, and the match is selected by arithmetic, not a branch, so which one
  // matched does not show either.
  std::size_t found = 0;
  std::size_t matches = 0;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const std::size_t equal = constant_time_equal(key, keys_[i]) ? 1 : 0;
    const std::size_t first = equal & (1 - matches);  // a key listed twice is its first place
    found |= (0 - first) & i;
    matches |= equal;
  }
  if (matches == 0) return std::nullopt;
  return found;
}

std::string_view ApiKeys::presented_key(std::string_view authorization,
                                        std::string_view x_api_key) {
  if (has_bearer_scheme(authorization) && !trimmed(authorization.substr(kScheme.size())).empty()) {
    return authorization.substr(kScheme.size());
  }
  return x_api_key;
}

std::string ApiKeys::identity(std::string_view authorization, std::string_view x_api_key) const {
  if (!enabled()) return {};
  const std::optional<std::size_t> index = matching_key(presented_key(authorization, x_api_key));
  return index ? "key:" + std::to_string(*index) : std::string();
}

}  // namespace tern::service
