#include "engine/backend/tensor_parallel_shape.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tern::engine {
namespace {

using kernels::TensorType;

constexpr std::string_view kPath = "/models/m.gguf";

// ../shared/models/tinystories-656k/config.json
ModelConfig tinystories() {
  ModelConfig config;
  config.architecture = "llama";
  config.n_layers = 2;
  config.hidden_size = 128;
  config.n_heads = 8;
  config.n_kv_heads = 4;
  config.head_dim = 16;
  config.ffn_hidden_size = 384;
  config.vocab_size = 2048;
  config.rms_norm_eps = 1e-6f;
  return config;
}

// ../shared/models/random-qwen3-tiny/config.json: head_dim 32 != hidden / heads.
ModelConfig qwen3_tiny() {
  ModelConfig config;
  config.architecture = "qwen3";
  config.n_layers = 2;
  config.hidden_size = 64;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.head_dim = 32;
  config.ffn_hidden_size = 160;
  config.vocab_size = 2048;
  config.rms_norm_eps = 1e-6f;
  return config;
}

std::vector<RowParallelFormats> layers_of(const ModelConfig& config, TensorType type) {
  return std::vector<RowParallelFormats>(static_cast<std::size_t>(config.n_layers), {type, type});
}

Expected<RankShape> shape_of(const ModelConfig& config, RankSlice slice,
                             TensorType type = TensorType::f32) {
  return rank_shape(config, kPath, layers_of(config, type), slice);
}

std::string error_of(const ModelConfig& config, RankSlice slice,
                     TensorType type = TensorType::f32) {
  const Expected<RankShape> shape = shape_of(config, slice, type);
  EXPECT_FALSE(shape.ok()) << "ranks " << slice.ranks;
  return shape.ok() ? std::string() : shape.error().message;
}

void expect_shape(const RankShape& shape, std::int32_t hidden, std::int32_t heads,
                  std::int32_t kv_heads, std::int32_t head_dim, std::int32_t ffn,
                  std::int32_t vocab) {
  EXPECT_EQ(shape.hidden, hidden);
  EXPECT_EQ(shape.n_heads, heads);
  EXPECT_EQ(shape.n_kv_heads, kv_heads);
  EXPECT_EQ(shape.head_dim, head_dim);
  EXPECT_EQ(shape.ffn, ffn);
  EXPECT_EQ(shape.vocab, vocab);
}

TEST(TensorParallelShape, OneRankIsTheWholeModel) {
  const ModelConfig config = tinystories();
  const Expected<RankShape> shape = shape_of(config, {});
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  expect_shape(*shape, 128, 8, 4, 16, 384, 2048);
  EXPECT_EQ(shape->rms_norm_eps, config.rms_norm_eps);
  EXPECT_EQ(held_matrix(config, {}, Matrix::wo).cols, (IndexRange{0, 128}));
  EXPECT_EQ(held_matrix(config, {}, Matrix::output).rows, (IndexRange{0, 2048}));
}

TEST(TensorParallelShape, TinyStoriesOverTwoFourAndEightRanks) {
  const ModelConfig config = tinystories();
  struct Case {
    int ranks;
    std::int32_t heads, kv_heads, ffn, vocab;
  };
  // With 8 ranks each of the 4 KV heads is replicated on 2 ranks.
  for (const Case& c : {Case{2, 4, 2, 192, 1024}, Case{4, 2, 1, 96, 512}, Case{8, 1, 1, 48, 256}}) {
    for (int rank = 0; rank < c.ranks; ++rank) {
      const Expected<RankShape> shape = shape_of(config, {rank, c.ranks});
      ASSERT_TRUE(shape.ok()) << shape.error().message;
      expect_shape(*shape, 128, c.heads, c.kv_heads, 16, c.ffn, c.vocab);
      EXPECT_EQ(held_ffn(config, {rank, c.ranks}), (IndexRange{rank * c.ffn, c.ffn}));
      EXPECT_EQ(held_vocab(config, {rank, c.ranks}), (IndexRange{rank * c.vocab, c.vocab}));
    }
  }
}

TEST(TensorParallelShape, HeadsOfTheIssuesExamples) {
  const ModelConfig config = tinystories();  // 8 query heads, 4 KV heads
  EXPECT_EQ(held_query_heads(config, {0, 2}), (IndexRange{0, 4}));
  EXPECT_EQ(held_kv_heads(config, {0, 2}), (IndexRange{0, 2}));
  EXPECT_EQ(held_query_heads(config, {1, 2}), (IndexRange{4, 4}));
  EXPECT_EQ(held_kv_heads(config, {1, 2}), (IndexRange{2, 2}));
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(held_query_heads(config, {rank, 8}), (IndexRange{rank, 1}));
    EXPECT_EQ(held_kv_heads(config, {rank, 8}), (IndexRange{rank / 2, 1}));
  }
}

