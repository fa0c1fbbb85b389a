#include "engine/model/gguf_file.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <limits>

#include "engine/model/byte_reader.h"
#include "engine/model/printable.h"

namespace tern::engine {
namespace {

constexpr std::uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Deep enough for any real file; bounds the recursion a crafted file could force.
constexpr int kMaxArrayDepth = 8;
constexpr std::uint64_t kDefaultAlignment = 32;
constexpr std::size_t kArrayHeaderBytes = sizeof(std::uint32_t) + sizeof(std::uint64_t);

constexpr std::array<std::string_view, 13> kTypeNames{
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};

bool is_known_type(std::uint32_t type) {
  return type < kTypeNames.size();
}

// Bytes of a fixed-size scalar; 0 for strings and arrays.
std::size_t scalar_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::uint16:
    case GgufValueType::int16:
      return 2;
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::float32:
      return 4;
    case GgufValueType::uint64:
    case GgufValueType::int64:
    case GgufValueType::float64:
      return 8;
    case GgufValueType::string:
    case GgufValueType::array:
      return 0;
  }
  return 0;
}

// The fewest bytes one element of `type` can occupy: caps a count before anything is sized by it.
std::size_t min_element_bytes(GgufValueType type) {
  if (type == GgufValueType::string) return sizeof(std::uint64_t);
  if (type == GgufValueType::array) return kArrayHeaderBytes;
  return scalar_bytes(type);
}

bool is_integer(GgufValueType type) {
  switch (type) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::uint16:
    case GgufValueType::int16:
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::uint64:
    case GgufValueType::int64:
    case GgufValueType::boolean:
      return true;
    default:
      return false;
  }
}

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// Integer or bool scalar at `at`, as int64 (uint64 above 2^63-1 wraps; callers that care check).
std::int64_t load_integer(GgufValueType type, const std::byte* at) {
  switch (type) {
    case GgufValueType::uint8:
      return load<std::uint8_t>(at);
    case GgufValueType::int8:
      return load<std::int8_t>(at);
    case GgufValueType::uint16:
      return load<std::uint16_t>(at);
    case GgufValueType::int16:
      return load<std::int16_t>(at);
    case GgufValueType::uint32:
      return load<std::uint32_t>(at);
    case GgufValueType::int32:
      return load<std::int32_t>(at);
    case GgufValueType::uint64:
      return static_cast<std::int64_t>(load<std::uint64_t>(at));
    case GgufValueType::int64:
      return load<std::int64_t>(at);
    case GgufValueType::boolean:
      return load<std::uint8_t>(at) != 0 ? 1 : 0;
    default:
      return 0;
  }
}

std::optional<double> load_number(GgufValueType type, const std::byte* at) {
  if (type == GgufValueType::float32) return load<float>(at);
  if (type == GgufValueType::float64) return load<double>(at);
  if (type == GgufValueType::uint64) return static_cast<double>(load<std::uint64_t>(at));
  if (is_integer(type)) return static_cast<double>(load_integer(type, at));
  return std::nullopt;
}

// Size of an encoded value whose bytes were validated when the file was opened.
std::size_t encoded_size(GgufValueType type, const std::byte* at) {
  if (type == GgufValueType::string) return sizeof(std::uint64_t) + load<std::uint64_t>(at);
  if (type != GgufValueType::array) return scalar_bytes(type);
  const auto element_type = static_cast<GgufValueType>(load<std::uint32_t>(at));
  const auto count = load<std::uint64_t>(at + sizeof(std::uint32_t));
  std::size_t size = kArrayHeaderBytes;
  if (const std::size_t fixed = scalar_bytes(element_type); fixed != 0) return size + fixed * count;
  for (std::uint64_t i = 0; i < count; ++i) size += encoded_size(element_type, at + size);
  return size;
}

std::string_view load_string(const std::byte* at) {
  return {reinterpret_cast<const char*>(at + sizeof(std::uint64_t)),
          static_cast<std::size_t>(load<std::uint64_t>(at))};
}

