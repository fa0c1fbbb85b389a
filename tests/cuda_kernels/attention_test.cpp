// The paged attention kernels (kernels/cuda/paged_attention_kernel.cuh on CUDA cores for F32
// caches and head dims 24 and 40, attention_mma_kernel.cuh on tensor cores for F16 and BF16 caches
// at head dims 16, 32, 64, 80, 96 and 128) through their launchers, against the CPU kernel
// paged_attention_scalar on the same cache bytes, under every schedule:
// head dims, GQA ratios, block sizes, KV types, contexts from 1 to 4096, batches of 1 to 64; batch
// invariance, prefill rows equal to decode rows bit for bit, chunked prefill equal to one chunk.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cuda/paged_attention.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

using cuda_test::DeviceArray;

// The GPU kernels compute each 256-position partition's softmax on its own and fold the
// partitions, where the CPU carries one softmax over all tiles: the same float32 terms summed in
// another grouping (and, on a GPU, expf within 2 ulp and fused multiply-adds). Outputs are
// weighted means of V values in [-1, 1], so the difference is a few float32 ulps of 1. On the
// emulator a row of at most 256 keys on CUDA cores runs the CPU kernel's exact operation sequence
// and matches it bit for bit. The tensor-core kernel multiplies Q and P as two 16-bit halves each
// (22 bits kept for F16, 16 for BF16) and sums in mma order: about 1e-6 here. The tolerance covers
// both and a real GPU.
constexpr float kTolerance = 2e-5f;

std::vector<float> random_floats(std::size_t n, float range, std::mt19937& random) {
  std::uniform_real_distribution<float> value(-range, range);
  std::vector<float> values(n);
  for (float& v : values) v = value(random);
  return values;
}

// A layer's paged cache on the host, written by the CPU's store_kv, and its copy on the device.
// Every sequence's blocks are a random, non-contiguous choice from the pool (block 0 unused).
struct Cache {
  KvCacheLayout layout;
  std::vector<int> contexts;
  int max_blocks = 0;
  std::vector<std::int32_t> block_tables;  // [sequence][max_blocks]
  std::vector<std::uint8_t> k_host, v_host;

  Cache(const KvCacheLayout& layout_, std::vector<int> contexts_, unsigned seed)
      : layout(layout_), contexts(std::move(contexts_)) {
    std::mt19937 random(seed);
    int total_blocks = 1;
    for (const int context : contexts) {
      const int blocks = (context + layout.block_size - 1) / layout.block_size;
      max_blocks = std::max(max_blocks, blocks);
      total_blocks += blocks;
    }
    max_blocks = std::max(max_blocks, 1);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(total_blocks - 1));
    std::iota(ids.begin(), ids.end(), 1);
    std::shuffle(ids.begin(), ids.end(), random);
    block_tables.assign(contexts.size() * static_cast<std::size_t>(max_blocks), 0);
    k_host.assign(static_cast<std::size_t>(total_blocks) * kv_block_bytes(layout), 0);
    v_host = k_host;
    std::size_t next = 0;
    const int width = layout.n_kv_heads * layout.head_dim;
    for (std::size_t s = 0; s < contexts.size(); ++s) {
      std::int32_t* table = block_tables.data() + s * static_cast<std::size_t>(max_blocks);
      const int context = contexts[s];
      for (int b = 0; b * layout.block_size < context; ++b) table[b] = ids[next++];
      const std::vector<float> k =
          random_floats(static_cast<std::size_t>(context) * width, 1.0f, random);
      const std::vector<float> v =
          random_floats(static_cast<std::size_t>(context) * width, 1.0f, random);
      std::vector<std::int32_t> positions(static_cast<std::size_t>(context));
      std::iota(positions.begin(), positions.end(), 0);
      store_kv(k.data(), width, v.data(), width, context, positions.data(), table, layout,
               k_host.data(), v_host.data());
    }
  }
  const std::int32_t* table(std::size_t sequence) const {
    return block_tables.data() + sequence * static_cast<std::size_t>(max_blocks);
  }
};

