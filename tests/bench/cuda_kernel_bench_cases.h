#pragma once

// The cases cuda_kernel_bench measures: each a record's description (CaseInfo) and a way to set
// it up on the device. Setting up allocates the case's buffers (inputs copied `instances` times
// where the case rotates over copies) and fills them with random values; the buffers live as long
// as the Prepared that holds them.

#include <functional>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "tests/bench/cuda_kernel_bench_device.h"
#include "tests/bench/cuda_kernel_bench_record.h"
#include "tests/bench/cuda_kernel_bench_timing.h"

namespace tern::cuda_bench {

using kernels::TensorType;

// The model the shapes come from.
struct ModelShape {
  const char* name;
  int hidden;
  int n_heads;
  int n_kv_heads;
  int head_dim;
  int ffn;
  int vocab;
};

// Llama-3-8B, and the small stand-in --tiny runs on the emulator.
inline constexpr ModelShape kLlama3_8B{"llama-3-8b", 4096, 32, 8, 128, 14336, 128256};
inline constexpr ModelShape kTinyShape{"tiny", 256, 4, 2, 64, 256, 512};

// The token counts and sizes each kernel is measured at.
struct Sweep {
  ModelShape model;
  std::vector<int> gemv_tokens;
  std::vector<int> gemm_tokens;
  std::vector<int> decode_contexts;
  std::vector<int> decode_batches;
  std::vector<int> prefill_tokens;
  std::vector<int> row_tokens;  // RMSNorm, RoPE, KV store, activation quantization
  std::vector<int> logit_rows;  // top-k, argmax, row sums
  std::vector<TensorType> formats;
};
Sweep full_sweep();
Sweep tiny_sweep();

struct Prepared {
  std::vector<DeviceBuffer> buffers;  // what the launches read and write
  Launch launch;
};

struct Case {
  CaseInfo info;
  // Bytes one instance reads and writes, for the rotation over copies past the L2 cache; 0 for
  // a case that is not memory-bound, which runs on one instance.
  double instance_bytes = 0;
  // Allocates and fills `instances` copies and sets `prepared.launch`; false with `error` set
  // when that fails.
  std::function<bool(int instances, Prepared& prepared, std::string& error)> prepare;
};

// The kernel groups, in the order they run; their names are what --only takes.
std::vector<Case> matmul_cases(const Sweep& sweep);     // gemv, gemm, quantize_q8_1
std::vector<Case> attention_cases(const Sweep& sweep);  // attention_decode, _prefill, kv_store
std::vector<Case> row_cases(const Sweep& sweep);        // rms_norm, rope, top_k, argmax, ...

// Helpers the case files share.
const char* format_name(TensorType type);
// Random normal floats (mean 0, deviation 1) from `seed`, the same for the same arguments.
std::vector<float> random_floats(std::size_t count, unsigned seed);
// A device buffer of `count` random floats; false with `error` set when that fails.
bool random_float_buffer(Prepared& prepared, std::size_t count, const char* what, unsigned seed,
                         std::string& error);

}  // namespace tern::cuda_bench
