#pragma once

#include <string>

namespace tern::kernels {

// Instruction-set extensions the running CPU and OS both support, detected once with CPUID and
// XGETBV. Kernels dispatch on these at run time, so one binary runs on any x86-64 machine.
struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx_vnni = false;
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;

  // AVX-512 as the kernels use it: foundation plus byte/word and vector-length extensions.
  bool has_avx512() const { return avx512f && avx512bw && avx512vl; }
  bool has_amx() const { return amx_tile && (amx_int8 || amx_bf16); }
};

// The features of this machine. Cached after the first call; thread-safe.
const CpuFeatures& cpu_features();

// One line, e.g. "AVX2=yes FMA=yes AVX-512=yes AVX512-VNNI=yes AMX=no".
std::string describe_cpu_features(const CpuFeatures& features);

}  // namespace tern::kernels
