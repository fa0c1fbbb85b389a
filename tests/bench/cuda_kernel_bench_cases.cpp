#include <algorithm>
#include <map>
#include <random>
#include <span>

#include "tests/bench/cuda_kernel_bench_cases.h"

namespace tern::cuda_bench {

namespace {

// Every weight format the CUDA kernels read (kernels/cuda/weight_formats.h).
const std::vector<TensorType> kAllFormats = {TensorType::f32,  TensorType::f16,  TensorType::bf16,
                                             TensorType::q8_0, TensorType::q4_0, TensorType::q4_k,
                                             TensorType::q6_k};

// Random inputs are a pattern of at most this many floats repeated: generating gigabytes of
// random numbers on the host would cost more than the measurements.
constexpr std::size_t kPatternFloats = std::size_t{1} << 20;

}  // namespace

Sweep full_sweep() {
  Sweep sweep{kLlama3_8B};
  sweep.gemv_tokens = {1, 4, 16, 64};
  // The CUDA backend takes the GEMM above 8 tokens, so batched decode steps of 16 and 64 are here.
  sweep.gemm_tokens = {16, 64, 512, 4096};
  sweep.decode_contexts = {1024, 8192};
  sweep.decode_batches = {1, 16};
  sweep.prefill_tokens = {4096};
  sweep.row_tokens = {1, 64, 512};
  sweep.logit_rows = {1, 64};
  sweep.formats = kAllFormats;
  return sweep;
}

Sweep tiny_sweep() {
  Sweep sweep{kTinyShape};
  sweep.gemv_tokens = {1, 4};
  sweep.gemm_tokens = {9};  // the GEMM's smallest batch in the CUDA backend, a ragged tile
  sweep.decode_contexts = {64, 300};  // 300: two partitions, so the merge kernel runs
  sweep.decode_batches = {1, 2};
  sweep.prefill_tokens = {32};
  sweep.row_tokens = {1, 8};
  sweep.logit_rows = {1, 2};
  sweep.formats = kAllFormats;
  return sweep;
}

const char* format_name(TensorType type) {
  switch (type) {
    case TensorType::f32:
      return "f32";
    case TensorType::f16:
      return "f16";
    case TensorType::bf16:
      return "bf16";
    case TensorType::q8_0:
      return "q8_0";
    case TensorType::q4_0:
      return "q4_0";
    case TensorType::q4_k:
      return "q4_k";
    case TensorType::q6_k:
      return "q6_k";
    default:
      return "other";
  }
}

std::vector<float> random_floats(std::size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(random);
  return values;
}

bool random_float_buffer(Prepared& prepared, std::size_t count, const char* what, unsigned seed,
                         std::string& error) {
  DeviceBuffer& buffer = prepared.buffers.emplace_back(count * sizeof(float), what);
  if (!buffer.ok()) {
    error = buffer.error();
    return false;
  }
  // One pattern per seed, made once: the cases' setups would otherwise spend seconds on it.
  static std::map<unsigned, std::vector<float>> patterns;
  std::vector<float>& pattern = patterns[seed];
  if (pattern.empty()) pattern = random_floats(kPatternFloats, seed);
  const std::span<const float> used(pattern.data(), std::min(count, kPatternFloats));
  return fill_repeating(buffer.data(), buffer.bytes(), std::as_bytes(used), error);
}

}  // namespace tern::cuda_bench
