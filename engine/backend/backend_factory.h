#pragma once

// The one place a Backend is built. The served model, the CLI and the tests name a kind in a
// BackendSpec; none of them builds a backend by hand, so adding a backend touches this file and
// the backend's own folder only.
#include <memory>
#include <string_view>

#include "engine/backend/backend.h"
#include "engine/backend/backend_spec.h"
#include "engine/backend/device.h"
#include "engine/expected.h"
#include "engine/model/model_weights.h"

namespace tern::kernels {
class ThreadPool;
}

namespace tern::engine {

// Why `spec` cannot run where `devices` were found, or success. cpu runs anywhere but takes no
// devices. For cuda, in this order: its CudaOptions out of range; no CUDA in this build; no
// usable device (the runtime's own message); an ordinal in `devices` that the machine lacks; more
// than one device (tensor parallelism is issue 16). A cuda spec is never served on the CPU
// instead. cuda-emulated runs in every build on no GPU at all: its options out of
// range (the emulated machine's included), an ordinal the emulated machine lacks, or more than
// one device (tensor parallelism is issue 16). Cheap enough to ask before any weights are read.
Status check_backend_available(const BackendSpec& spec, const DeviceReport& devices);

// The same on this machine; asks the CUDA runtime only for a cuda spec.
Status check_backend_available(const BackendSpec& spec);

// Builds the backend `spec` names over `weights`, or says why it cannot (the message starts
// with "backend KIND: "; for cuda-emulated, a model that does not fit the emulated device's memory
// names the sizes). `weights` and `pool` (the CPU backend's compute threads) must outlive the
// backend.
Expected<std::unique_ptr<Backend>> create_backend(const BackendSpec& spec,
                                                  const ModelWeights& weights,
                                                  kernels::ThreadPool& pool);

}  // namespace tern::engine