struct DeviceCache {
  DeviceArray<std::uint8_t> k, v;
  explicit DeviceCache(const Cache& cache) : k(cache.k_host), v(cache.v_host) {}
};

// One launch's rows: per sequence its block table (a row of a Cache), its context, its q rows.
struct Batch {
  int n_heads = 0;
  float scale = 1.0f;
  std::vector<int> contexts;
  std::vector<std::int32_t> tables;  // [sequence][max_blocks]
  std::vector<std::int32_t> query_starts{0};
  std::vector<float> q;  // [rows][n_heads * head_dim]

  int rows() const { return query_starts.back(); }
  int max_q_len() const {
    int longest = 0;
    for (std::size_t s = 0; s + 1 < query_starts.size(); ++s)
      longest = std::max(longest, query_starts[s + 1] - query_starts[s]);
    return longest;
  }
  int max_context() const { return *std::max_element(contexts.begin(), contexts.end()); }
  // Adds q_len rows of cache sequence `sequence` ending at position context - 1, with q rows
  // taken from `queries` (row i of the sequence's rows is queries row first_row + i).
  void add(const Cache& cache, std::size_t sequence, int context, int q_len,
           const std::vector<float>& queries, int first_row) {
    contexts.push_back(context);
    tables.insert(tables.end(), cache.table(sequence), cache.table(sequence) + cache.max_blocks);
    query_starts.push_back(query_starts.back() + q_len);
    const std::size_t width = static_cast<std::size_t>(n_heads) * cache.layout.head_dim;
    q.insert(q.end(), queries.begin() + static_cast<std::ptrdiff_t>(first_row * width),
             queries.begin() + static_cast<std::ptrdiff_t>((first_row + q_len) * width));
  }
};

PagedAttentionArgs args_for(const Cache& cache, const DeviceCache& device, const Batch& batch,
                            const DeviceArray<float>& q, const DeviceArray<float>& out,
                            const DeviceArray<std::int32_t>& contexts,
                            const DeviceArray<std::int32_t>& tables) {
  PagedAttentionArgs args;
  const std::int64_t width = static_cast<std::int64_t>(batch.n_heads) * cache.layout.head_dim;
  args.q = q.data();
  args.q_stride = width;
  args.out = out.data();
  args.out_stride = width;
  args.context_lens = contexts.data();
  args.block_tables = tables.data();
  args.max_blocks_per_seq = cache.max_blocks;
  args.n_seqs = static_cast<int>(batch.contexts.size());
  args.k_pool = device.k.data();
  args.v_pool = device.v.data();
  args.layout = cache.layout;
  args.n_heads = batch.n_heads;
  args.scale = batch.scale;
  return args;
}

// Decode: the batch's sequences have one row each.
std::vector<float> run_decode(const Cache& cache, const DeviceCache& device, const Batch& batch) {
  DeviceArray<float> q(batch.q);
  DeviceArray<float> out(batch.q.size());
  DeviceArray<std::int32_t> contexts(batch.contexts), tables(batch.tables);
  const PagedAttentionArgs args = args_for(cache, device, batch, q, out, contexts, tables);
  const std::size_t bytes = paged_attention_decode_workspace_bytes(
      args.n_seqs, batch.n_heads, cache.layout.head_dim, batch.max_context());
  DeviceArray<float> workspace(bytes / sizeof(float));
  EXPECT_EQ(
      launch_paged_attention_decode(args, batch.max_context(), workspace.data(), bytes, nullptr),
      cudaSuccess)
      << cuda_test::launch_message();
  return out.download();
}

std::vector<float> run_prefill(const Cache& cache, const DeviceCache& device, const Batch& batch) {
  DeviceArray<float> q(batch.q);
  DeviceArray<float> out(batch.q.size());
  DeviceArray<std::int32_t> contexts(batch.contexts), tables(batch.tables);
  DeviceArray<std::int32_t> starts(batch.query_starts);
  const PagedAttentionArgs args = args_for(cache, device, batch, q, out, contexts, tables);
  EXPECT_EQ(launch_paged_attention_prefill(args, starts.data(), batch.max_q_len(), nullptr),
            cudaSuccess)
      << cuda_test::launch_message();
  return out.download();
}

