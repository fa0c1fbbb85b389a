#pragma once

#include <optional>
#include <string_view>

namespace tern::kernels {

// The instruction-set variants of the CPU kernels, slowest first. Each later one needs the
// features of the one before it.
enum class Isa {
  scalar,       // baseline x86-64; the reference
  avx2,         // AVX2 + FMA + F16C
  avx512,       // AVX-512 F/BW/VL/DQ
  avx512_vnni,  // AVX-512 plus VNNI (vpdpbusd) for int8 dot products
};

std::string_view isa_name(Isa isa);

// Whether this CPU can run the variant.
bool is_isa_supported(Isa isa);

// The variant kernels use: the fastest supported one, unless overridden.
Isa active_isa();

// Forces a variant (tests and benchmarks compare them); nullopt restores the default. Not
// thread-safe against kernels running at the same time. Returns false, changing nothing, when
// the CPU lacks the variant.
bool set_isa_override(std::optional<Isa> isa);

}  // namespace tern::kernels
