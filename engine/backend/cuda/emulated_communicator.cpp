#include "engine/backend/cuda/emulated_communicator.h"

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "kernels/simt/device_memory.h"

namespace tern::engine::cuda {
namespace {

// More floats than any emulated device holds: a count past it is a bad argument, not memory.
constexpr std::size_t kMaxFloats = std::size_t{1} << 40;

bool device_span(const float* begin, std::size_t count) {
  if (count == 0) return true;
  return begin != nullptr && count <= kMaxFloats && simt::is_device_address(begin) &&
         simt::is_device_address(begin + count);
}

// Where the ranks of one group meet: a generation-counted barrier, and each rank's send buffer
// of the collective in progress.
class Rendezvous {
 public:
  explicit Rendezvous(int ranks)
      : ranks_(ranks),
        sends_(static_cast<std::size_t>(ranks)),
        counts_(static_cast<std::size_t>(ranks)) {}

  Status gather(int rank, const float* send, float* recv, std::size_t count) {
    const auto self = static_cast<std::size_t>(rank);
    std::unique_lock lock(mutex_);
    sends_[self] = device_span(send, count) ? send : nullptr;
    counts_[self] = count;
    if (!arrive_and_wait(lock)) return aborted();
    // Every rank has published, and none publishes again before the second barrier, which it
    // passes only once every rank has copied.
    const Status agreed = agreement();
    const std::vector<const float*> sends = sends_;
    lock.unlock();
    const Status copied = agreed.ok() ? copy(sends, recv, count) : agreed;
    lock.lock();
    if (!arrive_and_wait(lock)) return aborted();
    return copied;
  }

  void abort(int rank) {
    {
      const std::lock_guard lock(mutex_);
      if (!aborted_by_) aborted_by_ = rank;
    }
    changed_.notify_all();
  }

  Status check_not_aborted() {
    const std::lock_guard lock(mutex_);
    return aborted_by_ ? aborted() : Status::success();
  }

 private:
  // Arrives at the barrier and waits for every rank: false when the group is aborted first.
  bool arrive_and_wait(std::unique_lock<std::mutex>& lock) {
    if (aborted_by_) return false;
    const std::uint64_t generation = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return true;
    }
    changed_.wait(lock, [&] { return generation_ != generation || aborted_by_.has_value(); });
    return generation_ != generation;
  }

  // The same verdict on every rank (all read the same published values), so that a bad
  // collective fails everywhere and the group stays in step.
  Status agreement() const {
    for (int r = 0; r < ranks_; ++r) {
      const auto at = static_cast<std::size_t>(r);
      if (counts_[at] != counts_[0]) {
        return Error{fmt::format(
            "cuda-emulated: all_gather with different counts: rank 0 sends {}, rank {} sends {}",
            counts_[0], r, counts_[at])};
      }
      if (sends_[at] == nullptr && counts_[at] != 0) {
        return Error{fmt::format(
            "cuda-emulated: all_gather: rank {}'s {} floats to send are not device memory", r,
            counts_[at])};
      }
    }
    return Status::success();
  }

  Status copy(const std::vector<const float*>& sends, float* recv, std::size_t count) const {
    if (!device_span(recv, count * static_cast<std::size_t>(ranks_))) {
      return Error{
          fmt::format("cuda-emulated: all_gather: the {} floats to receive are not device memory",
                      count * static_cast<std::size_t>(ranks_))};
    }
    // memmove: a rank may send from its own slice of recv (an in-place all-gather).
    for (std::size_t r = 0; r < sends.size(); ++r) {
      if (count != 0) std::memmove(recv + r * count, sends[r], count * sizeof(float));
    }
    return Status::success();
  }

  Status aborted() const {
    return Error{fmt::format("cuda-emulated: communicator aborted: rank {} failed", *aborted_by_)};
  }

  const int ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
  int arrived_ = 0;
  std::optional<int> aborted_by_;
  std::vector<const float*> sends_;  // null for a buffer that is not device memory
  std::vector<std::size_t> counts_;
};

class EmulatedCommunicator final : public Communicator {
 public:
  EmulatedCommunicator(DeviceRuntime& runtime, std::shared_ptr<Rendezvous> rendezvous, int rank,
                       int ranks)
      : runtime_(runtime), rendezvous_(std::move(rendezvous)), rank_(rank), ranks_(ranks) {}

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }

  // The host work holds the rendezvous, so a captured graph may outlive this communicator.
  Status all_gather(const float* send, float* recv, std::size_t count, Stream stream) override {
    if (Status status = rendezvous_->check_not_aborted(); !status.ok()) return status;
    return runtime_.enqueue_host(
        [rendezvous = rendezvous_, rank = rank_, send, recv, count]() -> Status {
          return rendezvous->gather(rank, send, recv, count);
        },
        stream);
  }

  void abort() override { rendezvous_->abort(rank_); }

 private:
  DeviceRuntime& runtime_;
  std::shared_ptr<Rendezvous> rendezvous_;
  int rank_;
  int ranks_;
};

}  // namespace

Expected<std::vector<std::unique_ptr<Communicator>>> make_emulated_communicators(
    DeviceRuntime& emulated_runtime, std::span<const int> devices) {
  if (emulated_runtime.name() != "cuda-emulated") {
    return Error{fmt::format(
        "cuda-emulated: the emulated communicator needs the emulated device runtime, not {}",
        emulated_runtime.name())};
  }
  if (devices.empty()) return Error{"cuda-emulated: a communicator group needs a device"};
  std::set<int> seen;
  for (const int device : devices) {
    if (device < 0 || device >= emulated_runtime.device_count()) {
      return Error{fmt::format("cuda-emulated: there is no device {}; the emulated machine has {}",
                               device, emulated_runtime.device_count())};
    }
    if (!seen.insert(device).second) {
      return Error{fmt::format("cuda-emulated: device {} is given to two ranks", device)};
    }
  }
  const int ranks = static_cast<int>(devices.size());
  auto rendezvous = std::make_shared<Rendezvous>(ranks);
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int rank = 0; rank < ranks; ++rank) {
    communicators.push_back(
        std::make_unique<EmulatedCommunicator>(emulated_runtime, rendezvous, rank, ranks));
  }
  return communicators;
}

}  // namespace tern::engine::cuda
