#include "engine/backend/cuda/device_model_weights.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kernels/cuda/weight_formats.h"
#include "kernels/tensor_type.h"

namespace tern::engine::cuda {
namespace {

using kernels::TensorType;

constexpr std::uint64_t kAlignment = 256;  // every tensor starts where any vector load may
constexpr std::uint64_t kCopyChunkBytes = std::uint64_t{64} << 20;
constexpr auto kLogInterval = std::chrono::seconds(2);

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// Places tensors in one device allocation. Run once without a base to measure, then again with
// the allocation's base to hand out the device pointers: the same calls give the same offsets.
class Packer {
 public:
  // `rows` rows of `row_bytes` bytes, `source_stride` bytes apart on the host, placed back to
  // back from `offset`: a row-parallel slice takes a byte range of every row.
  struct Piece {
    const std::byte* host;
    std::uint64_t rows;
    std::uint64_t source_stride;
    std::uint64_t row_bytes;
    std::uint64_t offset;

    std::uint64_t bytes() const { return rows * row_bytes; }
    bool contiguous() const { return rows <= 1 || source_stride == row_bytes; }
  };

  explicit Packer(std::byte* base) : base_(base) {}

  // Host bytes already placed are placed once: a tied output matrix (or a rank's vocabulary
  // rows of it) is part of the embedding table.
  const void* place(const void* host, std::uint64_t bytes) {
    if (host == nullptr || bytes == 0) return nullptr;
    const auto* begin = static_cast<const std::byte*>(host);
    if (std::optional<std::uint64_t> offset = placed_offset(begin, bytes)) return at(*offset);
    contiguous_.emplace(reinterpret_cast<std::uintptr_t>(begin), Span{bytes, total_});
    return at(add({begin, 1, bytes, bytes, total_}));
  }
  const void* place_rows(const std::byte* host, std::uint64_t rows, std::uint64_t source_stride,
                         std::uint64_t row_bytes) {
    if (rows <= 1 || source_stride == row_bytes) return place(host, rows * row_bytes);
    return at(add({host, rows, source_stride, row_bytes, total_}));
  }
  // values[range], or nullptr for a vector the model does not have.
  const float* place(const std::vector<float>& values, IndexRange range) {
    if (values.empty()) return nullptr;
    return static_cast<const float*>(place(
        values.data() + range.begin, static_cast<std::uint64_t>(range.count) * sizeof(float)));
  }
  const float* place(const std::vector<float>& values) {
    return place(values, {0, static_cast<std::int64_t>(values.size())});
  }
  // The slice's rows, each cut to the slice's columns: whole blocks, so a byte range of the row.
  kernels::cuda::DeviceWeights place(const WeightTensor& tensor, MatrixSlice slice) {
    const kernels::TensorTypeTraits traits = kernels::tensor_type_traits(tensor.type);
    const auto blocks_bytes = [&](std::int64_t elements) {
      return static_cast<std::uint64_t>(elements / traits.block_elements * traits.block_bytes);
    };
    const std::byte* first = tensor.data +
                             static_cast<std::uint64_t>(slice.rows.begin) * tensor.row_bytes +
                             blocks_bytes(slice.cols.begin);
    return {tensor.type, static_cast<int>(slice.rows.count), static_cast<int>(slice.cols.count),
            place_rows(first, static_cast<std::uint64_t>(slice.rows.count), tensor.row_bytes,
                       blocks_bytes(slice.cols.count))};
  }
  kernels::cuda::DeviceWeights place(const WeightTensor& tensor) {
    return place(tensor, {{0, tensor.rows}, {0, tensor.cols}});
  }

  std::uint64_t total() const { return total_; }
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  struct Span {
    std::uint64_t bytes;
    std::uint64_t offset;
  };

  std::uint64_t add(const Piece& piece) {
    pieces_.push_back(piece);
    total_ += (piece.bytes() + kAlignment - 1) / kAlignment * kAlignment;
    return piece.offset;
  }
  // The offset of [host, host + bytes) inside a contiguous piece already placed, if it is one.
  std::optional<std::uint64_t> placed_offset(const std::byte* host, std::uint64_t bytes) const {
    const auto address = reinterpret_cast<std::uintptr_t>(host);
    auto it = contiguous_.upper_bound(address);
    if (it == contiguous_.begin()) return std::nullopt;
    --it;
    const std::uint64_t into = address - it->first;
    if (into + bytes > it->second.bytes) return std::nullopt;
    return it->second.offset + into;
  }
  const void* at(std::uint64_t offset) const { return base_ == nullptr ? nullptr : base_ + offset; }

