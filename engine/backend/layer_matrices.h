#pragma once

#include <cstdint>

#include "engine/backend/batch_ops.h"
#include "kernels/cpu/kv_store.h"

namespace tern::engine {

// How a backend's per-layer weights are named and sized, written once for every backend.

// A decoder layer's matrices in the form a backend prepared them (WeightMatrix on the CPU, device
// descriptors on a GPU), looked up by the name the graph uses.
template <class Matrix_>
struct LayerMatrices {
  Matrix_ wq, wk, wv, wo, w_gate, w_up, w_down;
  Matrix_ router, shared_gate, shared_up, shared_down, q_a, q_b, kv_a;

  // `output` belongs to no layer: callers keep it apart.
  const Matrix_& operator[](Matrix name) const {
    switch (name) {
      case Matrix::router:
        return router;
      case Matrix::shared_gate:
        return shared_gate;
      case Matrix::shared_up:
        return shared_up;
      case Matrix::shared_down:
        return shared_down;
      case Matrix::q_a:
        return q_a;
      case Matrix::q_b:
        return q_b;
      case Matrix::kv_a:
        return kv_a;
      case Matrix::wq:
        return wq;
      case Matrix::wk:
        return wk;
      case Matrix::wv:
        return wv;
      case Matrix::wo:
        return wo;
      case Matrix::w_gate:
        return w_gate;
      case Matrix::w_up:
        return w_up;
      case Matrix::w_down:
      case Matrix::output:
        break;
    }
    return w_down;
  }
};

// A layer's vector by the name the graph uses, from any struct with the graph's field names
// (ModelTables::Layer on the CPU, device pointers on a GPU). `output_norm` belongs to no layer.
template <class Layer>
const auto& layer_vector(const Layer& layer, Vector name) {
  switch (name) {
    case Vector::attn_norm:
      return layer.attn_norm;
    case Vector::ffn_norm:
      return layer.ffn_norm;
    case Vector::bq:
      return layer.bq;
    case Vector::bk:
      return layer.bk;
    case Vector::bv:
      return layer.bv;
    case Vector::q_norm:
      return layer.q_norm;
    case Vector::q_a_norm:
      return layer.q_a_norm;
    case Vector::k_norm:
    case Vector::output_norm:
      break;
  }
  return layer.k_norm;
}

// Bytes one KV block takes across all layers: a K and a V block of `layout` per layer.
inline std::uint64_t kv_block_bytes_all_layers(const kernels::KvCacheLayout& layout,
                                               std::int32_t n_layers) {
  return 2ull * kernels::kv_block_bytes(layout) * static_cast<std::uint64_t>(n_layers);
}

// Values per row of an activation buffer, from the rank's shape (see Activation).
template <class Shape>
std::int64_t activation_width(const Shape& shape, Activation activation) {
  switch (activation) {
    case Activation::q:
      return shape.q_width();
    case Activation::attention:
      return shape.attention_width();
    case Activation::router_logits:
      return shape.n_experts;
    case Activation::shared_gate:
    case Activation::shared_up:
      return shape.shared_expert_ffn;
    case Activation::q_lora:
      return shape.q_lora_rank;
    case Activation::latent:
      return shape.latent_width();
    case Activation::k:
    case Activation::v:
      return shape.kv_width();
    case Activation::gate:
    case Activation::up:
      return shape.ffn;
    case Activation::logits:
      return shape.vocab;
    case Activation::x:
    case Activation::normed:
    case Activation::projected:
    case Activation::shared_out:
    case Activation::logit_rows:
      break;
  }
  return shape.hidden;
}

}  // namespace tern::engine
