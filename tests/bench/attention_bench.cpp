// Decode attention throughput: one query token against a paged f16 KV cache, every KV head of
// one layer, per instruction-set variant.
//
//   attention_bench [heads=16] [kv_heads=4] [head_dim=64] [contexts=16,48,128,512] [variant]
//
// The cache is small enough to stay in L2, so the figures are the kernel's arithmetic, not
// memory: best of 2000 calls, as microseconds per layer and nanoseconds per (query head, key).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_features.h"

namespace {

using namespace tern::kernels;
using AttentionFunction = decltype(&paged_attention_scalar);

std::vector<int> parse_list(const char* text) {
  std::vector<int> values;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    values.push_back(std::atoi(item.c_str()));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  const int heads = argc > 1 ? std::atoi(argv[1]) : 16;
  const int kv_heads = argc > 2 ? std::atoi(argv[2]) : 4;
  const int head_dim = argc > 3 ? std::atoi(argv[3]) : 64;
  const std::vector<int> contexts = parse_list(argc > 4 ? argv[4] : "16,48,128,512");
  const std::string only = argc > 5 ? argv[5] : "";  // scalar, avx2 or avx512: that one alone
  if (heads < 1 || kv_heads < 1 || heads % kv_heads != 0 || head_dim < 1 || contexts.empty()) {
    std::fprintf(stderr, "usage: attention_bench [heads] [kv_heads] [head_dim] [contexts]\n");
    return 1;
  }
  std::vector<std::pair<const char*, AttentionFunction>> variants{
      {"scalar", paged_attention_scalar}};
  const CpuFeatures& features = cpu_features();
  if (features.avx2 && features.fma && features.f16c) {
    variants.emplace_back("avx2", paged_attention_avx2);
  }
  if (features.has_avx512()) variants.emplace_back("avx512", paged_attention_avx512);

  constexpr int kBlockSize = 16;
  for (const int context : contexts) {
    if (context < 1) continue;
    const KvCacheLayout layout{KvType::f16, kBlockSize, kv_heads, head_dim};
    const int blocks = (context + kBlockSize - 1) / kBlockSize;
    const auto elements = static_cast<std::size_t>(blocks) * kv_heads * kBlockSize * head_dim;
    std::vector<std::uint16_t> keys(elements), values(elements);
    std::mt19937 rng(1);
    // f16 values in [0.125, 0.25): finite, and no subnormals to slow any variant down.
    for (auto& k : keys) k = static_cast<std::uint16_t>(0x3000 + rng() % 0x400);
    for (auto& v : values) v = static_cast<std::uint16_t>(0x3000 + rng() % 0x400);
    std::vector<std::int32_t> table(static_cast<std::size_t>(blocks));
    for (int b = 0; b < blocks; ++b) table[static_cast<std::size_t>(b)] = b;
    std::vector<float> q(static_cast<std::size_t>(heads) * head_dim), out(q.size());
    for (float& x : q) x = static_cast<float>(rng() % 1000) / 1000.0f;
    AttentionScratch scratch(context, head_dim);
    for (const auto& [name, function] : variants) {
      if (!only.empty() && only != name) continue;
      double best = 1e9;
      for (int rep = 0; rep < 2000; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        for (int h = 0; h < kv_heads; ++h) {
          function(q.data(), heads * head_dim, 1, context - 1, heads, h, table.data(), layout,
                   keys.data(), values.data(), head_dim, 0.125f, out.data(), heads * head_dim,
                   scratch);
        }
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::printf(
          "%-7s heads=%d kv_heads=%d head_dim=%d context=%d: %.2f us per layer, %.2f ns "
          "per head and key\n",
          name, heads, kv_heads, head_dim, context, best * 1e6,
          best * 1e9 / (static_cast<double>(heads) * context));
    }
  }
  return 0;
}
