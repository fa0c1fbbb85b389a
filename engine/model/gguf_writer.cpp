#include "engine/model/gguf_writer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

namespace tern::engine {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

template <typename T>
void GgufWriter::append_pod(T value) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&value);
  metadata_.insert(metadata_.end(), bytes, bytes + sizeof(T));
}

// An integer (or bool) metadata value in the width its type says.
void GgufWriter::append_integer(GgufValueType type, std::int64_t value) {
  switch (type) {
    case GgufValueType::uint8:
    case GgufValueType::boolean:
      append_pod(static_cast<std::uint8_t>(value));
      break;
    case GgufValueType::int8:
      append_pod(static_cast<std::int8_t>(value));
      break;
    case GgufValueType::uint16:
      append_pod(static_cast<std::uint16_t>(value));
      break;
    case GgufValueType::int16:
      append_pod(static_cast<std::int16_t>(value));
      break;
    case GgufValueType::uint32:
      append_pod(static_cast<std::uint32_t>(value));
      break;
    case GgufValueType::int32:
      append_pod(static_cast<std::int32_t>(value));
      break;
    case GgufValueType::uint64:
      append_pod(static_cast<std::uint64_t>(value));
      break;
    default:
      append_pod(value);
      break;
  }
}

void GgufWriter::append_string(std::string_view value) {
  append_pod<std::uint64_t>(value.size());
  const auto* bytes = reinterpret_cast<const std::byte*>(value.data());
  metadata_.insert(metadata_.end(), bytes, bytes + value.size());
}

void GgufWriter::append_key(std::string_view key, GgufValueType type) {
  append_string(key);
  append_pod<std::uint32_t>(static_cast<std::uint32_t>(type));
  ++metadata_count_;
}

void GgufWriter::add_string(std::string_view key, std::string_view value) {
  append_key(key, GgufValueType::string);
  append_string(value);
}

void GgufWriter::add_uint32(std::string_view key, std::uint32_t value) {
  append_key(key, GgufValueType::uint32);
  append_pod(value);
}

void GgufWriter::add_int32(std::string_view key, std::int32_t value) {
  append_key(key, GgufValueType::int32);
  append_pod(value);
}

void GgufWriter::add_float32(std::string_view key, float value) {
  append_key(key, GgufValueType::float32);
  append_pod(value);
}

void GgufWriter::add_bool(std::string_view key, bool value) {
  append_key(key, GgufValueType::boolean);
  append_pod<std::uint8_t>(value ? 1 : 0);
}

void GgufWriter::add_string_array(std::string_view key, std::span<const std::string_view> values) {
  append_key(key, GgufValueType::array);
  append_pod<std::uint32_t>(static_cast<std::uint32_t>(GgufValueType::string));
  append_pod<std::uint64_t>(values.size());
  for (std::string_view value : values) append_string(value);
}

void GgufWriter::add_string_array(std::string_view key, std::span<const std::string> values) {
  std::vector<std::string_view> views(values.begin(), values.end());
  add_string_array(key, views);
}

void GgufWriter::add_float32_array(std::string_view key, std::span<const float> values) {
  append_key(key, GgufValueType::array);
  append_pod<std::uint32_t>(static_cast<std::uint32_t>(GgufValueType::float32));
  append_pod<std::uint64_t>(values.size());
  for (float value : values) append_pod(value);
}

void GgufWriter::add_int32_array(std::string_view key, std::span<const std::int32_t> values) {
  append_key(key, GgufValueType::array);
  append_pod<std::uint32_t>(static_cast<std::uint32_t>(GgufValueType::int32));
  append_pod<std::uint64_t>(values.size());
  for (std::int32_t value : values) append_pod(value);
}

