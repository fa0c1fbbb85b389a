#pragma once

// Communication between the ranks of a tensor-parallel group: one model over N devices, one
// worker thread per device (docs/gpu.md, "Tensor parallelism: communication"). Two
// implementations: NCCL on GPUs (nccl_communicator.h, loaded with dlopen) and a rendezvous of
// threads on the emulated device (emulated_communicator.h), on which the group runs in CI.
//
// All-reduce is deterministic in tern: all_gather, then every rank sums the gathered slices in
// rank order with the sum_ranks kernel (all_reduce_sum below). Every rank gets identical bits,
// and the result does not depend on NCCL's reduction algorithm, the batch or the ranks' timing.

#include <cstddef>

#include "engine/backend/cuda/device_runtime.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// One rank of a group; its methods are called by that rank's worker thread (abort by any).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // Every rank's `count` floats at `send` (this rank's device memory) land at
  // recv[r * count, (r + 1) * count) on every rank, r in rank order. Issued on `stream`
  // (asynchronous on a GPU), capturable into a CUDA graph; every rank must call it in the same
  // order with the same count. An error once the group is aborted.
  virtual Status all_gather(const float* send, float* recv, std::size_t count, Stream stream) = 0;
  // After a rank failed: every rank's pending and later collectives end with an error instead of
  // waiting for a peer that will not come (NCCL: ncclCommAbort). Callable from any thread. A rank
  // that fails before a collective must lead to abort(): its peers wait for it otherwise.
  virtual void abort() = 0;
};

// The deterministic all-reduce: `partial` (count floats) of every rank gathered into `gathered`
// (ranks() * count floats of scratch), then summed in rank order into `out` (count floats; may
// be `partial`, not within `gathered`). Issued on `stream`, capturable.
Status all_reduce_sum(Communicator& communicator, DeviceRuntime& runtime, const float* partial,
                      float* gathered, float* out, std::size_t count, Stream stream);

}  // namespace tern::engine::cuda
