#pragma once

// The CUDA runtime API for kernel launchers: the real one, or the SIMT emulator's where the
// launchers are compiled by the host compiler for the emulated build (TERN_SIMT_EMULATED).

#if defined(TERN_SIMT_EMULATED)
#include "kernels/simt/cuda_runtime.h"
#else
#include <cuda_runtime_api.h>
#endif
