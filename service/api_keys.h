#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern::service {

// Checks `Authorization: Bearer KEY` against the configured keys. The comparison takes the same
// time whichever key matches and wherever a wrong key differs, so timing reveals nothing.
class ApiKeys {
 public:
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  // No keys configured: every request is allowed.
  bool enabled() const { return !keys_.empty(); }
  // `authorization` is the header's whole value.
  bool allows(std::string_view authorization) const;

 private:
  std::vector<std::string> keys_;
};

// Equal contents in time that depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tern::service
