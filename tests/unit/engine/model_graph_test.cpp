// The Llama graph over a recording op table: one call per op per layer whatever the batch, in
// the order the architecture needs, with the per-rank sizes of its GraphSpec.
#include <gtest/gtest.h>

#include <algorithm>
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

// DeepSeek-V3's shape: layer 0 dense, layers 1-2 routed with shared experts, latent attention.
TEST(ModelGraphTest, DeepSeekRoutesExpertsAddsSharedOnesAndAttendsOverTheLatent) {
  GraphSpec deepseek = spec(false, false);
  deepseek.latent_attention = true;
  deepseek.q_lora = true;
  deepseek.shared_experts = true;
  deepseek.moe_layers = {false, true, true};
  RecordingOps ops;
  llama_graph(deepseek, ops);
  EXPECT_EQ(ops.counts["store_kv"], 0);
  EXPECT_EQ(ops.counts["attention"], 0);
  EXPECT_EQ(ops.counts["rope"], 0);  // inside store_latent_kv and latent_attention
  EXPECT_EQ(ops.counts["store_latent_kv"], 3);
  EXPECT_EQ(ops.counts["latent_attention"], 3);
  EXPECT_EQ(ops.counts["route_experts"], 2);
  EXPECT_EQ(ops.counts["expert_ffn"], 2);
  // q_a with kv_a in every layer, gate/up in the dense layer and the shared experts.
  EXPECT_EQ(ops.counts["matmul2"], 3 + 1 + 2);
  EXPECT_EQ(ops.counts["rms_norm"], 2 + 3);  // q_a_norm in every layer
  // Layer 1's FFN, after its norm: the router, the routed experts, then the shared experts
  // added to them.
  const auto first_route = std::find(ops.calls.begin(), ops.calls.end(), "route_experts");
  ASSERT_NE(first_route, ops.calls.end());
  const std::vector<std::string> moe(first_route - 1, first_route + 7);
  EXPECT_EQ(moe, (std::vector<std::string>{"matmul1", "route_experts", "expert_ffn", "matmul2",
                                           "silu_mul", "matmul1", "add", "all_reduce"}));
}

TEST(ModelGraphTest, MixtralRoutesEveryLayerWithoutSharedExperts) {
  GraphSpec mixtral = spec(false, false);
  mixtral.moe_layers = {true, true, true};
  RecordingOps ops;
  llama_graph(mixtral, ops);
  EXPECT_EQ(ops.counts["route_experts"], 3);
  EXPECT_EQ(ops.counts["expert_ffn"], 3);
  EXPECT_EQ(ops.counts["matmul2"], 0);
  EXPECT_EQ(ops.counts["silu_mul"], 0);
  EXPECT_EQ(ops.counts["store_kv"], 3);
}

TEST(ModelGraphTest, EveryArchitectureHasAGraph) {
  for (const char* name : {"llama", "qwen2", "qwen3", "qwen3moe", "deepseek2"}) {
    const ArchitectureInfo* info = find_architecture(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_NE(info->graph, nullptr) << name;
  }
}

}  // namespace
}  // namespace tern::engine
