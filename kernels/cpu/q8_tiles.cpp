#include "kernels/cpu/q8_tiles.h"

#include <cstring>

#include "kernels/cpu/quant_blocks.h"

namespace tern::kernels {
namespace {

constexpr std::int64_t kScaleBytes = kQ8TileRows * 2;

template <class Block>
void repack_tile(const std::byte* row0, std::size_t row_bytes, std::int64_t blocks,
                 std::byte* dst) {
  constexpr bool kQ8 = sizeof(Block) == sizeof(BlockQ8_0);
  constexpr int kGroups = kQ8 ? 8 : 4;
  constexpr std::int64_t kTileBlockBytes = kQ8TileRows * static_cast<std::int64_t>(sizeof(Block));
  for (std::int64_t b = 0; b < blocks; ++b) {
    std::byte* out = dst + b * kTileBlockBytes;
    for (std::int64_t r = 0; r < kQ8TileRows; ++r) {
      const std::byte* block = row0 + static_cast<std::size_t>(r) * row_bytes +
                               static_cast<std::size_t>(b) * sizeof(Block);
      std::memcpy(out + 2 * r, block, 2);  // the f16 scale
      for (int g = 0; g < kGroups; ++g) {
        std::byte* lane = out + kScaleBytes + 64 * g + 4 * r;
        std::memcpy(lane, block + 2 + 4 * g, 4);
        if constexpr (kQ8) {
          for (int i = 0; i < 4; ++i) lane[i] ^= std::byte{0x80};  // value + 128, unsigned
        }
      }
    }
  }
}

}  // namespace

bool uses_q8_tiles(TensorType type, Isa isa) {
  return isa == Isa::avx512_vnni && (type == TensorType::q8_0 || type == TensorType::q4_0);
}

std::size_t q8_tiles_bytes(const WeightMatrix& w) {
  return static_cast<std::size_t>(w.rows / kQ8TileRows * kQ8TileRows) * w.row_bytes;
}

WeightMatrix repack_q8_tiles(const WeightMatrix& w, std::byte* tiles, ThreadPool& pool) {
  const std::int64_t tile_count = w.rows / kQ8TileRows;
  const std::int64_t blocks = w.cols / 32;
  const std::size_t tile_bytes = kQ8TileRows * w.row_bytes;
  const auto* source = static_cast<const std::byte*>(w.data);
  pool.parallel_for(tile_count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::byte* row0 = source + static_cast<std::size_t>(t) * tile_bytes;
      std::byte* dst = tiles + static_cast<std::size_t>(t) * tile_bytes;
      if (w.type == TensorType::q8_0) {
        repack_tile<BlockQ8_0>(row0, w.row_bytes, blocks, dst);
      } else {
        repack_tile<BlockQ4_0>(row0, w.row_bytes, blocks, dst);
      }
    }
  });
  WeightMatrix tiled = w;
  tiled.tiles = tiles;
  tiled.tiled_rows = tile_count * kQ8TileRows;
  return tiled;
}

}  // namespace tern::kernels