  std::byte* base_;
  std::uint64_t total_ = 0;
  std::map<std::uintptr_t, Span> contiguous_;  // by host address
  std::vector<Piece> pieces_;
};

// A matrix the kernels can read as stored: a known format, whole blocks per row, rows back to
// back, and sizes that fit the kernels' int arguments.
Status check_matrix(const ModelWeights& weights, const WeightTensor& tensor, std::string_view name,
                    std::int64_t layer) {
  const std::string where = layer < 0 ? fmt::format("{}: {}", weights.path(), name)
                                      : fmt::format("{}: layer {} {}", weights.path(), layer, name);
  if (kernels::cuda::weight_block_elements(tensor.type) == 0) {  // no kernel reads it
    return Error{
        fmt::format("{} has type {}, which the CUDA kernels do not read (they take F32, "
                    "F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K)",
                    where, kernels::tensor_type_name(tensor.type))};
  }
  const kernels::TensorTypeTraits traits = kernels::tensor_type_traits(tensor.type);
  if (tensor.cols % traits.block_elements != 0 ||
      tensor.row_bytes !=
          static_cast<std::size_t>(tensor.cols / traits.block_elements * traits.block_bytes)) {
    return Error{fmt::format("{}: rows of {} {} values are not whole blocks of {}", where,
                             tensor.cols, kernels::tensor_type_name(tensor.type),
                             traits.block_elements)};
  }
  if (tensor.rows > 0x7fffffff || tensor.cols > 0x7fffffff) {
    return Error{fmt::format("{}: {} x {} is too large for the CUDA kernels", where, tensor.rows,
                             tensor.cols)};
  }
  return Status::success();
}

}  // namespace

bool reads_q8_1_activations(TensorType type) {
  return type != TensorType::f32 && type != TensorType::f16 && type != TensorType::bf16;
}

Expected<DeviceModelWeights> DeviceModelWeights::upload(DeviceRuntime& runtime, Stream stream,
                                                        const ModelWeights& weights,
                                                        const ModelTables& tables,
                                                        RankSlice slice) {
  if (Status valid = check_matrix(weights, weights.token_embedding(), "token_embd", -1);
      !valid.ok()) {
    return valid.error();
  }
  if (Status valid = check_matrix(weights, weights.output(), "output", -1); !valid.ok()) {
    return valid.error();
  }
  for (std::size_t i = 0; i < weights.layers().size(); ++i) {
    const LayerWeights& layer = weights.layers()[i];
    const std::pair<const WeightTensor*, std::string_view> matrices[] = {
        {&layer.wq, "attn_q"},      {&layer.wk, "attn_k"},       {&layer.wv, "attn_v"},
        {&layer.wo, "attn_output"}, {&layer.w_gate, "ffn_gate"}, {&layer.w_up, "ffn_up"},
        {&layer.w_down, "ffn_down"}};
    for (const auto& [tensor, name] : matrices) {
      if (Status valid = check_matrix(weights, *tensor, name, static_cast<std::int64_t>(i));
          !valid.ok()) {
        return valid.error();
      }
    }
  }

  const Expected<RankShape> shape = rank_shape(weights, slice);
  if (!shape.ok()) return shape.error();
  const ModelConfig& config = weights.config();

  DeviceModelWeights result;
  auto bind = [&](Packer& packer) {
    const auto matrix = [&](const WeightTensor& tensor, Matrix name) {
      return packer.place(tensor, held_matrix(config, slice, name));
    };
    const auto vector = [&](const std::vector<float>& values, Vector name) {
      return packer.place(
          values, held_vector(config, slice, name, static_cast<std::int64_t>(values.size())));
    };
    result.matrices_.clear();
    result.vectors_.clear();
    result.token_embedding_ = packer.place(weights.token_embedding());
    result.output_ = matrix(weights.output(), Matrix::output);
    for (std::size_t i = 0; i < weights.layers().size(); ++i) {
      const LayerWeights& source = weights.layers()[i];
      result.matrices_.push_back({matrix(source.wq, Matrix::wq), matrix(source.wk, Matrix::wk),
                                  matrix(source.wv, Matrix::wv), matrix(source.wo, Matrix::wo),
                                  matrix(source.w_gate, Matrix::w_gate),
                                  matrix(source.w_up, Matrix::w_up),
                                  matrix(source.w_down, Matrix::w_down)});
      const ModelTables::Layer& table = tables.layers[i];
      result.vectors_.push_back(
          {vector(table.attn_norm, Vector::attn_norm), vector(table.ffn_norm, Vector::ffn_norm),
           vector(table.bq, Vector::bq), vector(table.bk, Vector::bk), vector(table.bv, Vector::bv),
           vector(table.q_norm, Vector::q_norm), vector(table.k_norm, Vector::k_norm)});
    }
    result.output_norm_ = packer.place(tables.output_norm);
    result.rope_inverse_frequencies_ = packer.place(tables.rope_inverse_frequencies);
    result.rope_pairs_ = static_cast<int>(tables.rope_inverse_frequencies.size());
  };
  Packer measure(nullptr);
  bind(measure);
  auto memory = DeviceAllocation::create(runtime, measure.total(),
                                         fmt::format("the weights of {}", weights.path()));
  if (!memory) return memory.error();
  result.memory_ = std::move(*memory);
  Packer packer(result.memory_.as<std::byte>());
  bind(packer);

  // Large models take a while even over PCIe: progress as the CPU loader logs it.
  const auto start = std::chrono::steady_clock::now();
  auto last_log = start;
  const std::uint64_t total = packer.total();
  std::uint64_t done = 0;
  auto copy = [&](std::byte* device, const std::byte* host, std::uint64_t bytes) -> Status {
    if (Status copied = runtime.copy_to_device(device, host, bytes, stream); !copied.ok()) {
      return copied;
    }
    done += bytes;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_log >= kLogInterval) {
      last_log = now;
      spdlog::info("uploading {} to {}: {:.0f} / {:.0f} MiB ({:.0f}%)", weights.path(),
                   runtime.name(), mib(done), mib(total),
                   100.0 * static_cast<double>(done) / static_cast<double>(total));
    }
    return Status::success();
  };
  // Row-parallel slices are gathered row by row into a host buffer, a chunk at a time.
  std::vector<std::byte> staging;
  for (const Packer::Piece& piece : packer.pieces()) {
    std::byte* device = result.memory_.as<std::byte>() + piece.offset;
    if (piece.contiguous()) {
      for (std::uint64_t at = 0; at < piece.bytes(); at += kCopyChunkBytes) {
        if (Status copied =
                copy(device + at, piece.host + at, std::min(kCopyChunkBytes, piece.bytes() - at));
            !copied.ok()) {
          return copied.error();
        }
      }
      continue;
    }
    const std::uint64_t rows_per_chunk =
        std::max<std::uint64_t>(1, kCopyChunkBytes / piece.row_bytes);
    for (std::uint64_t row = 0; row < piece.rows; row += rows_per_chunk) {
      const std::uint64_t rows = std::min(rows_per_chunk, piece.rows - row);
      // The previous chunk's copy may still read the buffer.
      if (Status synced = runtime.synchronize(stream); !synced.ok()) return synced.error();
      staging.resize(std::max<std::size_t>(staging.size(), rows * piece.row_bytes));
      for (std::uint64_t r = 0; r < rows; ++r) {
        std::memcpy(staging.data() + r * piece.row_bytes,
                    piece.host + (row + r) * piece.source_stride, piece.row_bytes);
      }
      if (Status copied =
              copy(device + row * piece.row_bytes, staging.data(), rows * piece.row_bytes);
          !copied.ok()) {
        return copied.error();
      }
    }
  }
  if (Status synced = runtime.synchronize(stream); !synced.ok()) return synced.error();
  spdlog::info("{}: {:.1f} MiB of weights on {}{} in {:.2f} s", weights.path(), mib(total),
               runtime.name(),
               slice.ranks > 1 ? fmt::format(" (rank {} of {})", slice.rank, slice.ranks) : "",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return result;
}

const kernels::cuda::DeviceWeights& DeviceModelWeights::matrix(std::int32_t layer,
                                                               Matrix name) const {
  if (name == Matrix::output) return output_;
  return matrices_[static_cast<std::size_t>(layer)][name];
}

const float* DeviceModelWeights::vector(VectorRef ref) const {
  if (ref.name == Vector::output_norm) return output_norm_;
  return layer_vector(vectors_[static_cast<std::size_t>(ref.layer)], ref.name);
}

}  // namespace tern::engine::cuda
