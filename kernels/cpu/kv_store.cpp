#include "kernels/cpu/kv_store.h"

#include <cassert>
#include <cstring>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/half.h"

namespace tern::kernels {
namespace {

void f32_to_f16_row_scalar(const float* source, std::int64_t count, std::uint16_t* out) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = f32_to_f16(source[i]);
}

using F16RowFunction = void (*)(const float*, std::int64_t, std::uint16_t*);

F16RowFunction select_f16_row() {
  return cpu_features().has_avx512() ? f32_to_f16_row_avx512 : f32_to_f16_row_scalar;
}

void store_row(const float* source, int count, KvType type, std::byte* destination) {
  switch (type) {
    case KvType::f32:
      std::memcpy(destination, source, static_cast<std::size_t>(count) * sizeof(float));
      break;
    case KvType::f16: {
      // A decode step's rows are few, but the software conversion took about 3 ns a value.
      static const F16RowFunction convert = select_f16_row();
      convert(source, count, reinterpret_cast<std::uint16_t*>(destination));
      break;
    }
    case KvType::bf16: {
      auto* out = reinterpret_cast<std::uint16_t*>(destination);
      for (int i = 0; i < count; ++i) out[i] = f32_to_bf16(source[i]);
      break;
    }
  }
}

}  // namespace

std::size_t kv_type_bytes(KvType type) {
  return type == KvType::f32 ? 4 : 2;
}

std::size_t kv_block_bytes(const KvCacheLayout& layout) {
  return static_cast<std::size_t>(layout.n_kv_heads) * static_cast<std::size_t>(layout.block_size) *
         static_cast<std::size_t>(layout.head_dim) * kv_type_bytes(layout.type);
}

void store_kv(const float* k, std::int64_t k_stride, const float* v, std::int64_t v_stride,
              std::int64_t tokens, const std::int32_t* positions, const std::int32_t* block_table,
              const KvCacheLayout& layout, void* k_pool, void* v_pool) {
  const std::size_t block_bytes = kv_block_bytes(layout);
  const std::size_t head_bytes = static_cast<std::size_t>(layout.block_size) *
                                 static_cast<std::size_t>(layout.head_dim) *
                                 kv_type_bytes(layout.type);
  const std::size_t slot_bytes =
      static_cast<std::size_t>(layout.head_dim) * kv_type_bytes(layout.type);
  for (std::int64_t token = 0; token < tokens; ++token) {
    const std::int32_t position = positions[token];
    assert(position >= 0);
    const std::int32_t block = block_table[position / layout.block_size];
    assert(block >= 0);
    const std::size_t offset = static_cast<std::size_t>(block) * block_bytes +
                               static_cast<std::size_t>(position % layout.block_size) * slot_bytes;
    for (int head = 0; head < layout.n_kv_heads; ++head) {
      const std::size_t head_offset = offset + static_cast<std::size_t>(head) * head_bytes;
      const std::int64_t column = static_cast<std::int64_t>(head) * layout.head_dim;
      store_row(k + token * k_stride + column, layout.head_dim, layout.type,
                static_cast<std::byte*>(k_pool) + head_offset);
      if (v_pool == nullptr) continue;
      store_row(v + token * v_stride + column, layout.head_dim, layout.type,
                static_cast<std::byte*>(v_pool) + head_offset);
    }
  }
}

}  // namespace tern::kernels
