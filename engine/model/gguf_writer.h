#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"
#include "engine/model/gguf_file.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

// Writes a GGUF v3 file: metadata first, then the tensor directory, then each tensor's data at
// `alignment`. Tensor data comes from a callback at write time, so a converter holds one
// tensor's bytes at a time instead of the whole model.
class GgufWriter {
 public:
  // Fills `out`, which is sized to the tensor's bytes.
  using TensorSource = std::function<Status(std::span<std::byte> out)>;

  void add_string(std::string_view key, std::string_view value);
  void add_uint32(std::string_view key, std::uint32_t value);
  void add_int32(std::string_view key, std::int32_t value);
  void add_float32(std::string_view key, float value);
  void add_bool(std::string_view key, bool value);
  void add_string_array(std::string_view key, std::span<const std::string_view> values);
  void add_string_array(std::string_view key, std::span<const std::string> values);
  void add_float32_array(std::string_view key, std::span<const float> values);
  void add_int32_array(std::string_view key, std::span<const std::int32_t> values);
  // Copies one metadata entry of another file as it is (any type, arrays included).
  Status copy_metadata(const GgufFile& source, std::string_view key);

  // shape in GGML order: shape[0] is the row length.
  Status add_tensor(std::string_view name, kernels::TensorType type,
                    std::vector<std::int64_t> shape, TensorSource source);

  Status write(const std::string& path) const;

  // The bytes write() would write: header, tensor directory and every tensor, aligned.
  std::uint64_t file_bytes() const;
  // Writes the file into `out` (file_bytes() long) instead of a file, filling the tensors on up
  // to `threads` threads at once, largest first: each source is called once, possibly while
  // other tensors' sources run, so sources must not share mutable state. For models made in
  // memory (random_model.h).
  Status write_to_memory(std::span<std::byte> out, unsigned threads) const;

 private:
  struct Tensor {
    std::string name;
    kernels::TensorType type;
    std::vector<std::int64_t> shape;
    std::uint64_t bytes;
    TensorSource source;
  };
  // The header, metadata and tensor directory, padded to the alignment: where data begins.
  std::vector<std::byte> header() const;
  std::uint64_t padded(std::uint64_t bytes) const {
    return (bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  void append_key(std::string_view key, GgufValueType type);
  void append_string(std::string_view value);
  void append_integer(GgufValueType type, std::int64_t value);
  template <typename T>
  void append_pod(T value);

  std::vector<std::byte> metadata_;  // encoded key/value pairs
  std::uint64_t metadata_count_ = 0;
  std::vector<Tensor> tensors_;
  std::uint64_t alignment_ = 32;
};

// llama.cpp's general.file_type (LLAMA_FTYPE_*) for a model whose matrices are all `type`;
// 1 (F16) for a type it has no value for.
std::uint32_t gguf_file_type(kernels::TensorType type);

}  // namespace tern::engine
