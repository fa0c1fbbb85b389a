// make_nccl_communicators in a build without CUDA. A build with CUDA compiles
// nccl_communicator.cpp instead (engine/CMakeLists.txt); the declaration (nccl_communicator.h)
// is the same in both, so callers need no #if.
#include "engine/backend/cuda/nccl_communicator.h"

#if !defined(TERN_WITH_CUDA)

namespace tern::engine::cuda {

Expected<std::vector<std::unique_ptr<Communicator>>> make_nccl_communicators(std::span<const int>,
                                                                             std::string_view) {
  return Error{"nccl: no CUDA in this build (configure with nvcc available, TERN_CUDA=AUTO or ON)"};
}

}  // namespace tern::engine::cuda

#endif