// The CPU kernel on the same cache bytes, every (sequence, KV head).
std::vector<float> run_cpu(const Cache& cache, const Batch& batch) {
  const int head_dim = cache.layout.head_dim;
  const std::int64_t width = static_cast<std::int64_t>(batch.n_heads) * head_dim;
  std::vector<float> out(batch.q.size(), NAN);
  AttentionScratch scratch(batch.max_context(), head_dim);
  for (std::size_t s = 0; s < batch.contexts.size(); ++s) {
    const int first_row = batch.query_starts[s];
    const int q_len = batch.query_starts[s + 1] - first_row;
    for (int kv_head = 0; kv_head < cache.layout.n_kv_heads; ++kv_head) {
      paged_attention_scalar(batch.q.data() + first_row * width, width, q_len,
                             batch.contexts[s] - q_len, batch.n_heads, kv_head,
                             batch.tables.data() + s * static_cast<std::size_t>(cache.max_blocks),
                             cache.layout, cache.k_host.data(), cache.v_host.data(), head_dim,
                             batch.scale, out.data() + first_row * width, width, scratch);
    }
  }
  return out;
}

float max_error(const std::vector<float>& actual, const std::vector<float>& expected) {
  float worst = 0.0f;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const float error = std::fabs(actual[i] - expected[i]);
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

KvCacheLayout layout_of(KvType type, int block_size, int n_kv_heads, int head_dim) {
  return {type, block_size, n_kv_heads, head_dim};
}

const char* name_of(KvType type) {
  return type == KvType::f32 ? "f32" : type == KvType::f16 ? "f16" : "bf16";
}

// A decode batch over every sequence of the cache, one random query row each.
Batch decode_batch(const Cache& cache, int n_heads, unsigned seed) {
  std::mt19937 random(seed);
  Batch batch;
  batch.n_heads = n_heads;
  batch.scale = 1.0f / std::sqrt(static_cast<float>(cache.layout.head_dim));
  const std::vector<float> q = random_floats(
      cache.contexts.size() * static_cast<std::size_t>(n_heads) * cache.layout.head_dim, 2.0f,
      random);
  for (std::size_t s = 0; s < cache.contexts.size(); ++s)
    batch.add(cache, s, cache.contexts[s], 1, q, static_cast<int>(s));
  return batch;
}

TEST(CudaPagedAttention, DecodeMatchesTheCpuKernelForEveryHeadDimAndGqaRatio) {
  TERN_REQUIRE_DEVICE();
  const KvType types[] = {KvType::f16, KvType::bf16, KvType::f32};
  int variant = 0;
  for (const int head_dim : {16, 24, 32, 40, 64, 128}) {
    float worst = 0.0f;
    for (const int group : {1, 2, 4, 8}) {
      ++variant;
      const int block_size = variant % 2 == 0 ? 16 : 32;
      const KvType type = types[variant % 3];
      const int n_kv_heads = 2;
      // Contexts within one block, across block and tile boundaries and past one partition.
      const Cache cache(layout_of(type, block_size, n_kv_heads, head_dim),
                        {1, 17, 64, 65, 100 + variant, 300}, 100 + variant);
      const DeviceCache device(cache);
      const Batch batch = decode_batch(cache, group * n_kv_heads, variant);
      const std::vector<float> expected = run_cpu(cache, batch);
      cuda_test::for_each_pass([&](const cuda_test::Pass&) {
        const std::vector<float> out = run_decode(cache, device, batch);
        const float error = max_error(out, expected);
        EXPECT_LE(error, kTolerance) << "head_dim " << head_dim << " group " << group << " "
                                     << name_of(type) << " block " << block_size;
        worst = std::max(worst, error);
      });
    }
    std::printf("[ decode  ] head_dim %3d: max |gpu - cpu| = %.3g\n", head_dim, worst);
  }
}

TEST(CudaPagedAttention, DecodeOfLongContextsMatchesTheCpuKernel) {
  TERN_REQUIRE_DEVICE();
  struct Case {
    KvType type;
    int head_dim, group, block_size;
    std::vector<int> contexts;
  };
  const Case cases[] = {{KvType::f16, 128, 4, 16, {4096, 1000, 257, 3}},
                        {KvType::bf16, 64, 8, 32, {2049, 512, 511}},
                        {KvType::f32, 80, 1, 16, {1500}},
                        {KvType::f16, 96, 2, 32, {777, 256}},
                        // GQA groups over a block's 8 query heads: two passes of heads.
                        {KvType::f16, 32, 16, 16, {300, 40}},
                        {KvType::bf16, 24, 12, 32, {520}}};
  unsigned seed = 0;
  for (const Case& c : cases) {
    const Cache cache(layout_of(c.type, c.block_size, 1, c.head_dim), c.contexts, ++seed);
    const DeviceCache device(cache);
    const Batch batch = decode_batch(cache, c.group, seed);
    const std::vector<float> expected = run_cpu(cache, batch);
    float worst = 0.0f;
    cuda_test::for_each_pass([&](const cuda_test::Pass&) {
      const float error = max_error(run_decode(cache, device, batch), expected);
      EXPECT_LE(error, kTolerance) << "head_dim " << c.head_dim << " " << name_of(c.type);
      worst = std::max(worst, error);
    });
    std::printf("[ decode  ] head_dim %3d %s group %d, contexts up to %d: max |gpu - cpu| = %.3g\n",
                c.head_dim, name_of(c.type), c.group, batch.max_context(), worst);
  }
}

TEST(CudaPagedAttention, ASequenceGivesTheSameBitsAloneAndInABatchOf64) {
  TERN_REQUIRE_DEVICE();
  std::mt19937 random(5);
  std::uniform_int_distribution<int> context(1, 700);
  std::vector<int> contexts(64);
  for (int& c : contexts) c = context(random);
  contexts[37] = 600;  // the sequence under test: three partitions
  const Cache cache(layout_of(KvType::f16, 16, 2, 32), contexts, 9);
  const DeviceCache device(cache);
  const Batch batch = decode_batch(cache, 4, 11);
  Batch alone;
  alone.n_heads = batch.n_heads;
  alone.scale = batch.scale;
  alone.add(cache, 37, 600, 1, batch.q, 37);
  const std::size_t width = static_cast<std::size_t>(batch.n_heads) * 32;
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    const std::vector<float> together = run_decode(cache, device, batch);
    const std::vector<float> single = run_decode(cache, device, alone);
    const std::vector<float> row(together.begin() + static_cast<std::ptrdiff_t>(37 * width),
                                 together.begin() + static_cast<std::ptrdiff_t>(38 * width));
    EXPECT_TRUE(same_bits(row, single));
    EXPECT_LE(max_error(together, run_cpu(cache, batch)), kTolerance);
  });
}

