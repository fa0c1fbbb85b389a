#include "engine/chat/text.h"

namespace tern::engine::chat::text {

namespace {

bool is_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
char upper(char c) {
  return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c;
}
char lower(char c) {
  return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

std::vector<std::size_t> code_point_offsets(std::string_view s) {
  std::vector<std::size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_continuation(static_cast<unsigned char>(s[i]))) offsets.push_back(i);
  }
  offsets.push_back(s.size());
  return offsets;
}

std::size_t code_point_count(std::string_view s) {
  std::size_t count = 0;
  for (char c : s) count += is_continuation(static_cast<unsigned char>(c)) ? 0 : 1;
  return count;
}

std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::size_t> offsets = code_point_offsets(s);
  std::vector<std::string> out;
  out.reserve(offsets.size() - 1);
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    out.emplace_back(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
  }
  return out;
}

bool is_python_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '\x1c' ||
         c == '\x1d' || c == '\x1e' || c == '\x1f';
}

std::string strip(std::string_view s, std::optional<std::string_view> chars, bool left,
                  bool right) {
  auto strippable = [&](char c) {
    return chars ? chars->find(c) != std::string_view::npos : is_python_space(c);
  };
  std::size_t begin = 0;
  std::size_t end = s.size();
  if (left) {
    while (begin < end && strippable(s[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(s[end - 1])) --end;
  }
  return std::string(s.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep,
                               long long max_split) {
  std::vector<std::string> parts;
  if (!sep) {
    std::size_t i = 0;
    while (true) {
      while (i < s.size() && is_python_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (max_split >= 0 && static_cast<long long>(parts.size()) >= max_split) {
        parts.emplace_back(s.substr(i));  // the remainder keeps its trailing whitespace
        break;
      }
      std::size_t start = i;
      while (i < s.size() && !is_python_space(s[i])) ++i;
      parts.emplace_back(s.substr(start, i - start));
    }
    return parts;
  }
  std::size_t start = 0;
  while (max_split < 0 || static_cast<long long>(parts.size()) < max_split) {
    std::size_t found = s.find(*sep, start);
    if (found == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, found - start));
    start = found + sep->size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

std::vector<std::string> rsplit(std::string_view s, std::optional<std::string_view> sep,
                                long long max_split) {
  if (max_split < 0) return split(s, sep, max_split);
  std::vector<std::string> parts;
  if (!sep) {
    std::size_t end = s.size();
    while (true) {
      while (end > 0 && is_python_space(s[end - 1])) --end;
      if (end == 0) break;
      if (static_cast<long long>(parts.size()) >= max_split) {
        parts.emplace_back(s.substr(0, end));  // the remainder keeps its leading whitespace
        break;
      }
      std::size_t stop = end;
      while (end > 0 && !is_python_space(s[end - 1])) --end;
      parts.emplace_back(s.substr(end, stop - end));
    }
  } else {
    std::size_t end = s.size();
    while (static_cast<long long>(parts.size()) < max_split) {
      if (end < sep->size()) break;
      std::size_t found = s.rfind(*sep, end - sep->size());
      if (found == std::string_view::npos) break;
      parts.emplace_back(s.substr(found + sep->size(), end - found - sep->size()));
      end = found;
    }
    parts.emplace_back(s.substr(0, end));
  }
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.emplace_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text,
                    long long count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts the replacement before every code point and at the end.
    std::vector<std::size_t> offsets = code_point_offsets(s);
    long long done = 0;
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        out += new_text;
        ++done;
      }
      out += s.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  std::size_t start = 0;
  long long done = 0;
  while (count < 0 || done < count) {
    std::size_t found = s.find(old_text, start);
    if (found == std::string_view::npos) break;
    out += s.substr(start, found - start);
    out += new_text;
    start = found + old_text.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::size_t count_occurrences(std::string_view s, std::string_view needle) {
  if (needle.empty()) return code_point_count(s) + 1;
  std::size_t count = 0;
  for (std::size_t at = s.find(needle); at != std::string_view::npos;
       at = s.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = upper(c);
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = to_lower(s);
  if (!out.empty()) out[0] = upper(out[0]);
  return out;
}

std::string title(std::string_view s) {
  // Python's str.title(): a letter after a non-letter starts a word.
  std::string out(s);
  bool previous_is_letter = false;
  for (char& c : out) {
    bool letter = is_lower(c) || is_upper(c) || static_cast<unsigned char>(c) >= 0x80;
    if (is_lower(c) || is_upper(c)) c = previous_is_letter ? lower(c) : upper(c);
    previous_is_letter = letter;
  }
  return out;
}

}  // namespace tern::engine::chat::text
