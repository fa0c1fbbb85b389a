// make_cuda_device_runtime in a build without CUDA. A build with CUDA compiles
// cudart_device_runtime.cpp instead (engine/CMakeLists.txt), which defines it over cudart; the
// declaration (cudart_device_runtime.h) is the same in both, so callers need no #if.
#include "engine/backend/cuda/cudart_device_runtime.h"

#if !defined(TERN_WITH_CUDA)

namespace tern::engine::cuda {

Expected<std::unique_ptr<DeviceRuntime>> make_cuda_device_runtime(int) {
  return Error{"cuda: no CUDA in this build (configure with nvcc available, TERN_CUDA=AUTO or ON)"};
}

}  // namespace tern::engine::cuda

#endif
