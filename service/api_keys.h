#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::service {

// Checks `Authorization: Bearer KEY`, or Anthropic's `x-api-key: KEY`, against the configured keys.
// The comparison takes the same time whichever key matches and wherever a wrong key differs, so
// timing reveals nothing.
class ApiKeys {
 public:
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  // What an Authorization header amounts to; a client told "missing" knows to send a key, one
  // told "wrong" knows to fix the one it sent.
  enum class Verdict { allowed, missing, wrong };

  // No keys configured: every request is allowed.
  bool enabled() const { return !keys_.empty(); }
  // `authorization` is the header's whole value. No Bearer key in it (no header, another
  // scheme, an empty key) is `missing`.
  Verdict check(std::string_view authorization) const;
  // Either header may carry the key (Anthropic's SDKs send x-api-key); a Bearer key wins.
  Verdict check(std::string_view authorization, std::string_view x_api_key) const;
  bool allows(std::string_view authorization) const {
    return check(authorization) == Verdict::allowed;
  }

  // Who a request is, whichever header carried its key: "key:N" for the Nth configured key (so
  // the identity names no secret, and is the same for `Authorization: Bearer K` and
  // `x-api-key: K`); empty when keys are off or the headers hold no configured key. Admission's
  // per-client share and the owner of a stored response are this identity.
  std::string identity(std::string_view authorization, std::string_view x_api_key) const;

 private:
  Verdict check_key(std::string_view key) const;
  // The index of the configured key equal to `key` (trimmed), found in time that does not
  // depend on which key matches; nullopt for none.
  std::optional<std::size_t> matching_key(std::string_view key) const;
  // The key the headers carry, with check()'s precedence: a Bearer key wins.
  static std::string_view presented_key(std::string_view authorization, std::string_view x_api_key);

  std::vector<std::string> keys_;
};

// Equal contents in time that depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tern::service