// Prefill of q_len rows ending at position context - 1 against the CPU, and each row against
// the same row through decode (a decode batch with one sequence per row): identical bits.
void expect_prefill_rows_equal_decode_rows(KvType type, int head_dim, int group, int block_size,
                                           int context, int q_len, unsigned seed) {
  SCOPED_TRACE(testing::Message() << "head_dim " << head_dim << " group " << group << " "
                                  << name_of(type) << " context " << context << " q_len " << q_len);
  const int n_kv_heads = 2;
  const int n_heads = group * n_kv_heads;
  const Cache cache(layout_of(type, block_size, n_kv_heads, head_dim), {context}, seed);
  const DeviceCache device(cache);
  std::mt19937 random(seed);
  const std::vector<float> q =
      random_floats(static_cast<std::size_t>(q_len) * n_heads * head_dim, 2.0f, random);
  Batch prefill;
  prefill.n_heads = n_heads;
  prefill.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  prefill.add(cache, 0, context, q_len, q, 0);
  Batch decode;
  decode.n_heads = n_heads;
  decode.scale = prefill.scale;
  for (int row = 0; row < q_len; ++row) decode.add(cache, 0, context - q_len + row + 1, 1, q, row);
  const std::vector<float> expected = run_cpu(cache, prefill);
  float worst = 0.0f;
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    const std::vector<float> rows = run_prefill(cache, device, prefill);
    const float error = max_error(rows, expected);
    EXPECT_LE(error, kTolerance);
    worst = std::max(worst, error);
    EXPECT_TRUE(same_bits(rows, run_decode(cache, device, decode)));
  });
  std::printf("[ prefill ] head_dim %3d %s group %d, context %d, %d rows: max |gpu - cpu| = %.3g\n",
              head_dim, name_of(type), group, context, q_len, worst);
}