// The keys llama.cpp's gguf-split writes into every shard of a split model.
constexpr std::string_view kSplitNo = "split.no";
constexpr std::string_view kSplitCount = "split.count";
constexpr std::string_view kSplitTensorsCount = "split.tensors.count";
constexpr std::int64_t kMaxShards = 99999;  // what the 5-digit shard names can number

// How llama.cpp names shard `split_no` (0-based) of `count`: <stem>-00001-of-00003.gguf.
std::string shard_name_suffix(std::int64_t split_no, std::int64_t count) {
  return fmt::format("-{:05d}-of-{:05d}.gguf", split_no + 1, count);
}

std::string describe(std::optional<std::int64_t> value) {
  return value ? std::to_string(*value) : std::string("missing");
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
  const auto index = static_cast<std::uint32_t>(type);
  return is_known_type(index) ? kTypeNames[index] : "unknown";
}

std::int64_t GgufTensorInfo::elements() const {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) count *= dim;  // validated not to overflow at open
  return count;
}

// --- GgufArray ----------------------------------------------------------------------------------

std::vector<std::string_view> GgufArray::strings() const {
  std::vector<std::string_view> out;
  if (element_type_ != GgufValueType::string) return out;
  out.reserve(size_);
  const std::byte* at = elements_;
  for (std::size_t i = 0; i < size_; ++i) {
    out.push_back(load_string(at));
    at += encoded_size(GgufValueType::string, at);
  }
  return out;
}

std::vector<std::int64_t> GgufArray::integers() const {
  std::vector<std::int64_t> out;
  if (!is_integer(element_type_)) return out;
  const std::size_t stride = scalar_bytes(element_type_);
  out.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i)
    out.push_back(load_integer(element_type_, elements_ + i * stride));
  return out;
}

std::vector<double> GgufArray::numbers() const {
  std::vector<double> out;
  const std::size_t stride = scalar_bytes(element_type_);
  if (stride == 0) return out;
  out.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i)
    out.push_back(*load_number(element_type_, elements_ + i * stride));
  return out;
}

std::vector<GgufArray> GgufArray::arrays() const {
  std::vector<GgufArray> out;
  if (element_type_ != GgufValueType::array) return out;
  out.reserve(size_);
  const std::byte* at = elements_;
  for (std::size_t i = 0; i < size_; ++i) {
    const auto type = static_cast<GgufValueType>(load<std::uint32_t>(at));
    const auto count = static_cast<std::size_t>(load<std::uint64_t>(at + sizeof(std::uint32_t)));
    out.push_back(GgufArray(type, count, at + kArrayHeaderBytes));
    at += encoded_size(GgufValueType::array, at);
  }
  return out;
}

// --- parsing
// --------------------------------------------------------------------------------------

class GgufFile::Parser {
 public:
  explicit Parser(GgufFile& file) : file_(file), reader_(file.file_.bytes()) {}

  Status run() {
    if (Status status = read_header(); !status) return status;
    for (std::uint64_t i = 0; i < kv_count_; ++i) {
      if (Status status = read_key_value(i); !status) return status;
    }
    if (Status status = read_alignment(); !status) return status;
    for (std::uint64_t i = 0; i < tensor_count_; ++i) {
      if (Status status = read_tensor_info(i); !status) return status;
    }
    return check_tensor_data();
  }

 private:
  Error fail(std::string_view reason) const {
    return Error{file_.path() + ": " + std::string(reason)};
  }
  std::string truncated(std::string_view what) const {
    return fmt::format("truncated file: {} at offset {} runs past file size {}", what,
                       reader_.offset(), reader_.offset() + reader_.remaining());
  }

