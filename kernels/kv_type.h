#pragma once

namespace tern::kernels {

// Element type of the paged KV cache. f16 and bf16 halve its memory; values are rounded to nearest
// even when stored and widened to f32 when attention reads them. The one definition: the engine's
// configuration and every backend's kernels use this enum, so nothing converts between copies.
enum class KvType { f32, f16, bf16 };

}  // namespace tern::kernels