Status GgufWriter::copy_metadata(const GgufFile& source, std::string_view key) {
  if (!source.has(key)) return Error{fmt::format("{}: no metadata key '{}'", source.path(), key)};
  const GgufValueType type = source.type_of(key);
  auto copy_scalar = [&](GgufValueType scalar_type, auto write_value) {
    append_key(key, scalar_type);
    write_value();
  };
  switch (type) {
    case GgufValueType::string:
      add_string(key, *source.get_string(key));
      return Status::success();
    case GgufValueType::float32:
      add_float32(key, static_cast<float>(*source.get_float(key)));
      return Status::success();
    case GgufValueType::float64:
      copy_scalar(type, [&] { append_pod<double>(*source.get_float(key)); });
      return Status::success();
    case GgufValueType::boolean:
      add_bool(key, *source.get_bool(key));
      return Status::success();
    case GgufValueType::array:
      break;
    default: {
      const std::int64_t value = *source.get_int(key);
      copy_scalar(type, [&] { append_integer(type, value); });
      return Status::success();
    }
  }
  const GgufArray array = *source.get_array(key);
  switch (array.element_type()) {
    case GgufValueType::string:
      add_string_array(key, array.strings());
      return Status::success();
    case GgufValueType::float32: {
      const std::vector<double> numbers = array.numbers();
      const std::vector<float> values(numbers.begin(), numbers.end());
      add_float32_array(key, values);
      return Status::success();
    }
    case GgufValueType::int32: {
      const std::vector<std::int64_t> integers = array.integers();
      const std::vector<std::int32_t> values(integers.begin(), integers.end());
      add_int32_array(key, values);
      return Status::success();
    }
    default: {
      // Other element types are rare in metadata; keep their width and values.
      const GgufValueType element = array.element_type();
      if (element == GgufValueType::array) {
        return Error{fmt::format("{}: metadata '{}' is a nested array, which is not copied",
                                 source.path(), key)};
      }
      append_key(key, GgufValueType::array);
      append_pod<std::uint32_t>(static_cast<std::uint32_t>(element));
      append_pod<std::uint64_t>(array.size());
      if (element == GgufValueType::float64) {
        for (double value : array.numbers()) append_pod(value);
        return Status::success();
      }
      for (std::int64_t value : array.integers()) append_integer(element, value);
      return Status::success();
    }
  }
}

Status GgufWriter::add_tensor(std::string_view name, kernels::TensorType type,
                              std::vector<std::int64_t> shape, TensorSource source) {
  std::uint64_t elements = 1;
  for (std::int64_t dim : shape) {
    if (dim <= 0) return Error{fmt::format("tensor '{}': dimension {} is not positive", name, dim)};
    elements *= static_cast<std::uint64_t>(dim);
  }
  if (shape.empty() || shape[0] % kernels::tensor_type_traits(type).block_elements != 0) {
    return Error{fmt::format("tensor '{}': row length is not a multiple of the {} block", name,
                             kernels::tensor_type_name(type))};
  }
  const auto bytes = kernels::tensor_bytes(type, elements);
  if (!bytes) return Error{fmt::format("tensor '{}': size overflows", name)};
  tensors_.push_back(Tensor{std::string(name), type, std::move(shape), *bytes, std::move(source)});
  return Status::success();
}

std::vector<std::byte> GgufWriter::header() const {
  std::vector<std::byte> header;
  // resize + memcpy: GCC 12 at -O3 misreads the growth of a vector insert of a few bytes as an
  // overflow (-Wstringop-overflow).
  auto put = [&header](const void* data, std::size_t size) {
    if (size == 0) return;  // data may be null
    const std::size_t at = header.size();
    header.resize(at + size);
    std::memcpy(header.data() + at, data, size);
  };
  const std::uint32_t magic = 0x46554747;  // "GGUF"
  const std::uint32_t version = 3;
  const std::uint64_t tensor_count = tensors_.size();
  put(&magic, 4);
  put(&version, 4);
  put(&tensor_count, 8);
  put(&metadata_count_, 8);
  put(metadata_.data(), metadata_.size());
  std::uint64_t offset = 0;
  for (const Tensor& tensor : tensors_) {
    const std::uint64_t name_length = tensor.name.size();
    put(&name_length, 8);
    put(tensor.name.data(), tensor.name.size());
    const auto dims = static_cast<std::uint32_t>(tensor.shape.size());
    put(&dims, 4);
    for (std::int64_t dim : tensor.shape) put(&dim, 8);
    const auto type = static_cast<std::uint32_t>(tensor.type);
    put(&type, 4);
    put(&offset, 8);
    offset += padded(tensor.bytes);
  }
  header.resize(padded(header.size()));
  return header;
}