TEST(CudaPagedAttention, PrefillRowsEqualDecodeRowsBitForBit) {
  TERN_REQUIRE_DEVICE();
  // Whole prompts, rows crossing block (16, 32), tile (64) and partition (256) boundaries.
  expect_prefill_rows_equal_decode_rows(KvType::f16, 16, 1, 16, 37, 37, 1);
  expect_prefill_rows_equal_decode_rows(KvType::bf16, 24, 2, 32, 70, 70, 2);
  expect_prefill_rows_equal_decode_rows(KvType::f16, 32, 4, 16, 300, 60, 3);
  expect_prefill_rows_equal_decode_rows(KvType::f32, 40, 8, 32, 131, 131, 4);
  expect_prefill_rows_equal_decode_rows(KvType::bf16, 64, 1, 16, 530, 40, 5);
  // A cached prefix: a short chunk at the end of a long context.
  expect_prefill_rows_equal_decode_rows(KvType::f16, 128, 4, 16, 2100, 9, 6);
  expect_prefill_rows_equal_decode_rows(KvType::f16, 80, 2, 32, 1030, 20, 7);
  // GQA groups of 16 and 12 heads: two passes of a KV head's query heads.
  expect_prefill_rows_equal_decode_rows(KvType::f16, 32, 16, 16, 290, 40, 8);
  expect_prefill_rows_equal_decode_rows(KvType::bf16, 16, 12, 32, 70, 70, 9);
}

TEST(CudaPagedAttention, ChunkedPrefillGivesTheSameBitsAsOneChunk) {
  TERN_REQUIRE_DEVICE();
  const int head_dim = 64;
  const int n_heads = 4;  // GQA 2
  const int prompt = 300;
  const Cache cache(layout_of(KvType::bf16, 16, 2, head_dim), {prompt}, 21);
  const DeviceCache device(cache);
  std::mt19937 random(22);
  const std::vector<float> q =
      random_floats(static_cast<std::size_t>(prompt) * n_heads * head_dim, 2.0f, random);
  Batch whole;
  whole.n_heads = n_heads;
  whole.scale = 0.125f;
  whole.add(cache, 0, prompt, prompt, q, 0);
  // The same prompt in chunks of 5, 60, 1, 200 and 34 rows, all in one ragged launch (each
  // chunk a sequence of its own over the same blocks).
  // Also each chunk in a launch of its own, as an engine's steps would run them.
  Batch chunked;
  chunked.n_heads = n_heads;
  chunked.scale = whole.scale;
  std::vector<Batch> steps;
  int done = 0;
  for (const int size : {5, 60, 1, 200, 34}) {
    chunked.add(cache, 0, done + size, size, q, done);
    steps.emplace_back();
    steps.back().n_heads = n_heads;
    steps.back().scale = whole.scale;
    steps.back().add(cache, 0, done + size, size, q, done);
    done += size;
  }
  ASSERT_EQ(done, prompt);
  const std::vector<float> expected = run_cpu(cache, whole);
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    const std::vector<float> one = run_prefill(cache, device, whole);
    EXPECT_LE(max_error(one, expected), kTolerance);
    EXPECT_TRUE(same_bits(one, run_prefill(cache, device, chunked)));
    std::vector<float> stepwise;
    for (const Batch& step : steps) {
      const std::vector<float> rows = run_prefill(cache, device, step);
      stepwise.insert(stepwise.end(), rows.begin(), rows.end());
    }
    EXPECT_TRUE(same_bits(one, stepwise));
  });
}

