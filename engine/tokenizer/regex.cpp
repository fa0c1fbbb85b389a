#include "engine/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

namespace tern::engine {

struct Regex::Handle {
  pcre2_code* code = nullptr;
  ~Handle() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

namespace {

struct MatchData {
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() {
    if (data != nullptr) pcre2_match_data_free(data);
  }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* data;
};

}  // namespace

Regex::Regex(std::string pattern, std::unique_ptr<Handle> handle)
    : pattern_(std::move(pattern)), handle_(std::move(handle)) {}

Regex::~Regex() = default;

Expected<std::shared_ptr<const Regex>> Regex::compile(const std::string& pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // DOLLAR_ENDONLY: llama.cpp's "\s+$" means the end of the piece, never "before a final \n".
  auto handle = std::make_unique<Handle>();
  handle->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error_code,
                               &error_offset, nullptr);
  if (handle->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return Error{fmt::format("regex /{}/ does not compile at offset {}: {}", pattern,
                             static_cast<std::size_t>(error_offset),
                             reinterpret_cast<const char*>(message))};
  }
  // JIT is an optimisation only: if the platform lacks it, the interpreter gives the same results.
  pcre2_jit_compile(handle->code, PCRE2_JIT_COMPLETE);
  return std::shared_ptr<const Regex>(new Regex(pattern, std::move(handle)));
}

void Regex::for_each_match(std::string_view subject,
                           const std::function<void(std::size_t, std::size_t)>& on_match) const {
  for_each_match_while(subject, [&](std::size_t begin, std::size_t end) {
    on_match(begin, end);
    return true;
  });
}

bool Regex::for_each_match_while(
    std::string_view subject, const std::function<bool(std::size_t, std::size_t)>& on_match) const {
  MatchData match(handle_->code);
  if (match.data == nullptr) return true;
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::size_t offset = 0;
  while (offset <= subject.size()) {
    const int rc = pcre2_match(handle_->code, data, subject.size(), offset, PCRE2_NO_UTF_CHECK,
                               match.data, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    const std::size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      if (!on_match(begin, end)) return false;
      offset = end;
    } else {
      // Step over one whole character so the next search starts on a character boundary.
      offset = begin + 1;
      while (offset < subject.size() &&
             (static_cast<unsigned char>(subject[offset]) & 0xC0) == 0x80) {
        ++offset;
      }
    }
  }
  return true;
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}/-").find(c) != std::string_view::npos)
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace tern::engine
