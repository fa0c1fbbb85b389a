#include "kernels/cpu/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TERN_X86 1
#endif

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tern::kernels {
namespace {

#if TERN_X86
struct CpuidRegisters {
  std::uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegisters cpuid(std::uint32_t leaf, std::uint32_t subleaf) {
  CpuidRegisters r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

std::uint64_t xgetbv0() {
  std::uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<std::uint64_t>(edx) << 32) | eax;
}

bool bit(std::uint32_t value, int index) {
  return (value >> index) & 1u;
}

// Linux keeps AMX tile data disabled per process until it is requested.
bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  const std::uint32_t max_leaf = cpuid(0, 0).eax;
  if (max_leaf < 1) return f;
  const CpuidRegisters leaf1 = cpuid(1, 0);
  f.sse42 = bit(leaf1.ecx, 20);
  const bool osxsave = bit(leaf1.ecx, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;          // XMM and YMM state
  const bool os_avx512 = (xcr0 & 0xE6) == 0xE6;     // plus opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  f.avx = os_avx && bit(leaf1.ecx, 28);
  f.fma = f.avx && bit(leaf1.ecx, 12);
  f.f16c = f.avx && bit(leaf1.ecx, 29);
  if (max_leaf >= 7) {
    const CpuidRegisters leaf7 = cpuid(7, 0);
    f.avx2 = f.avx && bit(leaf7.ebx, 5);
    f.avx512f = os_avx512 && bit(leaf7.ebx, 16);
    f.avx512bw = f.avx512f && bit(leaf7.ebx, 30);
    f.avx512vl = f.avx512f && bit(leaf7.ebx, 31);
    f.avx512_vnni = f.avx512f && bit(leaf7.ecx, 11);
    f.amx_bf16 = os_amx && bit(leaf7.edx, 22);
    f.amx_tile = os_amx && bit(leaf7.edx, 24);
    f.amx_int8 = os_amx && bit(leaf7.edx, 25);
    if (leaf7.eax >= 1) {
      const CpuidRegisters leaf7_1 = cpuid(7, 1);
      f.avx_vnni = f.avx && bit(leaf7_1.eax, 4);
      f.avx512_bf16 = f.avx512f && bit(leaf7_1.eax, 5);
    }
  }
  if (f.amx_tile && !request_amx_permission()) {
    f.amx_tile = f.amx_int8 = f.amx_bf16 = false;
  }
  return f;
}
#else
CpuFeatures detect() {
  return {};
}
#endif

const char* yes_no(bool value) {
  return value ? "yes" : "no";
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string describe_cpu_features(const CpuFeatures& f) {
  std::string line;
  line += "AVX2=";
  line += yes_no(f.avx2 && f.fma);
  line += " AVX-512=";
  line += yes_no(f.has_avx512());
  line += " AVX512-VNNI=";
  line += yes_no(f.avx512_vnni);
  line += " AVX512-BF16=";
  line += yes_no(f.avx512_bf16);
  line += " AMX=";
  line += yes_no(f.has_amx());
  return line;
}

}  // namespace tern::kernels
