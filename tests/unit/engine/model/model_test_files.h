#pragma once

// Writers for small GGUF and safetensors files, for the model loader tests.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/gguf_file.h"

namespace tern::engine::testing {

inline std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

inline void write_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::random_device seed;
    path_ = std::filesystem::temp_directory_path() /
            ("tern-model-test-" + std::to_string(seed()) + std::to_string(seed()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Builds a GGUF byte image field by field, the way tools/gguf_io.py writes one.
class GgufWriter {
 public:
  explicit GgufWriter(std::uint32_t version = 3, std::uint64_t alignment = 32)
      : version_(version), alignment_(alignment) {}

  // Raw encoders, for values and for hand-built corrupt files.
  static void put_raw(std::vector<std::byte>& out, const void* data, std::size_t size) {
    const auto* bytes = static_cast<const std::byte*>(data);
    out.insert(out.end(), bytes, bytes + size);
  }
  template <typename T>
  static void put(std::vector<std::byte>& out, T value) {
    put_raw(out, &value, sizeof(value));
  }
  static void put_string(std::vector<std::byte>& out, std::string_view text) {
    put<std::uint64_t>(out, text.size());
    put_raw(out, text.data(), text.size());
  }

  // A key with its already-encoded value (type tag written here).
  void add_raw(std::string_view key, GgufValueType type, std::vector<std::byte> value) {
    std::vector<std::byte> entry;
    put_string(entry, key);
    put<std::uint32_t>(entry, static_cast<std::uint32_t>(type));
    entry.insert(entry.end(), value.begin(), value.end());
    kv_.push_back(std::move(entry));
  }
  template <typename T>
  void add(std::string_view key, GgufValueType type, T value) {
    std::vector<std::byte> encoded;
    put(encoded, value);
    add_raw(key, type, std::move(encoded));
  }
  void add_u32(std::string_view key, std::uint32_t value) {
    add(key, GgufValueType::uint32, value);
  }
  void add_f32(std::string_view key, float value) { add(key, GgufValueType::float32, value); }
  void add_string(std::string_view key, std::string_view value) {
    std::vector<std::byte> encoded;
    put_string(encoded, value);
    add_raw(key, GgufValueType::string, std::move(encoded));
  }

  // `shape` in GGML order (row length first); `data` must already be the right size.
  void add_tensor(std::string_view name, kernels::TensorType type, std::vector<std::uint64_t> shape,
                  std::vector<std::byte> data) {
    tensors_.push_back({std::string(name), type, std::move(shape), std::move(data)});
  }
  void add_f32_tensor(std::string_view name, std::vector<std::uint64_t> shape, float fill = 0.5f) {
    std::uint64_t count = 1;
    for (std::uint64_t dim : shape) count *= dim;
    std::vector<float> values(count, fill);
    std::vector<std::byte> data(count * sizeof(float));
    std::memcpy(data.data(), values.data(), data.size());
    add_tensor(name, kernels::TensorType::f32, std::move(shape), std::move(data));
  }

  std::vector<std::byte> bytes() const {
    std::vector<std::byte> out;
    put_raw(out, "GGUF", 4);
    put<std::uint32_t>(out, version_);
    put<std::uint64_t>(out, tensors_.size());
    put<std::uint64_t>(out, kv_.size());
    for (const auto& entry : kv_) out.insert(out.end(), entry.begin(), entry.end());
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> offsets;
    for (const Tensor& tensor : tensors_) {
      offset = align(offset);
      offsets.push_back(offset);
      put_string(out, tensor.name);
      put<std::uint32_t>(out, static_cast<std::uint32_t>(tensor.shape.size()));
      for (std::uint64_t dim : tensor.shape) put<std::uint64_t>(out, dim);
      put<std::uint32_t>(out, static_cast<std::uint32_t>(tensor.type));
      put<std::uint64_t>(out, offset);
      offset += tensor.data.size();
    }
    out.resize(align(out.size()));
    const std::size_t base = out.size();
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(base + offsets[i]);
      out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
    }
    return out;
  }

 private:
  struct Tensor {
    std::string name;
    kernels::TensorType type;
    std::vector<std::uint64_t> shape;
    std::vector<std::byte> data;
  };
  std::uint64_t align(std::uint64_t value) const {
    return (value + alignment_ - 1) / alignment_ * alignment_;
  }

  std::uint32_t version_;
  std::uint64_t alignment_;
  std::vector<std::vector<std::byte>> kv_;
  std::vector<Tensor> tensors_;
};

// Builds a safetensors byte image from (name, dtype, shape, data) entries.
class SafetensorsWriter {
 public:
  void add(std::string_view name, std::string_view dtype, std::vector<std::int64_t> shape,
           std::span<const std::byte> data) {
    entries_.push_back({std::string(name), std::string(dtype), std::move(shape),
                        std::vector<std::byte>(data.begin(), data.end())});
  }
  std::vector<std::byte> bytes() const {
    std::string header = "{";
    std::uint64_t offset = 0;
    for (const Entry& entry : entries_) {
      if (header.size() > 1) header += ",";
      header += "\"" + entry.name + "\":{\"dtype\":\"" + entry.dtype + "\",\"shape\":[";
      for (std::size_t i = 0; i < entry.shape.size(); ++i) {
        header += (i ? "," : "") + std::to_string(entry.shape[i]);
      }
      header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
                std::to_string(offset + entry.data.size()) + "]}";
      offset += entry.data.size();
    }
    header += "}";
    while ((header.size() + 8) % 8 != 0) header += " ";
    std::vector<std::byte> out;
    GgufWriter::put<std::uint64_t>(out, header.size());
    GgufWriter::put_raw(out, header.data(), header.size());
    for (const Entry& entry : entries_) out.insert(out.end(), entry.data.begin(), entry.data.end());
    return out;
  }

 private:
  struct Entry {
    std::string name, dtype;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<Entry> entries_;
};

}  // namespace tern::engine::testing
