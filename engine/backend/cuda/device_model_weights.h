#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/batch_ops.h"
#include "engine/backend/cuda/device_runtime.h"
#include "engine/backend/layer_matrices.h"
#include "engine/backend/tensor_parallel_shape.h"
#include "engine/expected.h"
#include "engine/model/model_tables.h"
#include "engine/model/model_weights.h"
#include "kernels/cuda/launch_types.h"

namespace tern::engine::cuda {

// Whether the CUDA matrix kernels (GEMV, GEMM) and the embedding gather read `type`.
// Whether a matmul over weights of `type` takes Q8_1-quantized activations (integer formats).
bool reads_q8_1_activations(kernels::TensorType type);

// A model's weights in device memory, uploaded once: every matrix in the bytes its file holds
// (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K stay as they are; the kernels read them so), the norms,
// biases and RoPE frequencies as f32 from ModelTables. One allocation for all of it, so a model
// that does not fit fails at once with the size it needs and the memory free.
//
// With tensor parallelism (a RankSlice of more than one rank) only the rank's part is uploaded
// (engine/backend/tensor_parallel_shape.h): column-parallel matrices as their range of rows,
// row-parallel ones (wo, w_down) as every row's range of whole blocks, packed so that each is a
// matrix of its own ([hidden][its columns]) to the kernels; bq, bk and bv sliced like their
// matrices, the embedding, the norms and the RoPE table whole.
class DeviceModelWeights {
 public:
  struct LayerVectors {
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* bq = nullptr;  // nullptr without QKV bias
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* q_norm = nullptr;  // nullptr without per-head Q/K norms
    const float* k_norm = nullptr;
    const float* q_a_norm = nullptr;  // latent attention, which this backend refuses
  };

  // Copies on `stream` and waits for them; errors name the model file and the tensor, or the
  // numbers that keep the model from splitting over slice.ranks devices.
  static Expected<DeviceModelWeights> upload(DeviceRuntime& runtime, Stream stream,
                                             const ModelWeights& weights, const ModelTables& tables,
                                             RankSlice slice = {});

  const kernels::cuda::DeviceWeights& matrix(std::int32_t layer, Matrix name) const;
  // nullptr for a vector the model does not have; bq, bk and bv hold the rank's values only.
  const float* vector(VectorRef ref) const;
  // [vocab][hidden] in the file's type, for the embedding gather.
  const kernels::cuda::DeviceWeights& token_embedding() const { return token_embedding_; }
  const float* rope_inverse_frequencies() const { return rope_inverse_frequencies_; }
  int rope_pairs() const { return rope_pairs_; }
  std::uint64_t bytes() const { return memory_.bytes(); }

 private:
  using LayerMatrices = engine::LayerMatrices<kernels::cuda::DeviceWeights>;

  DeviceAllocation memory_;
  std::vector<LayerMatrices> matrices_;
  std::vector<LayerVectors> vectors_;
  kernels::cuda::DeviceWeights token_embedding_{};
  kernels::cuda::DeviceWeights output_{};
  const float* output_norm_ = nullptr;
  const float* rope_inverse_frequencies_ = nullptr;
  int rope_pairs_ = 0;
};

}  // namespace tern::engine::cuda
