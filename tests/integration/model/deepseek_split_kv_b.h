#pragma once

// DeepSeek's split kv_b GGUF layout, written from a whole-kv_b file (tests only).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/expected.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/model_config.h"

namespace tern::testing {

using engine::GgufFile;
using engine::GgufTensorInfo;
using engine::GgufWriter;
using engine::LatentAttentionConfig;
using engine::ModelConfig;

// llama.cpp has written DeepSeek's kv_b_proj split since 2025: attn_k_b per head [kv_lora][nope]
// (transposed) and attn_v_b per head [v][kv_lora], with the absorbed sizes in key_length /
// value_length and the model's own in *_mla. Rewrites the shared whole-kv_b file that way.
inline Status write_split_kv_b(const GgufFile& source, const std::string& path) {
  const ModelConfig whole = *engine::config_from_gguf(source);
  const LatentAttentionConfig& latent = whole.latent;
  const std::int64_t heads = whole.n_heads;
  const std::int64_t nope = latent.nope_head_dim;
  const std::int64_t value = latent.value_head_dim;
  const std::int64_t rank = latent.kv_lora_rank;
  GgufWriter writer;
  for (std::string_view key : source.keys()) {
    if (key == "deepseek2.attention.key_length") {
      writer.add_uint32(key, static_cast<std::uint32_t>(latent.cached_width()));
      writer.add_uint32("deepseek2.attention.key_length_mla",
                        static_cast<std::uint32_t>(whole.head_dim));
    } else if (key == "deepseek2.attention.value_length") {
      writer.add_uint32(key, static_cast<std::uint32_t>(rank));
      writer.add_uint32("deepseek2.attention.value_length_mla", static_cast<std::uint32_t>(value));
    } else if (key == "deepseek2.attention.head_count_kv") {
      writer.add_uint32(key, 1);
    } else if (Status copied = writer.copy_metadata(source, key); !copied.ok()) {
      return copied;
    }
  }
  for (const GgufTensorInfo& tensor : source.tensors()) {
    const std::string& name = tensor.name;
    const std::size_t at = name.find("attn_kv_b");
    if (at == std::string::npos) {
      Status added =
          writer.add_tensor(name, tensor.type, tensor.shape, [&tensor](std::span<std::byte> out) {
            std::memcpy(out.data(), tensor.data, out.size());
            return Status::success();
          });
      if (!added.ok()) return added;
      continue;
    }
    const auto* kv_b = reinterpret_cast<const float*>(tensor.data);  // [heads * (nope + v)][rank]
    const auto element = [=](std::int64_t row, std::int64_t col) {
      float out = 0;
      std::memcpy(&out, kv_b + row * rank + col, sizeof(float));
      return out;
    };
    const std::string prefix = name.substr(0, at);
    Status k_b = writer.add_tensor(prefix + "attn_k_b.weight", kernels::TensorType::f32,
                                   {nope, rank, heads}, [=](std::span<std::byte> out) {
                                     auto* k = reinterpret_cast<float*>(out.data());
                                     for (std::int64_t h = 0; h < heads; ++h)
                                       for (std::int64_t r = 0; r < rank; ++r)
                                         for (std::int64_t c = 0; c < nope; ++c)
                                           k[(h * rank + r) * nope + c] =
                                               element(h * (nope + value) + c, r);
                                     return Status::success();
                                   });
    if (!k_b.ok()) return k_b;
    Status v_b = writer.add_tensor(prefix + "attn_v_b.weight", kernels::TensorType::f32,
                                   {rank, value, heads}, [=](std::span<std::byte> out) {
                                     auto* v = reinterpret_cast<float*>(out.data());
                                     for (std::int64_t h = 0; h < heads; ++h)
                                       for (std::int64_t i = 0; i < value; ++i)
                                         for (std::int64_t r = 0; r < rank; ++r)
                                           v[(h * value + i) * rank + r] =
                                               element(h * (nope + value) + nope + i, r);
                                     return Status::success();
                                   });
    if (!v_b.ok()) return v_b;
  }
  return writer.write(path);
}

}  // namespace tern::testing