Status GgufWriter::write(const std::string& path) const {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) return Error{fmt::format("{}: cannot open for writing", path)};
  const std::vector<std::byte> head = header();
  if (std::fwrite(head.data(), 1, head.size(), file.get()) != head.size()) {
    return Error{fmt::format("{}: write failed", path)};
  }
  std::vector<std::byte> data;
  for (const Tensor& tensor : tensors_) {
    data.assign(padded(tensor.bytes), std::byte{0});
    if (Status filled = tensor.source(std::span(data.data(), tensor.bytes)); !filled.ok()) {
      return Error{fmt::format("{}: tensor '{}': {}", path, tensor.name, filled.message())};
    }
    if (std::fwrite(data.data(), 1, data.size(), file.get()) != data.size()) {
      return Error{fmt::format("{}: write failed", path)};
    }
  }
  if (std::fflush(file.get()) != 0) return Error{fmt::format("{}: write failed", path)};
  return Status::success();
}

std::uint64_t GgufWriter::file_bytes() const {
  std::uint64_t total = header().size();
  for (const Tensor& tensor : tensors_) total += padded(tensor.bytes);
  return total;
}

Status GgufWriter::write_to_memory(std::span<std::byte> out, unsigned threads) const {
  const std::vector<std::byte> head = header();
  std::vector<std::span<std::byte>> spans;  // each tensor's data in `out`, in directory order
  std::uint64_t offset = head.size();
  for (const Tensor& tensor : tensors_) {
    if (offset + padded(tensor.bytes) > out.size()) break;
    spans.push_back(out.subspan(offset, tensor.bytes));
    offset += padded(tensor.bytes);
  }
  if (spans.size() != tensors_.size() || offset != out.size()) {
    return Error{
        fmt::format("GGUF in memory: {} bytes given for a file of {}", out.size(), file_bytes())};
  }
  std::memcpy(out.data(), head.data(), head.size());
  // Largest first, each to the next free thread, so no thread is left with a big tensor at the
  // end.
  std::vector<std::size_t> order(tensors_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    return tensors_[a].bytes > tensors_[b].bytes;
  });
  std::atomic<std::size_t> next{0};
  std::mutex failure_mutex;
  std::optional<Error> failure;
  const auto work = [&] {
    for (std::size_t taken = next++; taken < order.size(); taken = next++) {
      const std::size_t index = order[taken];
      const std::span<std::byte> data = spans[index];
      Status filled = tensors_[index].source(data);
      // The padding up to the next tensor; fresh anonymous memory is zero already, but the
      // caller's buffer need not be.
      const std::uint64_t padding = padded(data.size()) - data.size();
      std::memset(data.data() + data.size(), 0, padding);
      if (!filled.ok()) {
        const std::lock_guard lock(failure_mutex);
        if (!failure) {
          failure = Error{fmt::format("tensor '{}': {}", tensors_[index].name, filled.message())};
        }
        next = order.size();
      }
    }
  };
  std::vector<std::thread> workers;
  const std::size_t extra = std::min<std::size_t>(std::max(threads, 1u), order.size());
  for (std::size_t i = 1; i < extra; ++i) workers.emplace_back(work);
  work();
  for (std::thread& worker : workers) worker.join();
  if (failure) return *failure;
  return Status::success();
}

std::uint32_t gguf_file_type(kernels::TensorType type) {
  switch (type) {
    case kernels::TensorType::f32:
      return 0;
    case kernels::TensorType::f16:
      return 1;
    case kernels::TensorType::q4_0:
      return 2;
    case kernels::TensorType::q8_0:
      return 7;
    case kernels::TensorType::q4_k:
      return 15;
    case kernels::TensorType::q6_k:
      return 18;
    case kernels::TensorType::bf16:
      return 32;
    default:
      return 1;
  }
}

}  // namespace tern::engine
