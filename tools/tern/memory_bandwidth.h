#pragma once

namespace tern::kernels {
class ThreadPool;
}

namespace tern::tools {

// Measured read bandwidth of main memory in bytes/s with every thread of `pool` streaming its
// share of a buffer far larger than the caches; the median of a few passes.
double measure_read_bandwidth(kernels::ThreadPool& pool);

}  // namespace tern::tools
