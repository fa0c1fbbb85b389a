#include "service/byte_size.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

namespace tern::service {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  const std::string owned(text);  // strtod needs a terminated string
  char* end = nullptr;
  const double amount = std::strtod(owned.c_str(), &end);
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                          {"B", 1},
                                                          {"KB", 1e3},
                                                          {"MB", 1e6},
                                                          {"GB", 1e9},
                                                          {"TB", 1e12},
                                                          {"KiB", 1024.0},
                                                          {"MiB", 1048576.0},
                                                          {"GiB", 1073741824.0},
                                                          {"TiB", 1099511627776.0}};
  for (const auto& [name, scale] : kUnits) {
    if (unit == name && end != owned.c_str() && std::isfinite(amount) && amount >= 0 &&
        amount * scale < 1.8e19) {
      return static_cast<std::uint64_t>(amount * scale);
    }
  }
  return std::nullopt;
}

}  // namespace tern::service
