#include "kernels/cpu/isa.h"

#include <atomic>

#include "kernels/cpu/cpu_features.h"

namespace tern::kernels {
namespace {

Isa best_isa() {
  for (Isa isa : {Isa::avx512_vnni, Isa::avx512, Isa::avx2}) {
    if (is_isa_supported(isa)) return isa;
  }
  return Isa::scalar;
}

std::atomic<int> override_isa{-1};

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    case Isa::avx512_vnni:
      return "avx512_vnni";
  }
  return "unknown";
}

bool is_isa_supported(Isa isa) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  // Every CPU with AVX-512 BW and VL also has DQ, which the AVX-512 files are compiled for.
  const bool avx512 = avx2 && f.has_avx512();
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::avx2:
      return avx2;
    case Isa::avx512:
      return avx512;
    case Isa::avx512_vnni:
      return avx512 && f.avx512_vnni;
  }
  return false;
}

Isa active_isa() {
  static const Isa best = best_isa();
  const int forced = override_isa.load(std::memory_order_relaxed);
  return forced >= 0 ? static_cast<Isa>(forced) : best;
}

bool set_isa_override(std::optional<Isa> isa) {
  if (isa && !is_isa_supported(*isa)) return false;
  override_isa.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
  return true;
}

}  // namespace tern::kernels
