#include "service/request_headers.h"

#include "service/random_id.h"

namespace tern::service {
namespace {

bool id_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == ':';
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

bool usable_request_id(std::string_view id) {
  constexpr std::size_t kMaxLength = 128;
  if (id.empty() || id.size() > kMaxLength) return false;
  for (char c : id) {
    if (!id_character(c)) return false;
  }
  return true;
}

std::string new_request_id() {
  std::string id;
  append_random_hex(id);
  return id;
}

bool is_json_content_type(std::string_view content_type) {
  std::string_view media_type = content_type.substr(0, content_type.find(';'));
  while (!media_type.empty() && (media_type.back() == ' ' || media_type.back() == '\t')) {
    media_type.remove_suffix(1);
  }
  while (!media_type.empty() && (media_type.front() == ' ' || media_type.front() == '\t')) {
    media_type.remove_prefix(1);
  }
  constexpr std::string_view kJson = "application/json";
  if (media_type.size() != kJson.size()) return false;
  for (std::size_t i = 0; i < kJson.size(); ++i) {
    if (lower(media_type[i]) != kJson[i]) return false;
  }
  return true;
}

}  // namespace tern::service
