#include "engine/backend/cuda/communicator.h"

namespace tern::engine::cuda {

Status all_reduce_sum(Communicator& communicator, DeviceRuntime& runtime, const float* partial,
                      float* gathered, float* out, std::size_t count, Stream stream) {
  if (Status status = communicator.all_gather(partial, gathered, count, stream); !status.ok()) {
    return status;
  }
  return runtime.launched(
      runtime.kernels().sum_ranks(gathered, communicator.ranks(), static_cast<long long>(count),
                                  out, stream.handle),
      "sum_ranks");
}

}  // namespace tern::engine::cuda