  Status read_header() {
    std::array<char, 4> magic{};
    if (!reader_.read(magic)) return fail("not a GGUF file: shorter than the 4-byte magic");
    if (std::string_view(magic.data(), magic.size()) != "GGUF") {
      return fail("not a GGUF file: bad magic (expected 'GGUF')");
    }
    std::uint32_t version = 0;
    if (!reader_.read(version)) return fail(truncated("version"));
    if (version == 1) return fail("GGUF version 1 is not supported (only versions 2 and 3)");
    if ((version & 0xFFFFu) == 0 && version != 0) {
      return fail(
          fmt::format("GGUF version {:#x} looks big-endian; only little-endian files are "
                      "supported",
                      version));
    }
    if (version != 2 && version != 3) {
      return fail(fmt::format("unsupported GGUF version {} (only versions 2 and 3)", version));
    }
    file_.version_ = version;
    if (!reader_.read(tensor_count_)) return fail(truncated("tensor count"));
    if (!reader_.read(kv_count_)) return fail(truncated("metadata count"));
    // Each key-value needs at least a key length and a type; each tensor a name length, rank,
    // type and offset. Counts beyond what the file could hold are rejected before any reserve.
    constexpr std::uint64_t kMinKvBytes = sizeof(std::uint64_t) + sizeof(std::uint32_t) + 1;
    constexpr std::uint64_t kMinTensorBytes = 2 * sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t);
    if (kv_count_ > reader_.remaining() / kMinKvBytes) {
      return fail(fmt::format("header claims {} metadata entries but only {} bytes follow",
                              kv_count_, reader_.remaining()));
    }
    if (tensor_count_ > reader_.remaining() / kMinTensorBytes) {
      return fail(fmt::format("header claims {} tensors but only {} bytes follow", tensor_count_,
                              reader_.remaining()));
    }
    file_.entries_.reserve(kv_count_);
    file_.tensors_.reserve(tensor_count_);
    return {};
  }

  Status read_key_value(std::uint64_t index) {
    std::string_view key;
    if (!reader_.read_string(key)) {
      return fail(truncated(fmt::format("key of metadata entry #{}", index)));
    }
    std::uint32_t type = 0;
    if (!reader_.read(type))
      return fail(truncated(fmt::format("type of key '{}'", printable(key))));
    if (!is_known_type(type))
      return fail(fmt::format("key '{}': unknown value type {}", printable(key), type));
    const std::byte* value = reader_.position();
    if (Status status = skip_value(static_cast<GgufValueType>(type), key, 0); !status) {
      return status;
    }
    if (!file_.index_.emplace(key, file_.entries_.size()).second) {
      return fail(fmt::format("duplicate key '{}'", printable(key)));
    }
    file_.entries_.push_back(Entry{key, static_cast<GgufValueType>(type), value});
    return {};
  }

  // Walks one value, checking every length against the bytes left; allocates nothing.
  Status skip_value(GgufValueType type, std::string_view key, int depth) {
    if (type == GgufValueType::string) {
      std::string_view text;
      if (!reader_.read_string(text))
        return fail(truncated(fmt::format("string of key '{}'", printable(key))));
      return {};
    }
    if (type != GgufValueType::array) {
      if (!reader_.skip(scalar_bytes(type))) {
        return fail(truncated(
            fmt::format("{} value of key '{}'", gguf_value_type_name(type), printable(key))));
      }
      return {};
    }
    if (depth >= kMaxArrayDepth) {
      return fail(fmt::format("key '{}': arrays nested deeper than {} levels", printable(key),
                              kMaxArrayDepth));
    }
    std::uint32_t element_type = 0;
    std::uint64_t count = 0;
    if (!reader_.read(element_type) || !reader_.read(count)) {
      return fail(truncated(fmt::format("array header of key '{}'", printable(key))));
    }
    if (!is_known_type(element_type)) {
      return fail(
          fmt::format("key '{}': array of unknown element type {}", printable(key), element_type));
    }
    const auto element = static_cast<GgufValueType>(element_type);
    if (count > reader_.remaining() / min_element_bytes(element)) {
      return fail(fmt::format("key '{}': array of {} {} elements at offset {} exceeds file size {}",
                              printable(key), count, gguf_value_type_name(element),
                              reader_.offset(), reader_.offset() + reader_.remaining()));
    }
    if (const std::size_t fixed = scalar_bytes(element); fixed != 0) {
      reader_.skip(count * fixed);  // fits: checked against remaining above
      return {};
    }
    for (std::uint64_t i = 0; i < count; ++i) {
      if (Status status = skip_value(element, key, depth + 1); !status) return status;
    }
    return {};
  }

  Status read_alignment() {
    const Entry* entry = file_.find("general.alignment");
    if (entry == nullptr) return {};
    if (!is_integer(entry->type) || entry->type == GgufValueType::boolean) {
      return fail(fmt::format("key 'general.alignment': expected an integer, found {}",
                              gguf_value_type_name(entry->type)));
    }
    const std::int64_t alignment = load_integer(entry->type, entry->value);
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      return fail(
          fmt::format("key 'general.alignment': {} is not a positive power of two", alignment));
    }
    file_.alignment_ = static_cast<std::uint64_t>(alignment);
    return {};
  }

  Status read_tensor_info(std::uint64_t index) {
    std::string_view name;
    if (!reader_.read_string(name))
      return fail(truncated(fmt::format("name of tensor #{}", index)));
    const auto tensor_fail = [&](std::string_view reason) {
      return fail(fmt::format("tensor '{}': {}", printable(name), reason));
    };
    std::uint32_t rank = 0;
    if (!reader_.read(rank))
      return fail(truncated(fmt::format("rank of tensor '{}'", printable(name))));
    if (rank == 0 || rank > kMaxDims) {
      return tensor_fail(fmt::format("rank {} is outside 1..{}", rank, kMaxDims));
    }
    GgufTensorInfo info;
    info.name = std::string(name);
    std::int64_t elements = 1;
    for (std::uint32_t d = 0; d < rank; ++d) {
      std::uint64_t dim = 0;
      if (!reader_.read(dim))
        return fail(truncated(fmt::format("shape of tensor '{}'", printable(name))));
      constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      if (dim > kMax || (dim != 0 && static_cast<std::uint64_t>(elements) > kMax / dim)) {
        return tensor_fail(fmt::format("dimension {} = {} overflows the element count", d, dim));
      }
      elements *= static_cast<std::int64_t>(dim);
      info.shape.push_back(static_cast<std::int64_t>(dim));
    }
    std::uint32_t type_id = 0;
    if (!reader_.read(type_id))
      return fail(truncated(fmt::format("type of tensor '{}'", printable(name))));
    const std::optional<kernels::TensorTypeTraits> traits = kernels::tensor_type_traits(type_id);
    if (!traits) return tensor_fail(fmt::format("unknown tensor type id {}", type_id));
    info.type = traits->type;
    if (info.shape[0] % traits->block_elements != 0) {
      return tensor_fail(fmt::format("row length {} is not a multiple of the {} block size {}",
                                     info.shape[0], traits->name, traits->block_elements));
    }
    const std::optional<std::uint64_t> bytes =
        kernels::tensor_bytes(info.type, static_cast<std::uint64_t>(elements));
    if (!bytes) return tensor_fail("data size overflows");
    info.bytes = *bytes;
    if (!reader_.read(info.offset))
      return fail(truncated(fmt::format("offset of tensor '{}'", printable(name))));
    if (info.offset % file_.alignment_ != 0) {
      return tensor_fail(fmt::format("offset {} is not a multiple of the alignment {}", info.offset,
                                     file_.alignment_));
    }
    if (!file_.tensor_index_.emplace(name, file_.tensors_.size()).second) {
      return fail(fmt::format("duplicate tensor '{}'", printable(name)));
    }
    info.data = nullptr;  // set once the data section's start is known
    file_.tensors_.push_back(std::move(info));
    return {};
  }

  Status check_tensor_data() {
    if (file_.tensors_.empty()) return {};
    const std::uint64_t file_size = reader_.offset() + reader_.remaining();
    const std::uint64_t alignment = file_.alignment_;
    const std::uint64_t data_start = (reader_.offset() + alignment - 1) / alignment * alignment;
    const std::byte* base = file_.file_.bytes().data();
    for (GgufTensorInfo& info : file_.tensors_) {
      // Compared by subtraction so that a huge offset cannot wrap around.
      const bool fits = data_start <= file_size && info.offset <= file_size - data_start &&
                        info.bytes <= file_size - data_start - info.offset;
      if (!fits) {
        const std::uint64_t begin = data_start + info.offset;  // for the message only
        return fail(fmt::format("tensor '{}': data [{}, {}) exceeds file size {}",
                                printable(info.name), begin, begin + info.bytes, file_size));
      }
      info.data = base + data_start + info.offset;
    }
    return {};
  }

  GgufFile& file_;
  ByteReader reader_;
  std::uint64_t tensor_count_ = 0;
  std::uint64_t kv_count_ = 0;
};

