// Paged attention over an F16 KV cache of 16-position blocks (the engine's defaults): decode at
// several contexts and batches, one long prefill, and the KV store that fills the cache.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/kv_store.h"
#include "kernels/cuda/paged_attention.h"
#include "tests/bench/cuda_kernel_bench_cases.h"

namespace tern::cuda_bench {
namespace {

using kernels::KvCacheLayout;
using kernels::KvType;
using kernels::cuda::PagedAttentionArgs;

constexpr int kBlockSize = 16;
constexpr std::size_t kHalfBytes = 2;

KvCacheLayout cache_layout(const ModelShape& m) {
  return {KvType::f16, kBlockSize, m.n_kv_heads, m.head_dim};
}

int blocks_for(int positions) {
  return (positions + kBlockSize - 1) / kBlockSize;
}

// Bytes of K and V for `positions` positions of one sequence.
double kv_bytes(const ModelShape& m, double positions) {
  return 2.0 * positions * m.n_kv_heads * m.head_dim * kHalfBytes;
}

// A buffer for `what`, or false with `error` set.
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

template <class T>
bool upload_vector(Prepared& prepared, const std::vector<T>& values, const char* what, T*& out,
                   std::string& error) {
  return allocate(prepared, values.size(), what, out, error) &&
         upload(out, values.data(), values.size() * sizeof(T), error);
}

// K and V pools of `blocks` blocks each, filled with random halves.
bool kv_pools(Prepared& prepared, const KvCacheLayout& layout, std::size_t blocks, void*& k_pool,
              void*& v_pool, std::string& error) {
  const std::size_t bytes = blocks * kernels::kv_block_bytes(layout);
  static const std::vector<std::uint16_t> halves = [] {
    const std::vector<float> values = random_floats(std::size_t{1} << 20, 17);
    std::vector<std::uint16_t> converted(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) converted[i] = kernels::f32_to_f16(values[i]);
    return converted;
  }();
  const std::span<const std::uint16_t> pattern(halves.data(),
                                               std::min(bytes / kHalfBytes, halves.size()));
  std::byte* k = nullptr;
  std::byte* v = nullptr;
  if (!allocate(prepared, bytes, "the K pool", k, error) ||
      !allocate(prepared, bytes, "the V pool", v, error) ||
      !fill_repeating(k, bytes, std::as_bytes(pattern), error) ||
      !fill_repeating(v, bytes, std::as_bytes(pattern), error)) {
    return false;
  }
  k_pool = k;
  v_pool = v;
  return true;
}

void attention_params(CaseInfo& info, const ModelShape& m, int tokens) {
  info.format = "f16";
  info.params = {{"tokens", tokens},
                 {"heads", m.n_heads},
                 {"kv_heads", m.n_kv_heads},
                 {"head_dim", m.head_dim},
                 {"block_size", kBlockSize}};
}

// One query row per sequence, `batch` sequences of `context` positions each; instance i reads its
// own blocks of the pools.
Case decode_case(const ModelShape& m, int context, int batch) {
  Case c;
  c.info.kernel = "attention_decode";
  c.info.name = "paged";
  c.info.shape = std::to_string(batch) + "x" + std::to_string(context);
  attention_params(c.info, m, batch);
  c.info.params.push_back({"batch", batch});
  c.info.params.push_back({"context", context});
  const double query_bytes = static_cast<double>(batch) * m.n_heads * m.head_dim * sizeof(float);
  c.info.bytes = batch * kv_bytes(m, context) + 2 * query_bytes;
  c.info.flops = 4.0 * batch * m.n_heads * m.head_dim * context;
  c.instance_bytes = c.info.bytes;
  c.prepare = [m, context, batch](int instances, Prepared& prepared, std::string& error) {
    const KvCacheLayout layout = cache_layout(m);
    const int per_sequence = blocks_for(context);
    const std::size_t per_instance = static_cast<std::size_t>(batch) * per_sequence;
    std::vector<std::int32_t> tables(per_instance * instances);
    std::iota(tables.begin(), tables.end(), 0);
    const std::size_t rows = static_cast<std::size_t>(batch) * m.n_heads * m.head_dim;
    const std::size_t workspace_bytes = kernels::cuda::paged_attention_decode_workspace_bytes(
        batch, m.n_heads, m.head_dim, context);
    PagedAttentionArgs args;
    std::int32_t* table = nullptr;
    std::int32_t* lens = nullptr;
    float* out = nullptr;
    float* workspace = nullptr;
    void* k_pool = nullptr;
    void* v_pool = nullptr;
    if (!kv_pools(prepared, layout, tables.size(), k_pool, v_pool, error) ||
        !upload_vector(prepared, tables, "the block tables", table, error) ||
        !upload_vector(prepared, std::vector<std::int32_t>(batch, context), "the context lengths",
                       lens, error) ||
        !random_float_buffer(prepared, rows, "the queries", 19, error)) {
      return false;
    }
    args.q = prepared.buffers.back().as<float>();
    args.k_pool = k_pool;
    args.v_pool = v_pool;
    if (!allocate(prepared, rows, "the outputs", out, error) ||
        !allocate(prepared, std::max<std::size_t>(workspace_bytes / sizeof(float), 1),
                  "the workspace", workspace, error)) {
      return false;
    }
    args.q_stride = static_cast<std::int64_t>(m.n_heads) * m.head_dim;
    args.out = out;
    args.out_stride = args.q_stride;
    args.context_lens = lens;
    args.max_blocks_per_seq = per_sequence;
    args.n_seqs = batch;
    args.layout = layout;
    args.n_heads = m.n_heads;
    args.scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
    prepared.launch = [=](int instance, cudaStream_t stream) {
      PagedAttentionArgs at = args;
      at.block_tables = table + static_cast<std::size_t>(instance) * per_instance;
      return kernels::cuda::launch_paged_attention_decode(at, context, workspace, workspace_bytes,
                                                          stream);
    };
    return true;
  };
  return c;
}

// One sequence's prompt of `tokens` tokens, causal over itself (its keys are in the cache).
Case prefill_case(const ModelShape& m, int tokens) {
  Case c;
  c.info.kernel = "attention_prefill";
  c.info.name = "paged";
  c.info.shape = "1x" + std::to_string(tokens);
  attention_params(c.info, m, tokens);
  c.info.params.push_back({"batch", 1});
  c.info.params.push_back({"context", tokens});
  const double query_bytes = static_cast<double>(tokens) * m.n_heads * m.head_dim * sizeof(float);
  c.info.bytes = kv_bytes(m, tokens) + 2 * query_bytes;
  // Row p attends to p + 1 keys: a dot product and a weighted sum of head_dim each, per head.
  c.info.flops = 4.0 * m.n_heads * m.head_dim * (static_cast<double>(tokens) * (tokens + 1) / 2);
  c.prepare = [m, tokens](int, Prepared& prepared, std::string& error) {
    const KvCacheLayout layout = cache_layout(m);
    std::vector<std::int32_t> tables(static_cast<std::size_t>(blocks_for(tokens)));
    std::iota(tables.begin(), tables.end(), 0);
    const std::size_t rows = static_cast<std::size_t>(tokens) * m.n_heads * m.head_dim;
    PagedAttentionArgs args;
    std::int32_t* table = nullptr;
    std::int32_t* lens = nullptr;
    std::int32_t* starts = nullptr;
    float* out = nullptr;
    void* k_pool = nullptr;
    void* v_pool = nullptr;
    if (!kv_pools(prepared, layout, tables.size(), k_pool, v_pool, error) ||
        !upload_vector(prepared, tables, "the block table", table, error) ||
        !upload_vector(prepared, std::vector<std::int32_t>{tokens}, "the context length", lens,
                       error) ||
        !upload_vector(prepared, std::vector<std::int32_t>{0, tokens}, "the query starts", starts,
                       error) ||
        !random_float_buffer(prepared, rows, "the queries", 23, error)) {
      return false;
    }
    args.q = prepared.buffers.back().as<float>();
    args.k_pool = k_pool;
    args.v_pool = v_pool;
    if (!allocate(prepared, rows, "the outputs", out, error)) return false;
    args.q_stride = static_cast<std::int64_t>(m.n_heads) * m.head_dim;
    args.out = out;
    args.out_stride = args.q_stride;
    args.context_lens = lens;
    args.block_tables = table;
    args.max_blocks_per_seq = static_cast<int>(tables.size());
    args.n_seqs = 1;
    args.layout = layout;
    args.n_heads = m.n_heads;
    args.scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
    prepared.launch = [=](int, cudaStream_t stream) {
      return kernels::cuda::launch_paged_attention_prefill(args, starts, tokens, stream);
    };
    return true;
  };
  return c;
}

// `tokens` rows of K and V (f32) into the F16 pools at consecutive slots.
Case kv_store_case(const ModelShape& m, int tokens) {
  Case c;
  c.info.kernel = "kv_store";
  c.info.name = "k_and_v";
  c.info.format = "f16";
  const int width = m.n_kv_heads * m.head_dim;
  c.info.shape = std::to_string(tokens) + "x" + std::to_string(width);
  c.info.params = {{"tokens", tokens}, {"kv_heads", m.n_kv_heads}, {"head_dim", m.head_dim}};
  c.info.bytes = 2.0 * tokens * width * (sizeof(float) + kHalfBytes) +
                 static_cast<double>(tokens) * sizeof(std::int32_t);
  c.instance_bytes = c.info.bytes;
  c.prepare = [m, tokens, width](int instances, Prepared& prepared, std::string& error) {
    const KvCacheLayout layout = cache_layout(m);
    const std::size_t rows = static_cast<std::size_t>(tokens) * width;
    const std::size_t blocks = static_cast<std::size_t>(blocks_for(tokens)) * instances;
    std::vector<std::int32_t> slots(static_cast<std::size_t>(tokens) * instances);
    for (int i = 0; i < instances; ++i) {
      for (int t = 0; t < tokens; ++t) {
        slots[static_cast<std::size_t>(i) * tokens + t] = i * blocks_for(tokens) * kBlockSize + t;
      }
    }
    void* k_pool = nullptr;
    void* v_pool = nullptr;
    std::int32_t* slot = nullptr;
    if (!kv_pools(prepared, layout, blocks, k_pool, v_pool, error) ||
        !upload_vector(prepared, slots, "the slots", slot, error) ||
        !random_float_buffer(prepared, 2 * rows * instances, "the K and V rows", 29, error)) {
      return false;
    }
    const float* kv = prepared.buffers.back().as<float>();
    prepared.launch = [=](int instance, cudaStream_t stream) {
      const auto i = static_cast<std::size_t>(instance);
      const float* k = kv + 2 * i * rows;
      return kernels::cuda::launch_store_kv(k, width, k + rows, width, tokens, slot + i * tokens,
                                            layout, static_cast<std::int32_t>(blocks), k_pool,
                                            v_pool, stream);
    };
    return true;
  };
  return c;
}

}  // namespace

std::vector<Case> attention_cases(const Sweep& sweep) {
  std::vector<Case> cases;
  for (const int context : sweep.decode_contexts) {
    for (const int batch : sweep.decode_batches) {
      cases.push_back(decode_case(sweep.model, context, batch));
    }
  }
  for (const int tokens : sweep.prefill_tokens) cases.push_back(prefill_case(sweep.model, tokens));
  for (const int tokens : sweep.row_tokens) cases.push_back(kv_store_case(sweep.model, tokens));
  return cases;
}

}  // namespace tern::cuda_bench
