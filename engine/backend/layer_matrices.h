#pragma once

#include "engine/backend/batch_ops.h"

namespace tern::engine {

// A decoder layer's matrices in the form a backend prepared them (WeightMatrix on the CPU, device
// descriptors on a GPU), looked up by the name the graph uses.
template <class Matrix_>
struct LayerMatrices {
  Matrix_ wq, wk, wv, wo, w_gate, w_up, w_down;

  // `output` belongs to no layer: callers keep it apart.
  const Matrix_& operator[](Matrix name) const {
    switch (name) {
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

// Values per row of an activation buffer, from the rank's shape (see Activation).
template <class Shape>
std::int64_t activation_width(const Shape& shape, Activation activation) {
  switch (activation) {
    case Activation::q:
    case Activation::attention:
      return shape.q_width();
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
    case Activation::logit_rows:
      break;
  }
  return shape.hidden;
}

}  // namespace tern::engine
