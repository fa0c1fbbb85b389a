#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tern::kernels {
class ThreadPool;
}

namespace tern::tools {

// Measures the read bandwidth of main memory: every thread of the pool streams its share of a
// buffer far larger than the caches. The buffer is allocated and written once, so passes can be
// interleaved with other timed work (decode steps) to compare the two under the same conditions
// of a shared host.
class ReadBandwidthProbe {
 public:
  // An empty probe (bytes() == 0) when the buffer cannot be allocated.
  explicit ReadBandwidthProbe(kernels::ThreadPool& pool);
  ~ReadBandwidthProbe();
  ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
  ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;

  std::size_t bytes() const;
  // Reads the whole buffer once; the wall time in seconds.
  double read_once();

 private:
  struct FreeDeleter {
    void operator()(std::uint64_t* memory) const;
  };
  kernels::ThreadPool& pool_;
  std::unique_ptr<std::uint64_t, FreeDeleter> buffer_;
  std::uint64_t sink_ = 0;
};

}  // namespace tern::tools
