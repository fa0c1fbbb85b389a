// The row-wise kernels of a step: RMSNorm (plain and with the residual add), RoPE on the queries,
// and the logits reductions device-side sampling runs over the vocabulary (top-k, argmax, the
// row sums).

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/rope.h"
#include "kernels/cuda/logit_row_sums.h"
#include "kernels/cuda/logits_select.h"
#include "kernels/cuda/rms_norm.h"
#include "kernels/cuda/rope.h"
#include "tests/bench/cuda_kernel_bench_cases.h"

namespace tern::cuda_bench {
namespace {

constexpr float kEps = 1e-5f;
constexpr int kTopK = 64;  // the candidates the CUDA backend asks for (kernels::cuda::kMaxTopK)

// A buffer of `count` T (uninitialised), or false with `error` set.
template <class T>
bool allocate(Prepared& prepared, std::size_t count, const char* what, T*& out,
              std::string& error) {
  DeviceBuffer& buffer = prepared.buffers.emplace_back(count * sizeof(T), what);
  if (!buffer.ok()) {
    error = buffer.error();
    return false;
  }
  out = buffer.as<T>();
  return true;
}

// `count` random floats, or false with `error` set.
bool random_floats_on_device(Prepared& prepared, std::size_t count, const char* what, unsigned seed,
                             const float*& out, std::string& error) {
  if (!random_float_buffer(prepared, count, what, seed, error)) return false;
  out = prepared.buffers.back().as<float>();
  return true;
}

Case rms_norm_case(const ModelShape& m, int tokens, bool residual) {
  Case c;
  c.info.kernel = "rms_norm";
  c.info.name = residual ? "residual" : "plain";
  c.info.format = "f32";
  c.info.shape = std::to_string(tokens) + "x" + std::to_string(m.hidden);
  c.info.params = {{"tokens", tokens}, {"cols", m.hidden}};
  const double row_bytes = static_cast<double>(tokens) * m.hidden * sizeof(float);
  // plain: x read, y written; residual: residual read and written, delta read, y written.
  c.info.bytes = (residual ? 4 : 2) * row_bytes + m.hidden * sizeof(float);
  c.instance_bytes = c.info.bytes;
  c.prepare = [m, tokens, residual](int instances, Prepared& prepared, std::string& error) {
    const std::size_t count = static_cast<std::size_t>(tokens) * m.hidden;
    const float* x = nullptr;
    const float* weight = nullptr;
    const float* delta = nullptr;
    float* y = nullptr;
    if (!random_floats_on_device(prepared, count * instances, "the rows", 31, x, error) ||
        !random_floats_on_device(prepared, m.hidden, "the norm weight", 37, weight, error) ||
        !random_floats_on_device(prepared, count * instances, "the deltas", 41, delta, error) ||
        !allocate(prepared, count * instances, "the outputs", y, error)) {
      return false;
    }
    prepared.launch = [=](int instance, cudaStream_t stream) {
      const std::size_t at = static_cast<std::size_t>(instance) * count;
      // The residual's values grow by a delta a launch, which stays far from overflow.
      return residual ? kernels::cuda::launch_rms_norm_residual(const_cast<float*>(x) + at,
                                                                delta + at, weight, y + at, tokens,
                                                                m.hidden, kEps, stream)
                      : kernels::cuda::launch_rms_norm(x + at, weight, y + at, tokens, m.hidden,
                                                       kEps, stream);
    };
    return true;
  };
  return c;
}

// Llama 3's RoPE (interleaved pairs, theta 500000, its frequency scaling) on the queries.
Case rope_case(const ModelShape& m, int tokens) {
  Case c;
  c.info.kernel = "rope";
  c.info.name = "queries";
  c.info.format = "f32";
  const int width = m.n_heads * m.head_dim;
  const int pairs = m.head_dim / 2;
  c.info.shape = std::to_string(tokens) + "x" + std::to_string(width);
  c.info.params = {{"tokens", tokens}, {"heads", m.n_heads}, {"head_dim", m.head_dim}};
  c.info.bytes = 2.0 * tokens * width * sizeof(float) +
                 static_cast<double>(tokens) * sizeof(std::int32_t) + pairs * sizeof(float);
  c.instance_bytes = c.info.bytes;
  c.prepare = [m, tokens, width, pairs](int instances, Prepared& prepared, std::string& error) {
    const std::size_t count = static_cast<std::size_t>(tokens) * width;
    kernels::RopeScaling scaling;
    scaling.type = kernels::RopeScaling::Type::llama3;
    scaling.factor = 8;
    const std::vector<float> frequencies =
        kernels::rope_inverse_frequencies(m.head_dim, 500000.0f, scaling);
    std::mt19937 random(43);
    std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
    for (std::int32_t& p : positions) p = static_cast<std::int32_t>(random() % 8192);
    const float* x = nullptr;
    float* inverse = nullptr;
    std::int32_t* at = nullptr;
    if (!random_floats_on_device(prepared, count * instances, "the queries", 47, x, error) ||
        !allocate(prepared, frequencies.size(), "the frequencies", inverse, error) ||
        !upload(inverse, frequencies.data(), frequencies.size() * sizeof(float), error) ||
        !allocate(prepared, positions.size(), "the positions", at, error) ||
        !upload(at, positions.data(), positions.size() * sizeof(std::int32_t), error)) {
      return false;
    }
    prepared.launch = [=](int instance, cudaStream_t stream) {
      float* rows = const_cast<float*>(x) + static_cast<std::size_t>(instance) * count;
      return kernels::cuda::launch_rope(rows, tokens, width, m.n_heads, m.head_dim, at, inverse,
                                        pairs, kernels::RopeLayout::interleaved, stream);
    };
    return true;
  };
  return c;
}

enum class LogitsKernel { top_k, argmax, row_sums };

Case logits_case(const ModelShape& m, int rows, LogitsKernel kernel) {
  Case c;
  c.info.kernel = kernel == LogitsKernel::top_k    ? "top_k"
                  : kernel == LogitsKernel::argmax ? "argmax"
                                                   : "logit_row_sums";
  c.info.name = "vocabulary";
  c.info.format = "f32";
  c.info.shape = std::to_string(rows) + "x" + std::to_string(m.vocab);
  c.info.params = {{"tokens", rows}, {"vocab", m.vocab}};
  if (kernel == LogitsKernel::top_k) c.info.params.push_back({"k", kTopK});
  const double per_row_out = kernel == LogitsKernel::top_k    ? kTopK * 8.0
                             : kernel == LogitsKernel::argmax ? 4.0
                                                              : 4.0 + 4.0 + 8.0;
  c.info.bytes =
      static_cast<double>(rows) * (static_cast<double>(m.vocab) * sizeof(float) + per_row_out);
  c.instance_bytes = c.info.bytes;
  c.prepare = [m, rows, kernel](int instances, Prepared& prepared, std::string& error) {
    const std::size_t count = static_cast<std::size_t>(rows) * m.vocab;
    const auto slots = static_cast<std::size_t>(rows) * kTopK;
    const float* logits = nullptr;
    float* values = nullptr;
    std::int32_t* indices = nullptr;
    double* mass = nullptr;
    float* temperature = nullptr;
    const std::vector<float> ones(static_cast<std::size_t>(rows), 1.0f);
    if (!random_floats_on_device(prepared, count * instances, "the logits", 53, logits, error) ||
        !allocate(prepared, slots, "the values", values, error) ||
        !allocate(prepared, slots, "the indices", indices, error) ||
        !allocate(prepared, static_cast<std::size_t>(rows), "the masses", mass, error) ||
        !allocate(prepared, ones.size(), "the inverse temperatures", temperature, error) ||
        !upload(temperature, ones.data(), ones.size() * sizeof(float), error)) {
      return false;
    }
    prepared.launch = [=](int instance, cudaStream_t stream) {
      const float* row = logits + static_cast<std::size_t>(instance) * count;
      switch (kernel) {
        case LogitsKernel::top_k:
          return kernels::cuda::launch_top_k(row, rows, m.vocab, kTopK, values, indices, stream);
        case LogitsKernel::argmax:
          return kernels::cuda::launch_argmax(row, rows, m.vocab, indices, stream);
        case LogitsKernel::row_sums:
          break;
      }
      return kernels::cuda::launch_logit_row_sums(row, rows, m.vocab, temperature, values, mass,
                                                  stream);
    };
    return true;
  };
  return c;
}

}  // namespace

std::vector<Case> row_cases(const Sweep& sweep) {
  std::vector<Case> cases;
  for (const bool residual : {false, true}) {
    for (const int tokens : sweep.row_tokens) {
      cases.push_back(rms_norm_case(sweep.model, tokens, residual));
    }
  }
  for (const int tokens : sweep.row_tokens) cases.push_back(rope_case(sweep.model, tokens));
  for (const LogitsKernel kernel :
       {LogitsKernel::top_k, LogitsKernel::argmax, LogitsKernel::row_sums}) {
    for (const int rows : sweep.logit_rows) cases.push_back(logits_case(sweep.model, rows, kernel));
  }
  return cases;
}

}  // namespace tern::cuda_bench
