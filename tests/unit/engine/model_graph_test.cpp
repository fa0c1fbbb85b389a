// The Llama graph over a recording op table: one call per op per layer whatever the batch, in
// the order the architecture needs, with the per-rank sizes of its GraphSpec.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/model/architecture.h"
#include "engine/model/llama_graph.h"

namespace tern::engine {
namespace {

class RecordingOps final : public BatchOps {
 public:
  std::vector<std::string> calls;
  std::map<std::string, int> counts;
  std::vector<std::int32_t> head_counts;  // rope and per-head norms

  void embed(Activation) override { record("embed"); }
  void rms_norm(Activation, std::optional<Activation> residual, VectorRef, std::int32_t rows,
                std::int32_t, Activation) override {
    record(residual ? "add_rms_norm" : "rms_norm");
    if (rows > 1) head_counts.push_back(rows);
  }
  void matmul(std::int32_t, std::span<const MatmulOutput> group, Activation) override {
    record("matmul" + std::to_string(group.size()));
  }
  void add_bias(VectorRef, Activation) override { record("add_bias"); }
  void rope(Activation, std::int32_t heads) override {
    record("rope");
    head_counts.push_back(heads);
  }
  void store_kv(std::int32_t, Activation, Activation) override { record("store_kv"); }
  void paged_attention(std::int32_t, Activation, Activation) override { record("attention"); }
  void add(Activation, Activation) override { record("add"); }
  void silu_mul(Activation, Activation, Activation) override { record("silu_mul"); }
  void gather_logit_rows(Activation, Activation) override { record("gather"); }
  void all_reduce(Activation) override { record("all_reduce"); }
  void route_experts(std::int32_t, Activation) override { record("route_experts"); }
  void expert_ffn(std::int32_t, Activation, Activation) override { record("expert_ffn"); }
  void store_latent_kv(std::int32_t, Activation) override { record("store_latent_kv"); }
  void latent_attention(std::int32_t, Activation, Activation) override {
    record("latent_attention");
  }

 private:
  void record(std::string name) {
    ++counts[name];
    calls.push_back(std::move(name));
  }
};

GraphSpec spec(bool qkv_bias, bool qk_norm) {
  GraphSpec spec;
  spec.n_layers = 3;
  spec.shape = RankShape{64, 8, 2, 8, 128, 1000, 1e-5f};
  spec.qkv_bias = qkv_bias;
  spec.qk_norm = qk_norm;
  return spec;
}

TEST(ModelGraphTest, LlamaRunsEachOpOncePerLayerOverTheWholeBatch) {
  RecordingOps ops;
  llama_graph(spec(false, false), ops);
  EXPECT_EQ(ops.counts["embed"], 1);
  EXPECT_EQ(ops.counts["rms_norm"], 2);      // layer 0's attention norm, the final norm
  EXPECT_EQ(ops.counts["add_rms_norm"], 5);  // the other norms take the residual with them
  EXPECT_EQ(ops.counts["matmul3"], 3);       // Q/K/V as one group
  EXPECT_EQ(ops.counts["matmul2"], 3);       // gate/up as one group
  EXPECT_EQ(ops.counts["matmul1"], 3 * 2 + 1);
  EXPECT_EQ(ops.counts["rope"], 6);
  EXPECT_EQ(ops.counts["store_kv"], 3);
  EXPECT_EQ(ops.counts["attention"], 3);
  EXPECT_EQ(ops.counts["all_reduce"], 6);
  EXPECT_EQ(ops.counts["add_bias"], 0);
  EXPECT_EQ(ops.head_counts, (std::vector<std::int32_t>{8, 2, 8, 2, 8, 2}));
  const std::vector<std::string> tail(ops.calls.end() - 4, ops.calls.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"add", "gather", "rms_norm", "matmul1"}));
}

TEST(ModelGraphTest, Qwen2AddsBiasAndQwen3NormsHeads) {
  RecordingOps qwen2;
  llama_graph(spec(true, false), qwen2);
  EXPECT_EQ(qwen2.counts["add_bias"], 9);
  RecordingOps qwen3;
  llama_graph(spec(false, true), qwen3);
  EXPECT_EQ(qwen3.counts["rms_norm"], 2 + 6);  // per-head Q and K norms in every layer
  EXPECT_EQ(qwen3.head_counts, (std::vector<std::int32_t>{8, 2, 8, 2, 8, 2, 8, 2, 8, 2, 8, 2}));
}

TEST(ModelGraphTest, EveryArchitectureHasAGraph) {
  for (const char* name : {"llama", "qwen2", "qwen3"}) {
    const ArchitectureInfo* info = find_architecture(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_NE(info->graph, nullptr) << name;
  }
}

}  // namespace
}  // namespace tern::engine