Expected<GgufFile> GgufFile::open(const std::string& path) {
  Expected<MappedFile> file = MappedFile::open(path);
  if (!file) return file.error();
  Expected<GgufFile> gguf = parse(std::move(file).value());
  if (!gguf) return gguf;
  if (Status status = gguf->open_other_shards(); !status) return status.error();
  return gguf;
}

Status GgufFile::open_other_shards() {
  const std::optional<std::int64_t> count = get_int(kSplitCount);
  if (!count || *count == 1) return {};
  const auto fail = [&](std::string_view reason) {
    return Error{path() + ": " + std::string(reason)};
  };
  if (*count < 1 || *count > kMaxShards) {
    return fail(fmt::format("{} {} is outside 1..{}", kSplitCount, *count, kMaxShards));
  }
  const std::optional<std::int64_t> split_no = get_int(kSplitNo);
  const std::optional<std::int64_t> total = get_int(kSplitTensorsCount);
  if (!split_no || !total) {
    return fail(fmt::format("a split model ({} {}) needs {} and {}", kSplitCount, *count, kSplitNo,
                            kSplitTensorsCount));
  }
  if (*split_no < 0 || *split_no >= *count) {
    return fail(fmt::format("{} {} is outside 0..{}", kSplitNo, *split_no, *count - 1));
  }
  const std::filesystem::path first(path());
  const std::string name = first.filename().string();
  const std::string suffix = shard_name_suffix(*split_no, *count);
  const bool named = name.size() > suffix.size() && name.ends_with(suffix);
  const std::string stem = named ? name.substr(0, name.size() - suffix.size()) : std::string();
  if (*split_no != 0) {
    const std::string first_shard =
        named ? (first.parent_path() / (stem + shard_name_suffix(0, *count))).string()
              : std::string("the one with split.no 0");
    return fail(
        fmt::format("this is shard {} of {} of a split model ({} {}); pass the first file, {}",
                    *split_no + 1, *count, kSplitNo, *split_no, first_shard));
  }
  if (!named) {
    return fail(fmt::format(
        "the first of {} shards of a split model, but the name does not end in {}, so the other "
        "shards cannot be found",
        *count, suffix));
  }
  for (std::int64_t k = 1; k < *count; ++k) {
    const std::filesystem::path shard_path =
        first.parent_path() / (stem + shard_name_suffix(k, *count));
    std::error_code error;
    if (!std::filesystem::exists(shard_path, error)) {
      return fail(fmt::format("shard {} of {} is missing: expected {}", k + 1, *count,
                              shard_path.string()));
    }
    Expected<MappedFile> mapped = MappedFile::open(shard_path.string());
    if (!mapped) return mapped.error();
    Expected<GgufFile> shard = parse(std::move(mapped).value());
    if (!shard) return shard.error();
    if (Status status = add_shard(std::move(shard).value(), k, *count); !status) return status;
  }
  if (static_cast<std::uint64_t>(*total) != tensors_.size()) {
    return fail(fmt::format("{} is {} but the {} shards hold {} tensors", kSplitTensorsCount,
                            *total, *count, tensors_.size()));
  }
  return {};
}

