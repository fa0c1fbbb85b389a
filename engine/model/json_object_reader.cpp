#include "engine/model/json_object_reader.h"

#include "engine/json_syntax.h"

#include <fmt/format.h>

#include "engine/model/mapped_file.h"

namespace tern::engine {

std::optional<simdjson::dom::element> JsonObjectReader::get(std::string_view key) const {
  simdjson::dom::element value;
  if (object_[key].get(value) || value.is_null()) return std::nullopt;
  return value;
}

void JsonObjectReader::fail(std::string_view key, std::string_view reason) {
  if (!error_) error_ = Error{fmt::format("{}: '{}': {}", context_, key, reason)};
}

std::optional<std::int64_t> JsonObjectReader::get_int(std::string_view key) {
  const std::optional<simdjson::dom::element> value = get(key);
  if (!value) return std::nullopt;
  std::int64_t out = 0;
  if (value->get_int64().get(out)) {
    // Whole numbers written as floats (4096.0) are common in hand-edited configs.
    double number = 0;
    if (!value->get_double().get(number) &&
        number == static_cast<double>(static_cast<std::int64_t>(number))) {
      return static_cast<std::int64_t>(number);
    }
    fail(key, "expected an integer");
    return std::nullopt;
  }
  return out;
}

std::optional<double> JsonObjectReader::get_number(std::string_view key) {
  const std::optional<simdjson::dom::element> value = get(key);
  if (!value) return std::nullopt;
  double out = 0;
  if (value->get_double().get(out)) {
    std::int64_t integer = 0;
    std::uint64_t unsigned_integer = 0;
    if (!value->get_int64().get(integer)) return static_cast<double>(integer);
    if (!value->get_uint64().get(unsigned_integer)) return static_cast<double>(unsigned_integer);
    fail(key, "expected a number");
    return std::nullopt;
  }
  return out;
}

std::optional<std::string_view> JsonObjectReader::get_string(std::string_view key) {
  const std::optional<simdjson::dom::element> value = get(key);
  if (!value) return std::nullopt;
  std::string_view out;
  if (value->get_string().get(out)) {
    fail(key, "expected a string");
    return std::nullopt;
  }
  return out;
}

std::optional<bool> JsonObjectReader::get_bool(std::string_view key) {
  const std::optional<simdjson::dom::element> value = get(key);
  if (!value) return std::nullopt;
  bool out = false;
  if (value->get_bool().get(out)) {
    fail(key, "expected true or false");
    return std::nullopt;
  }
  return out;
}

std::optional<simdjson::dom::object> JsonObjectReader::get_object(std::string_view key) {
  const std::optional<simdjson::dom::element> value = get(key);
  if (!value) return std::nullopt;
  simdjson::dom::object out;
  if (value->get_object().get(out)) {
    fail(key, "expected an object");
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<std::int64_t>> JsonObjectReader::get_int_list(std::string_view key) {
  const std::optional<simdjson::dom::element> value = get(key);
  if (!value) return std::nullopt;
  std::int64_t single = 0;
  if (!value->get_int64().get(single)) return std::vector<std::int64_t>{single};
  simdjson::dom::array list;
  if (value->get_array().get(list)) {
    fail(key, "expected an integer or a list of integers");
    return std::nullopt;
  }
  std::vector<std::int64_t> out;
  for (simdjson::dom::element item : list) {
    if (item.get_int64().get(single)) {
      fail(key, "expected an integer or a list of integers");
      return std::nullopt;
    }
    out.push_back(single);
  }
  return out;
}

Status parse_json_file(const std::string& path, JsonDocument& document) {
  Expected<MappedFile> file = MappedFile::open(path);
  if (!file) return file.error();
  const std::span<const std::byte> bytes = file->bytes();
  simdjson::dom::element root;
  if (auto error = document.parser.parse(reinterpret_cast<const char*>(bytes.data()), bytes.size())
                       .get(root)) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return Error{fmt::format("{}: {}", path,
                             describe_json_error(text, std::string("not valid JSON: ") +
                                                           simdjson::error_message(error)))};
  }
  if (root.get_object().get(document.root)) return Error{path + ": expected a JSON object"};
  return {};
}

}  // namespace tern::engine