TEST(CudaPagedAttention, RaggedPrefillMatchesTheCpuKernelAndEachSequenceAlone) {
  TERN_REQUIRE_DEVICE();
  const int head_dim = 40;
  const int n_heads = 8;  // GQA 4 over 2 KV heads
  const Cache cache(layout_of(KvType::f16, 32, 2, head_dim), {45, 300, 7, 130}, 51);
  const DeviceCache device(cache);
  std::mt19937 random(52);
  const int q_lens[] = {45, 20, 7, 1};
  const std::vector<float> q =
      random_floats(static_cast<std::size_t>(73) * n_heads * head_dim, 2.0f, random);
  Batch batch;
  batch.n_heads = n_heads;
  batch.scale = 1.0f / std::sqrt(40.0f);
  std::vector<Batch> singles(4);
  int row = 0;
  for (std::size_t s = 0; s < 4; ++s) {
    batch.add(cache, s, cache.contexts[s], q_lens[s], q, row);
    singles[s].n_heads = n_heads;
    singles[s].scale = batch.scale;
    singles[s].add(cache, s, cache.contexts[s], q_lens[s], q, row);
    row += q_lens[s];
  }
  const std::vector<float> expected = run_cpu(cache, batch);
  cuda_test::for_each_pass([&](const cuda_test::Pass&) {
    const std::vector<float> together = run_prefill(cache, device, batch);
    EXPECT_LE(max_error(together, expected), kTolerance);
    std::vector<float> apart;
    for (const Batch& single : singles) {
      const std::vector<float> rows = run_prefill(cache, device, single);
      apart.insert(apart.end(), rows.begin(), rows.end());
    }
    EXPECT_TRUE(same_bits(together, apart));
  });
}

// context_lens are device data the launchers cannot check: a sequence longer than its block table
// reaches (or, in decode, than max_context) is skipped, its rows left as they were, and the other
// sequences are computed as usual.
TEST(CudaPagedAttention, ASequencePastTheLaunchBoundsIsSkipped) {
  TERN_REQUIRE_DEVICE();
  const Cache cache(layout_of(KvType::f16, 16, 1, 32), {600, 20}, 41);
  const DeviceCache device(cache);
  Batch batch = decode_batch(cache, 2, 42);
  const std::vector<float> expected = run_cpu(cache, batch);
  const std::size_t width = 2 * 32;
  DeviceArray<float> q(batch.q);
  DeviceArray<std::int32_t> tables(batch.tables), starts(batch.query_starts);
  // Decode told max_context 300 (two partitions): sequence 0, with 600 keys, is past it.
  {
    DeviceArray<std::int32_t> contexts(batch.contexts);
    DeviceArray<float> out(batch.q.size());
    const std::vector<float> untouched = out.download();
    const PagedAttentionArgs args = args_for(cache, device, batch, q, out, contexts, tables);
    const std::size_t bytes = paged_attention_decode_workspace_bytes(2, 2, 32, 300);
    DeviceArray<float> workspace(bytes / sizeof(float));
    TERN_EXPECT_LAUNCHED(
        launch_paged_attention_decode(args, 300, workspace.data(), bytes, nullptr));
    const std::vector<float> rows = out.download();
    EXPECT_TRUE(std::equal(rows.begin(), rows.begin() + width, untouched.begin(),
                           [](float a, float b) { return std::memcmp(&a, &b, 4) == 0; }));
    EXPECT_LE(max_error(std::vector<float>(rows.begin() + width, rows.end()),
                        std::vector<float>(expected.begin() + width, expected.end())),
              kTolerance);
  }
  // Prefill of sequence 1 claiming 700 keys: past the 38-block tables' reach.
  {
    batch.contexts[1] = 700;
    DeviceArray<std::int32_t> contexts(batch.contexts);
    DeviceArray<float> out(batch.q.size());
    const std::vector<float> untouched = out.download();
    const PagedAttentionArgs args = args_for(cache, device, batch, q, out, contexts, tables);
    TERN_EXPECT_LAUNCHED(launch_paged_attention_prefill(args, starts.data(), 1, nullptr));
    const std::vector<float> rows = out.download();
    EXPECT_TRUE(std::equal(rows.begin() + width, rows.end(), untouched.begin() + width,
                           [](float a, float b) { return std::memcmp(&a, &b, 4) == 0; }));
    EXPECT_LE(max_error(std::vector<float>(rows.begin(), rows.begin() + width),
                        std::vector<float>(expected.begin(), expected.begin() + width)),
              kTolerance);
  }
}