Status GgufFile::add_shard(GgufFile shard, std::int64_t split_no, std::int64_t split_count) {
  const auto fail = [&](std::string_view reason) {
    return Error{shard.path() + ": " + std::string(reason)};
  };
  if (const std::optional<std::int64_t> count = shard.get_int(kSplitCount); count != split_count) {
    return fail(fmt::format("{} is {} but the first shard, {}, says {}", kSplitCount,
                            describe(count), path(), split_count));
  }
  if (const std::optional<std::int64_t> no = shard.get_int(kSplitNo); no != split_no) {
    return fail(fmt::format("{} is {} but the file name says shard {} ({} {})", kSplitNo,
                            describe(no), split_no + 1, kSplitNo, split_no));
  }
  const auto holder = [&](const GgufTensorInfo& info) -> const std::string& {
    for (const MappedFile& file : other_shards_) {
      const std::span<const std::byte> bytes = file.bytes();
      if (info.data >= bytes.data() && info.data <= bytes.data() + bytes.size()) return file.path();
    }
    return path();
  };
  for (GgufTensorInfo& info : shard.tensors_) {
    // The shard's index keys point into its mapping, which outlives the move below.
    const std::string_view name = shard.tensor_index_.find(info.name)->first;
    if (const GgufTensorInfo* other = find_tensor(name)) {
      return fail(fmt::format("tensor '{}' is also in {}", printable(name), holder(*other)));
    }
    tensor_index_.emplace(name, tensors_.size());
    tensors_.push_back(std::move(info));
  }
  other_shards_.push_back(std::move(shard.file_));
  return {};
}