// On every rank, local query head h reads local KV head h / (local heads / local KV heads), as
// the attention kernels do; that must be the KV head the whole model gives its global head.
TEST(TensorParallelShape, EveryRanksQueryHeadsReadTheirOwnKvHeads) {
  struct Heads {
    int n_heads, n_kv_heads;
  };
  for (const Heads heads : {Heads{8, 4}, Heads{32, 8}, Heads{32, 32}, Heads{16, 1}, Heads{64, 8}}) {
    ModelConfig config = tinystories();
    config.n_heads = heads.n_heads;
    config.n_kv_heads = heads.n_kv_heads;
    config.hidden_size = heads.n_heads * config.head_dim;
    const int group = heads.n_heads / heads.n_kv_heads;
    for (int ranks = 1; ranks <= heads.n_heads; ++ranks) {
      const Expected<RankShape> first = shape_of(config, {0, ranks});
      if (!first.ok()) continue;  // a split the checks refuse
      for (int rank = 0; rank < ranks; ++rank) {
        const RankShape shape = *shape_of(config, {rank, ranks});
        const IndexRange q = held_query_heads(config, {rank, ranks});
        const IndexRange kv = held_kv_heads(config, {rank, ranks});
        ASSERT_EQ(q.count, shape.n_heads);
        ASSERT_EQ(kv.count, shape.n_kv_heads);
        ASSERT_EQ(shape.n_heads % shape.n_kv_heads, 0);
        const int local_group = shape.n_heads / shape.n_kv_heads;
        for (int h = 0; h < shape.n_heads; ++h) {
          EXPECT_EQ(kv.begin + h / local_group, (q.begin + h) / group)
              << heads.n_heads << "/" << heads.n_kv_heads << " heads, rank " << rank << " of "
              << ranks << ", local head " << h;
        }
      }
    }
  }
}

TEST(TensorParallelShape, Qwen3TinyOverTwoRanks) {
  const ModelConfig config = qwen3_tiny();
  for (int rank = 0; rank < 2; ++rank) {
    const Expected<RankShape> shape = shape_of(config, {rank, 2});
    ASSERT_TRUE(shape.ok()) << shape.error().message;
    expect_shape(*shape, 64, 2, 1, 32, 80, 1024);
    EXPECT_EQ(shape->q_width(), 64);
    // head_dim 32 != hidden / heads: wq's and wo's ranges are in head_dim units.
    EXPECT_EQ(held_matrix(config, {rank, 2}, Matrix::wq).rows, (IndexRange{rank * 64, 64}));
    EXPECT_EQ(held_matrix(config, {rank, 2}, Matrix::wq).cols, (IndexRange{0, 64}));
    EXPECT_EQ(held_matrix(config, {rank, 2}, Matrix::wk).rows, (IndexRange{rank * 32, 32}));
    EXPECT_EQ(held_matrix(config, {rank, 2}, Matrix::wo).rows, (IndexRange{0, 64}));
    EXPECT_EQ(held_matrix(config, {rank, 2}, Matrix::wo).cols, (IndexRange{rank * 64, 64}));
  }
  // Q8_0 blocks of 32 do not divide each rank's 80 FFN columns of ffn_down.
  EXPECT_EQ(error_of(config, {0, 2}, TensorType::q8_0),
            "/models/m.gguf: layer 0 ffn_down is Q8_0: over 2 devices each holds 80 of its 160 "
            "input columns, which is not a whole number of its blocks of 32 (tensor parallelism "
            "splits row-parallel matrices on block boundaries)");
}