TEST(CudaPagedAttention, LaunchersRejectBadShapesWithoutLaunching) {
  TERN_REQUIRE_DEVICE();
  const Cache cache(layout_of(KvType::f16, 16, 2, 32), {40}, 31);
  const DeviceCache device(cache);
  const Batch batch = decode_batch(cache, 4, 32);
  DeviceArray<float> q(batch.q);
  DeviceArray<std::int32_t> contexts(batch.contexts), tables(batch.tables);
  DeviceArray<std::int32_t> starts(batch.query_starts);
  const std::size_t bytes = paged_attention_decode_workspace_bytes(1, 4, 32, 40);
  DeviceArray<float> workspace(bytes / sizeof(float));
  DeviceArray<float> out(batch.q.size());
  const std::vector<float> untouched = out.download();
  const PagedAttentionArgs good = args_for(cache, device, batch, q, out, contexts, tables);

  auto rejected = [&](const PagedAttentionArgs& args, std::size_t workspace_bytes = 0) {
    if (workspace_bytes == 0) workspace_bytes = bytes;
    EXPECT_EQ(launch_paged_attention_decode(args, 40, workspace.data(), workspace_bytes, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(launch_paged_attention_prefill(args, starts.data(), 1, nullptr),
              cudaErrorInvalidValue);
    EXPECT_TRUE(same_bits(out.download(), untouched));
  };
  PagedAttentionArgs bad = good;
  bad.layout.head_dim = 48;  // not compiled
  rejected(bad);
  bad = good;
  bad.n_heads = 3;  // not a multiple of n_kv_heads
  rejected(bad);
  bad = good;
  bad.layout.n_kv_heads = 0;
  rejected(bad);
  bad = good;
  bad.q_stride = 4 * 32 - 1;
  rejected(bad);
  bad = good;
  bad.layout.block_size = 0;
  rejected(bad);
  bad = good;
  bad.k_pool = nullptr;
  rejected(bad);
  bad = good;
  bad.layout.type = static_cast<KvType>(7);
  rejected(bad);
  bad = good;
  bad.max_blocks_per_seq = 2;  // 32 positions: less than max_context 40
  EXPECT_EQ(launch_paged_attention_decode(bad, 40, workspace.data(), bytes, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_paged_attention_decode(good, 40, workspace.data(), bytes - 4, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_paged_attention_decode(good, 40, nullptr, bytes, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_paged_attention_prefill(good, nullptr, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_paged_attention_prefill(good, starts.data(), 0, nullptr), cudaErrorInvalidValue);
  EXPECT_TRUE(same_bits(out.download(), untouched));
  // And the good arguments do launch.
  EXPECT_EQ(launch_paged_attention_decode(good, 40, workspace.data(), bytes, nullptr), cudaSuccess);
  EXPECT_LE(max_error(out.download(), run_cpu(cache, batch)), kTolerance);
}

}  // namespace
}  // namespace tern::kernels::cuda
