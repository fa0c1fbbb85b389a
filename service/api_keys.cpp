#include "service/api_keys.h"

namespace tern::service {

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
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() < kScheme.size()) return Verdict::missing;
  // The scheme is case-insensitive (RFC 7235); only the key is secret.
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = authorization[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const char expected = (kScheme[i] >= 'A' && kScheme[i] <= 'Z')
                              ? static_cast<char>(kScheme[i] - 'A' + 'a')
                              : kScheme[i];
    if (lower != expected) return Verdict::missing;
  }
  return check_key(authorization.substr(kScheme.size()));
}

ApiKeys::Verdict ApiKeys::check(std::string_view authorization, std::string_view x_api_key) const {
  const Verdict bearer = check(authorization);
  if (bearer != Verdict::missing || x_api_key.empty()) return bearer;
  return check_key(x_api_key);
}

ApiKeys::Verdict ApiKeys::check_key(std::string_view key) const {
  if (!enabled()) return Verdict::allowed;
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  if (key.empty()) return Verdict::missing;
  // Every key is compared, so which one matched does not show either.
  bool allowed = false;
  for (const std::string& candidate : keys_) allowed |= constant_time_equal(key, candidate);
  return allowed ? Verdict::allowed : Verdict::wrong;
}

}  // namespace tern::service