TEST(TensorParallelShape, MatricesAndVectorsByTheirSplit) {
  const ModelConfig config = tinystories();
  const RankSlice slice{1, 2};
  // Column-parallel: output rows.
  EXPECT_EQ(held_matrix(config, slice, Matrix::wq).rows, (IndexRange{64, 64}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::wk).rows, (IndexRange{32, 32}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::wv).rows, (IndexRange{32, 32}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::w_gate).rows, (IndexRange{192, 192}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::w_up).rows, (IndexRange{192, 192}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::output).rows, (IndexRange{1024, 1024}));
  for (Matrix m :
       {Matrix::wq, Matrix::wk, Matrix::wv, Matrix::w_gate, Matrix::w_up, Matrix::output}) {
    EXPECT_EQ(held_matrix(config, slice, m).cols, (IndexRange{0, 128}));
  }
  // Row-parallel: input columns, every row.
  EXPECT_EQ(held_matrix(config, slice, Matrix::wo).rows, (IndexRange{0, 128}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::wo).cols, (IndexRange{64, 64}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::w_down).rows, (IndexRange{0, 128}));
  EXPECT_EQ(held_matrix(config, slice, Matrix::w_down).cols, (IndexRange{192, 192}));
  // Biases like their matrices' rows; norms whole.
  EXPECT_EQ(held_vector(config, slice, Vector::bq, 128), (IndexRange{64, 64}));
  EXPECT_EQ(held_vector(config, slice, Vector::bk, 64), (IndexRange{32, 32}));
  EXPECT_EQ(held_vector(config, slice, Vector::bv, 64), (IndexRange{32, 32}));
  for (Vector v : {Vector::attn_norm, Vector::ffn_norm, Vector::output_norm}) {
    EXPECT_EQ(held_vector(config, slice, v, 128), (IndexRange{0, 128}));
  }
  EXPECT_EQ(held_vector(config, slice, Vector::q_norm, 16), (IndexRange{0, 16}));
  EXPECT_EQ(held_vector(config, slice, Vector::k_norm, 16), (IndexRange{0, 16}));
  // Replicated KV heads: ranks 2 and 3 of 8 both hold KV head 1's rows.
  EXPECT_EQ(held_matrix(config, {2, 8}, Matrix::wk).rows, (IndexRange{16, 16}));
  EXPECT_EQ(held_matrix(config, {3, 8}, Matrix::wv).rows, (IndexRange{16, 16}));
  EXPECT_EQ(held_vector(config, {3, 8}, Vector::bk, 64), (IndexRange{16, 16}));
}

TEST(TensorParallelShape, OnlyRankZeroAddsRowParallelBiases) {
  EXPECT_TRUE((RankSlice{}).adds_row_parallel_bias());
  EXPECT_TRUE((RankSlice{0, 4}).adds_row_parallel_bias());
  EXPECT_FALSE((RankSlice{1, 4}).adds_row_parallel_bias());
  EXPECT_FALSE((RankSlice{3, 4}).adds_row_parallel_bias());
}

TEST(TensorParallelShape, RefusesRanksThatAreNotThere) {
  EXPECT_EQ(error_of(tinystories(), {0, 0}),
            "/models/m.gguf: tensor parallelism needs at least 1 device, got 0");
  EXPECT_EQ(error_of(tinystories(), {0, -2}),
            "/models/m.gguf: tensor parallelism needs at least 1 device, got -2");
  EXPECT_EQ(error_of(tinystories(), {2, 2}),
            "/models/m.gguf: rank 2 is not one of the 2 tensor-parallel ranks");
  EXPECT_EQ(error_of(tinystories(), {-1, 2}),
            "/models/m.gguf: rank -1 is not one of the 2 tensor-parallel ranks");
}

TEST(TensorParallelShape, RefusesQueryHeadsThatDoNotDivide) {
  EXPECT_EQ(error_of(tinystories(), {0, 3}),
            "/models/m.gguf: 8 query heads do not split over 3 devices (tensor parallelism needs "
            "n_heads % devices == 0; 8 % 3 = 2)");
  EXPECT_FALSE(shape_of(tinystories(), {0, 16}).ok());
}

TEST(TensorParallelShape, RefusesKvHeadsNeitherSplitNorReplicated) {
  ModelConfig config = tinystories();
  config.n_heads = 12;
  config.n_kv_heads = 4;
  config.hidden_size = 12 * 16;
  config.vocab_size = 12 * 192;
  // 4 % 6 != 0 and 6 % 4 != 0, though 12 query heads split over 6.
  EXPECT_EQ(error_of(config, {0, 6}),
            "/models/m.gguf: 4 KV heads do not split over 6 devices (tensor parallelism needs "
            "kv_heads % devices == 0 to split them, or devices % kv_heads == 0 to replicate each "
            "on devices / kv_heads devices)");
  EXPECT_TRUE(shape_of(config, {0, 12}).ok());  // each KV head on 3 ranks
  EXPECT_TRUE(shape_of(config, {0, 4}).ok());
}

