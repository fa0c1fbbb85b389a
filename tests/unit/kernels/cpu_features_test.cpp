#include "kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>

namespace tern::kernels {
namespace {

TEST(CpuFeatures, ImpliedFeaturesAreConsistent) {
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(!f.avx2 || f.avx);
  EXPECT_TRUE(!f.fma || f.avx);
  EXPECT_TRUE(!(f.avx512bw || f.avx512vl || f.avx512_vnni || f.avx512_bf16) || f.avx512f);
  EXPECT_TRUE(!(f.amx_int8 || f.amx_bf16) || f.amx_tile);
}

TEST(CpuFeatures, CachedInstanceIsStable) {
  EXPECT_EQ(&cpu_features(), &cpu_features());
}

TEST(CpuFeatures, DescriptionNamesEveryReportedExtension) {
  CpuFeatures none;
  EXPECT_EQ(describe_cpu_features(none), "AVX2=no AVX-512=no AVX512-VNNI=no AVX512-BF16=no AMX=no");
  CpuFeatures all;
  all.avx = all.avx2 = all.fma = true;
  all.avx512f = all.avx512bw = all.avx512vl = all.avx512_vnni = all.avx512_bf16 = true;
  all.amx_tile = all.amx_int8 = true;
  EXPECT_EQ(describe_cpu_features(all),
            "AVX2=yes AVX-512=yes AVX512-VNNI=yes AVX512-BF16=yes AMX=yes");
}

}  // namespace
}  // namespace tern::kernels