Expected<GgufFile> GgufFile::parse(MappedFile file) {
  GgufFile gguf(std::move(file));
  Parser parser(gguf);
  if (Status status = parser.run(); !status) return Error{status.message()};
  return gguf;
}

// --- lookups
// ---------------------------------------------------------------------------------------

std::uint64_t GgufFile::file_bytes() const {
  std::uint64_t total = file_.size();
  for (const MappedFile& shard : other_shards_) total += shard.size();
  return total;
}

std::vector<std::span<const std::byte>> GgufFile::mapped_regions() const {
  std::vector<std::span<const std::byte>> regions{file_.bytes()};
  for (const MappedFile& shard : other_shards_) regions.push_back(shard.bytes());
  return regions;
}

const GgufFile::Entry* GgufFile::find(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

GgufValueType GgufFile::type_of(std::string_view key) const {
  const Entry* entry = find(key);
  return entry == nullptr ? GgufValueType::uint8 : entry->type;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr || entry->type != GgufValueType::string) return std::nullopt;
  return load_string(entry->value);
}

std::optional<std::int64_t> GgufFile::get_int(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr || !is_integer(entry->type)) return std::nullopt;
  if (entry->type == GgufValueType::uint64 &&
      load<std::uint64_t>(entry->value) >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  return load_integer(entry->type, entry->value);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr) return std::nullopt;
  return load_number(entry->type, entry->value);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr || !is_integer(entry->type)) return std::nullopt;
  return load_integer(entry->type, entry->value) != 0;
}

std::optional<GgufArray> GgufFile::get_array(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr || entry->type != GgufValueType::array) return std::nullopt;
  const auto element_type = static_cast<GgufValueType>(load<std::uint32_t>(entry->value));
  const auto count = load<std::uint64_t>(entry->value + sizeof(std::uint32_t));
  return GgufArray(element_type, static_cast<std::size_t>(count), entry->value + kArrayHeaderBytes);
}

std::vector<std::string_view> GgufFile::keys() const {
  std::vector<std::string_view> out;
  out.reserve(entries_.size());
  for (const Entry& entry : entries_) out.push_back(entry.key);
  return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tern::engine
