// The matrix kernels: the decode GEMV and the prefill GEMM per weight format on the model's
// matrices, and the activation quantization the integer formats read.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/quantize_q8_1.h"
#include "kernels/cuda/round_activations.h"
#include "tests/bench/cuda_kernel_bench_cases.h"

namespace tern::cuda_bench {
namespace {

using kernels::cuda::BlockQ8_1;
using kernels::cuda::DeviceActivations;
using kernels::cuda::DeviceWeights;
using kernels::cuda::reads_q8_1_activations;
using kernels::cuda::weight_row_bytes;

// A weight matrix of the model: rows = output features, cols = input features.
struct Matrix {
  const char* name;
  int rows;
  int cols;
};

// attn_q also stands for attn_output (the same shape), attn_k for attn_v, ffn_up for ffn_gate;
// `output` is the logits' matrix, over the vocabulary.
std::vector<Matrix> model_matrices(const ModelShape& m, bool with_output) {
  std::vector<Matrix> matrices = {{"attn_q", m.n_heads * m.head_dim, m.hidden},
                                  {"attn_k", m.n_kv_heads * m.head_dim, m.hidden},
                                  {"ffn_up", m.ffn, m.hidden},
                                  {"ffn_down", m.hidden, m.ffn}};
  if (with_output) matrices.push_back({"output", m.vocab, m.hidden});
  return matrices;
}

// Copies of a matrix start this many bytes apart at least, as separate allocations would.
constexpr std::size_t kCopyAlignment = 256;
// Bytes of the quantized rows that are repeated to fill a matrix.
constexpr std::size_t kWeightPatternBytes = std::size_t{2} << 20;

std::size_t round_up(std::size_t bytes, std::size_t to) {
  return (bytes + to - 1) / to * to;
}

// Whole rows of random normal weights quantized to `type` on the host (the CPU's quantize_row,
// so block scales are sane), made once per format and width.
const std::vector<std::byte>& weight_pattern(TensorType type, int cols, int max_rows) {
  static std::map<std::pair<TensorType, int>, std::vector<std::byte>> patterns;
  std::vector<std::byte>& pattern = patterns[{type, cols}];
  const auto row_bytes = static_cast<std::size_t>(weight_row_bytes(type, cols));
  const std::size_t rows = std::clamp<std::size_t>(kWeightPatternBytes / row_bytes, 1,
                                                   static_cast<std::size_t>(max_rows));
  if (pattern.size() >= rows * row_bytes) return pattern;
  pattern.resize(rows * row_bytes);
  const std::vector<float> values = random_floats(rows * static_cast<std::size_t>(cols), 7u + cols);
  for (std::size_t r = 0; r < rows; ++r) {
    kernels::quantize_row(type, values.data() + r * static_cast<std::size_t>(cols),
                          pattern.data() + r * row_bytes, cols);
  }
  return pattern;
}

// `instances` copies of a random rows x cols matrix in `type`, `stride` bytes apart.
bool weight_copies(Prepared& prepared, TensorType type, const Matrix& m, int instances,
                   std::size_t& stride, const std::byte*& base, std::string& error) {
  const auto bytes =
      static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(weight_row_bytes(type, m.cols));
  stride = round_up(bytes, kCopyAlignment);
  DeviceBuffer& buffer = prepared.buffers.emplace_back(stride * instances, "the weights");
  if (!buffer.ok()) {
    error = buffer.error();
    return false;
  }
  auto* first = buffer.as<std::byte>();
  if (!fill_repeating(first, bytes, weight_pattern(type, m.cols, m.rows), error)) return false;
  for (int i = 1; i < instances; ++i) {
    if (!copy_on_device(first + i * stride, first, bytes, error)) return false;
  }
  base = first;
  return true;
}

// Whether the format's kernels read 16-bit activations (the bench's copies are 256-byte aligned).
bool reads_rounded_activations(TensorType type, int cols) {
  return kernels::cuda::uses_float_mma(type, cols, 0);
}

// The activations a format's kernels read: f32, Q8_1 blocks quantized on the device, or the
// values rounded to BF16 or F16 on the device.
bool activations(Prepared& prepared, TensorType type, int tokens, int cols, DeviceActivations& x,
                 std::string& error) {
  const std::size_t count = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(cols);
  if (!random_float_buffer(prepared, count, "the activations", 11u + cols, error)) return false;
  x.f32 = prepared.buffers.back().as<float>();
  if (reads_rounded_activations(type, cols)) {
    DeviceBuffer& rounded =
        prepared.buffers.emplace_back(count * sizeof(std::uint16_t), "the rounded activations");
    if (!rounded.ok()) {
      error = rounded.error();
      return false;
    }
    x.rounded = rounded.as<std::uint16_t>();
    x.rounded_type = type;
    const cudaError_t status = kernels::cuda::launch_round_activations(
        x.f32, tokens, cols, type, rounded.as<std::uint16_t>(), nullptr);
    if (status != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
      error = "rounding the activations: " + describe_error(status);
      return false;
    }
    return true;
  }
  if (!reads_q8_1_activations(type)) return true;
  DeviceBuffer& blocks =
      prepared.buffers.emplace_back(count / 32 * sizeof(BlockQ8_1), "the Q8_1 activations");
  if (!blocks.ok()) {
    error = blocks.error();
    return false;
  }
  x.q8_1 = blocks.as<BlockQ8_1>();
  const cudaError_t status = kernels::cuda::launch_quantize_activations_q8_1(
      x.f32, tokens, cols, blocks.as<BlockQ8_1>(), nullptr);
  if (status != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    error = "quantizing the activations: " + describe_error(status);
    return false;
  }
  return true;
}

double activation_bytes(TensorType type, int tokens, int cols) {
  const double count = static_cast<double>(tokens) * cols;
  if (reads_rounded_activations(type, cols)) return count * sizeof(std::uint16_t);
  return reads_q8_1_activations(type) ? count / 32 * sizeof(BlockQ8_1) : count * sizeof(float);
}

Case matmul_case(const char* kernel, TensorType type, const Matrix& m, int tokens) {
  const bool gemv = std::string_view(kernel) == "gemv";
  Case c;
  c.info.kernel = kernel;
  c.info.name = m.name;
  c.info.format = format_name(type);
  c.info.shape = std::to_string(m.rows) + "x" + std::to_string(m.cols);
  c.info.params = {{"tokens", tokens}, {"rows", m.rows}, {"cols", m.cols}};
  const double weight_bytes = static_cast<double>(m.rows) * weight_row_bytes(type, m.cols);
  c.info.bytes = weight_bytes + activation_bytes(type, tokens, m.cols) +
                 static_cast<double>(tokens) * m.rows * sizeof(float);
  c.info.flops = 2.0 * m.rows * m.cols * tokens;
  // Small batches stream the weights; large prefill batches are compute-bound and run on one copy.
  c.instance_bytes = tokens <= 64 ? weight_bytes : 0;
  c.prepare = [type, m, tokens, gemv](int instances, Prepared& prepared, std::string& error) {
    std::size_t stride = 0;
    const std::byte* base = nullptr;
    DeviceActivations x;
    if (!weight_copies(prepared, type, m, instances, stride, base, error) ||
        !activations(prepared, type, tokens, m.cols, x, error)) {
      return false;
    }
    DeviceBuffer& y = prepared.buffers.emplace_back(
        static_cast<std::size_t>(tokens) * static_cast<std::size_t>(m.rows) * sizeof(float),
        "the outputs");
    if (!y.ok()) {
      error = y.error();
      return false;
    }
    float* out = y.as<float>();
    prepared.launch = [=](int instance, cudaStream_t stream) {
      const DeviceWeights w{type, m.rows, m.cols,
                            base + static_cast<std::size_t>(instance) * stride};
      return gemv ? kernels::cuda::launch_gemv(w, x, tokens, out, stream)
                  : kernels::cuda::launch_gemm(w, x, tokens, out, stream);
    };
    return true;
  };
  return c;
}

Case quantize_case(int tokens, int cols) {
  Case c;
  c.info.kernel = "quantize_q8_1";
  c.info.name = "activations";
  c.info.format = "f32";
  c.info.shape = std::to_string(tokens) + "x" + std::to_string(cols);
  c.info.params = {{"tokens", tokens}, {"cols", cols}};
  const std::size_t count = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(cols);
  c.info.bytes = static_cast<double>(count) * sizeof(float) +
                 static_cast<double>(count / 32) * sizeof(BlockQ8_1);
  c.instance_bytes = c.info.bytes;
  c.prepare = [tokens, cols, count](int instances, Prepared& prepared, std::string& error) {
    if (!random_float_buffer(prepared, count * instances, "the activations", 13, error)) {
      return false;
    }
    const float* x = prepared.buffers.back().as<float>();
    DeviceBuffer& blocks = prepared.buffers.emplace_back(count / 32 * sizeof(BlockQ8_1) * instances,
                                                         "the Q8_1 blocks");
    if (!blocks.ok()) {
      error = blocks.error();
      return false;
    }
    BlockQ8_1* out = blocks.as<BlockQ8_1>();
    prepared.launch = [=](int instance, cudaStream_t stream) {
      const auto i = static_cast<std::size_t>(instance);
      return kernels::cuda::launch_quantize_activations_q8_1(x + i * count, tokens, cols,
                                                             out + i * (count / 32), stream);
    };
    return true;
  };
  return c;
}

}  // namespace

std::vector<Case> matmul_cases(const Sweep& sweep) {
  std::vector<Case> cases;
  for (const TensorType type : sweep.formats) {
    for (const Matrix& m : model_matrices(sweep.model, true)) {
      for (const int tokens : sweep.gemv_tokens)
        cases.push_back(matmul_case("gemv", type, m, tokens));
    }
  }
  for (const TensorType type : sweep.formats) {
    for (const Matrix& m : model_matrices(sweep.model, false)) {
      for (const int tokens : sweep.gemm_tokens)
        cases.push_back(matmul_case("gemm", type, m, tokens));
    }
  }
  for (const int tokens : sweep.row_tokens)
    cases.push_back(quantize_case(tokens, sweep.model.hidden));
  return cases;
}

}  // namespace tern::cuda_bench
