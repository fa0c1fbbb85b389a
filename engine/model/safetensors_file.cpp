#include "engine/model/safetensors_file.h"

#include "engine/json_syntax.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <array>
#include <cstring>
#include <limits>

#include "engine/model/printable.h"

namespace tern::engine {
namespace {

// The reference implementation refuses headers above 100 MB; so do we, before parsing.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  std::string_view name;
  std::uint64_t bytes;
  std::optional<kernels::TensorType> type;
};

constexpr std::array<DtypeInfo, 16> kDtypes{{
    {"F32", 4, kernels::TensorType::f32},
    {"F16", 2, kernels::TensorType::f16},
    {"BF16", 2, kernels::TensorType::bf16},
    {"F64", 8, std::nullopt},
    {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},
    {"I32", 4, std::nullopt},
    {"U32", 4, std::nullopt},
    {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},
    {"I8", 1, std::nullopt},
    {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt},
    {"F8_E4M3", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt},
    {"F8_E8M0", 1, std::nullopt},
}};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const DtypeInfo& dtype : kDtypes) {
    if (dtype.name == name) return &dtype;
  }
  return nullptr;
}

}  // namespace

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  Expected<MappedFile> file = MappedFile::open(path);
  if (!file) return file.error();
  return parse(std::move(file).value());
}

Expected<SafetensorsFile> SafetensorsFile::parse(MappedFile file) {
  SafetensorsFile safetensors(std::move(file));
  if (Status status = safetensors.parse_header(); !status) return Error{status.message()};
  return safetensors;
}

Status SafetensorsFile::parse_header() {
  const auto fail = [&](std::string_view reason) {
    return Error{path() + ": " + std::string(reason)};
  };
  const std::span<const std::byte> bytes = file_.bytes();
  std::uint64_t header_bytes = 0;
  if (bytes.size() < sizeof(header_bytes))
    return fail("not a safetensors file: shorter than 8 bytes");
  std::memcpy(&header_bytes, bytes.data(), sizeof(header_bytes));
  const std::uint64_t after_length = bytes.size() - sizeof(header_bytes);
  if (header_bytes > after_length || header_bytes > kMaxHeaderBytes) {
    return fail(fmt::format("header length {} exceeds file size {} (or the 100 MB limit)",
                            header_bytes, bytes.size()));
  }
  const auto* header = reinterpret_cast<const char*>(bytes.data() + sizeof(header_bytes));
  const std::byte* data_start = bytes.data() + sizeof(header_bytes) + header_bytes;
  const std::uint64_t data_size = after_length - header_bytes;

  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(header, static_cast<std::size_t>(header_bytes)).get(root)) {
    const std::string_view text(header, static_cast<std::size_t>(header_bytes));
    return fail(describe_json_error(
        text, std::string("header is not valid JSON: ") + simdjson::error_message(error)));
  }
  simdjson::dom::object entries;
  if (root.get_object().get(entries)) return fail("header is not a JSON object");

  for (auto [key, value] : entries) {
    if (key == "__metadata__") continue;
    const auto tensor_fail = [&](std::string_view reason) {
      return fail(fmt::format("tensor '{}': {}", printable(key), reason));
    };
    simdjson::dom::object fields;
    if (value.get_object().get(fields)) return tensor_fail("entry is not a JSON object");
    std::string_view dtype_name;
    if (fields["dtype"].get_string().get(dtype_name)) return tensor_fail("missing string 'dtype'");
    const DtypeInfo* dtype = find_dtype(dtype_name);
    if (dtype == nullptr)
      return tensor_fail(fmt::format("unknown dtype '{}'", printable(dtype_name)));

    SafetensorsTensorInfo info;
    info.name = std::string(key);
    info.dtype = std::string(dtype_name);
    info.type = dtype->type;
    simdjson::dom::array shape;
    if (fields["shape"].get_array().get(shape)) return tensor_fail("missing array 'shape'");
    std::uint64_t elements = 1;
    for (simdjson::dom::element dim_value : shape) {
      std::uint64_t dim = 0;
      if (dim_value.get_uint64().get(dim))
        return tensor_fail("shape holds a non-integer dimension");
      constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      if (dim > kMax || (dim != 0 && elements > kMax / dim)) {
        return tensor_fail(fmt::format("dimension {} overflows the element count", dim));
      }
      elements *= dim;
      info.shape.push_back(static_cast<std::int64_t>(dim));
    }
    if (elements > std::numeric_limits<std::uint64_t>::max() / dtype->bytes) {
      return tensor_fail("data size overflows");
    }
    info.bytes = elements * dtype->bytes;

    simdjson::dom::array offsets;
    std::array<std::uint64_t, 2> range{};
    std::size_t count = 0;
    if (fields["data_offsets"].get_array().get(offsets)) {
      return tensor_fail("missing array 'data_offsets'");
    }
    for (simdjson::dom::element offset : offsets) {
      if (count == range.size() || offset.get_uint64().get(range[count])) {
        return tensor_fail("'data_offsets' is not a pair of non-negative integers");
      }
      ++count;
    }
    if (count != range.size()) return tensor_fail("'data_offsets' is not a pair of integers");
    if (range[0] > range[1] || range[1] > data_size) {
      return tensor_fail(fmt::format("data [{}, {}) exceeds the {} data bytes of the file",
                                     range[0], range[1], data_size));
    }
    if (range[1] - range[0] != info.bytes) {
      return tensor_fail(fmt::format("data [{}, {}) holds {} bytes but shape and dtype {} need {}",
                                     range[0], range[1], range[1] - range[0], dtype_name,
                                     info.bytes));
    }
    info.data = data_start + range[0];
    if (!index_.emplace(info.name, tensors_.size()).second) {
      return tensor_fail("appears twice in the header");
    }
    tensors_.push_back(std::move(info));
  }
  return {};
}

const SafetensorsTensorInfo* SafetensorsFile::find_tensor(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tern::engine