TEST(TensorParallelShape, RefusesFfnAndVocabularyThatDoNotDivide) {
  ModelConfig config = tinystories();
  config.ffn_hidden_size = 100;
  EXPECT_EQ(error_of(config, {0, 8}),
            "/models/m.gguf: the FFN width 100 does not split over 8 devices (tensor parallelism "
            "needs ffn % devices == 0; 100 % 8 = 4)");
  EXPECT_TRUE(shape_of(config, {0, 4}).ok());
  config = tinystories();
  config.vocab_size = 2050;
  EXPECT_EQ(error_of(config, {0, 4}),
            "/models/m.gguf: the vocabulary of 2050 does not split over 4 devices (tensor "
            "parallelism needs vocab % devices == 0; 2050 % 4 = 2)");
  // Vocabulary slices are whole rows of the LM head: 1025 rows each need no block alignment.
  const Expected<RankShape> odd_rows = shape_of(config, {1, 2}, TensorType::q8_0);
  ASSERT_TRUE(odd_rows.ok()) << odd_rows.error().message;
  EXPECT_EQ(odd_rows->vocab, 1025);
  EXPECT_EQ(held_vocab(config, {1, 2}), (IndexRange{1025, 1025}));
}

TEST(TensorParallelShape, RefusesRowParallelSlicesThatCutBlocks) {
  const ModelConfig config = tinystories();  // wo: 128 columns, w_down: 384
  // Q8_0 and Q4_0 blocks of 32: 4 ranks hold 32 of wo's columns and 96 of w_down's.
  for (TensorType type : {TensorType::q8_0, TensorType::q4_0}) {
    EXPECT_TRUE(shape_of(config, {0, 4}, type).ok());
  }
  EXPECT_EQ(error_of(config, {0, 8}, TensorType::q8_0),
            "/models/m.gguf: layer 0 attn_output is Q8_0: over 8 devices each holds 16 of its 128 "
            "input columns, which is not a whole number of its blocks of 32 (tensor parallelism "
            "splits row-parallel matrices on block boundaries)");
  EXPECT_EQ(error_of(config, {0, 8}, TensorType::q4_0),
            "/models/m.gguf: layer 0 attn_output is Q4_0: over 8 devices each holds 16 of its 128 "
            "input columns, which is not a whole number of its blocks of 32 (tensor parallelism "
            "splits row-parallel matrices on block boundaries)");
  // Float formats have blocks of one value: any whole split reads.
  for (TensorType type : {TensorType::f32, TensorType::f16, TensorType::bf16}) {
    EXPECT_TRUE(shape_of(config, {7, 8}, type).ok());
  }
  // K-quants: super-blocks of 256. The whole model reads (wo's 128 columns are not checked
  // against a split), two ranks do not: wo would be cut to 64 columns.
  std::vector<RowParallelFormats> layers = layers_of(config, TensorType::f32);
  layers[1].w_down = TensorType::q6_k;
  ModelConfig wide = config;
  wide.ffn_hidden_size = 512;
  EXPECT_TRUE(rank_shape(wide, kPath, layers, {1, 2}).ok());
  layers[1].wo = TensorType::q4_k;
  const Expected<RankShape> refused = rank_shape(wide, kPath, layers, {1, 2});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "/models/m.gguf: layer 1 attn_output is Q4_K: over 2 devices each holds 64 of its 128 "
            "input columns, which is not a whole number of its blocks of 256 (tensor parallelism "
            "splits row-parallel matrices on block boundaries)");
  wide.ffn_hidden_size = 384;
  layers[1].wo = TensorType::f32;
  const Expected<RankShape> down = rank_shape(wide, kPath, layers, {0, 2});
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().message,
            "/models/m.gguf: layer 1 ffn_down is Q6_K: over 2 devices each holds 192 of its 384 "
            "input columns, which is not a whole number of its blocks of 256 (tensor parallelism "
            "splits row-parallel matrices on block boundaries)");
}

}  // namespace
}  // namespace tern::engine

namespace tern::engine {
namespace {

// Tensor parallelism over experts is not built: an MoE or latent-attention model over several
// ranks is refused at startup, naming what; one rank is the whole model.
TEST(TensorParallelShape, RefusesExpertsAndLatentAttentionOverSeveralRanks) {
  ModelConfig moe = qwen3_tiny();
  moe.architecture = "qwen3moe";
  moe.moe.n_experts = 8;
  moe.moe.experts_per_token = 2;
  moe.moe.expert_ffn = 32;
  EXPECT_EQ(error_of(moe, {0, 2}),
            "/models/m.gguf: tensor parallelism over mixture-of-experts layers is not supported; "
            "serve this qwen3moe model with tensor_parallel 1");
  EXPECT_TRUE(shape_of(moe, {0, 1}).ok());

  ModelConfig latent = qwen3_tiny();
  latent.architecture = "deepseek2";
  latent.latent.kv_lora_rank = 32;
  EXPECT_EQ(error_of(latent, {1, 2}),
            "/models/m.gguf: tensor parallelism over latent attention is not supported; serve "
            "this deepseek2 model with tensor_parallel 1");
}

}  // namespace
}  // namespace tern::engine
