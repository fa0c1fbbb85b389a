#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/expected.h"
#include "kernels/tensor_type.h"

namespace tern::engine {

// A benchmark aid: `--model random:SHAPE:TYPE[:SEED]` names a model of a known shape with seeded
// random weights, made in memory in seconds (random_model.h), so a GPU run needs no download and
// no 16 GB file. Its text is random tokens; only its speed means anything.

// The mixture-of-experts part of a shape; count == 0 for a dense model.
struct RandomExpertShape {
  int count = 0;                // routed experts per layer
  int used = 0;                 // routed experts per token
  int ffn = 0;                  // each expert's FFN length (the shared experts' too)
  int shared = 0;               // shared experts (DeepSeek), together `shared * ffn` long
  int leading_dense = 0;        // the first layers keep the dense FFN (DeepSeek)
  int groups = 1;               // group-limited routing (DeepSeek-V3): groups, of which
  int groups_used = 1;          // this many are chosen per token
  bool sigmoid_scores = false;  // DeepSeek-V3: sigmoid scores plus a selection bias per expert
  bool normalize_weights = true;
  float weight_scale = 1.0f;  // routed_scaling_factor
};

// Multi-head latent attention (DeepSeek-V2/V3, GGUF `deepseek2`); kv_lora == 0: plain attention.
struct RandomLatentShape {
  int q_lora = 0;  // 0: a plain query projection
  int kv_lora = 0;
  int rope = 0;   // the rotated part of each key, shared by all heads
  int nope = 0;   // the part of each key without RoPE
  int value = 0;  // each head's value length
};

struct RandomModelShape {
  std::string_view name;
  std::string_view about;  // one line: what the shape is modelled on
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;  // the dense FFN (of the leading dense layers, with experts)
  int vocab = 0;
  int context = 0;
  float rope_theta = 10000.0f;
  float rms_norm_eps = 1e-5f;
  RandomExpertShape experts{};
  RandomLatentShape latent{};

  std::string_view architecture() const { return latent.kv_lora > 0 ? "deepseek2" : "llama"; }
  bool is_moe_layer(int layer) const { return experts.count > 0 && layer >= experts.leading_dense; }
};

// Every known shape, smallest first.
std::span<const RandomModelShape> random_model_shapes();
const RandomModelShape* find_random_model_shape(std::string_view name);
// The weight types a random model can take (matrices and embeddings; norms stay F32).
std::span<const kernels::TensorType> random_model_types();

// Every weight's element count, from the shape alone.
std::uint64_t parameter_count(const RandomModelShape& shape);

struct RandomModelSpec {
  const RandomModelShape* shape = nullptr;
  kernels::TensorType type = kernels::TensorType::f32;
  std::uint64_t seed = 0;
  std::string text;  // as given: what logs and errors name the model by
};

// Whether `model` (a --model value or a config path) asks for a random model.
bool is_random_model_spec(std::string_view model);
// "random:SHAPE:TYPE" or "random:SHAPE:TYPE:SEED" (SEED a decimal integer, default 0); TYPE is
// case-insensitive. An unknown shape or type is an error that lists the known ones.
Expected<RandomModelSpec> parse_random_model_spec(std::string_view text);

}  // namespace tern::engine
