#pragma once

// The 16-row tile layout of Q8_0 and Q4_0 weights for the VNNI kernels.
//
// Row-major blocks make a VNNI kernel transpose 16 rows in registers for every block, and read 16
// interleaved row streams; that work, not memory, bounded single-token decode (about 30 GB/s per
// core even from cache). In the tile layout each run of 16 rows is stored block by block:
//   16 f16 scales (row order), then the quantized values with lane r of every 64-byte vector
//   holding row r's 4 bytes of one element group, ready for vpdpbusd with a broadcast
//   activation: Q8_0 as 8 vectors of (value + 128); Q4_0 as 4 vectors of its packed bytes, whose
//   low nibbles are elements 4g..4g+3 and high nibbles 16 + 4g...
// A block of 16 rows takes exactly the bytes of its 16 row-major blocks (544 for Q8_0, 288 for
// Q4_0), and the tiles follow each other, so a decode step reads one sequential stream.

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tern::kernels {

inline constexpr std::int64_t kQ8TileRows = 16;

// Whether the kernels of `isa` read tiles of `type` (Q8_0, Q4_0 with Isa::avx512_vnni).
bool uses_q8_tiles(TensorType type, Isa isa);

// The bytes of the tile copy of w: its first floor(rows / 16) * 16 rows.
std::size_t q8_tiles_bytes(const WeightMatrix& w);

// Writes the tile layout of w's first floor(rows / 16) * 16 rows into `tiles` (q8_tiles_bytes(w)
// bytes) and returns w with `tiles` and `tiled_rows` set. The row-major data stays where it was
// (the leftover rows, and kernels of other instruction sets, read it).
WeightMatrix repack_q8_tiles(const WeightMatrix& w, std::byte* tiles, ThreadPool& pool);

}  // namespace tern::kernels
