#include "engine/backend/cuda/nccl_communicator.h"

#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tern::engine::cuda {
namespace {

// The NCCL functions tern calls, resolved from the library; nccl.h gives only their types.
struct NcclApi {
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;

  std::string describe(ncclResult_t result) const {
    int version = 0;
    get_version(&version);
    return fmt::format("{} (NCCL {}.{}.{})", get_error_string(result), version / 10000,
                       version % 10000 / 100, version % 100);
  }
};

template <class Function>
Status resolve(void* handle, std::string_view library, const char* symbol, Function& into) {
  dlerror();
  into = reinterpret_cast<Function>(dlsym(handle, symbol));
  if (into != nullptr) return Status::success();
  const char* reason = dlerror();
  return Error{
      fmt::format("nccl: {} has no {} (dlsym: {}): tensor parallelism needs NCCL 2.4 or "
                  "later",
                  library, symbol, reason != nullptr ? reason : "null")};
}

// Never dlclosed: NCCL's proxy threads and handlers outlive its communicators.
Expected<NcclApi> load_nccl(std::string_view library) {
  const std::string name(library);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return Error{fmt::format(
        "nccl: {} not found (dlopen: {}): tensor parallelism on GPUs needs NCCL 2 (the libnccl2 "
        "package of NVIDIA's CUDA repository, or the nvidia-nccl-cu* wheel's lib directory on "
        "LD_LIBRARY_PATH)",
        name, reason != nullptr ? reason : "unknown reason")};
  }
  NcclApi api;
  for (Status status : {resolve(handle, name, "ncclGetErrorString", api.get_error_string),
                        resolve(handle, name, "ncclGetVersion", api.get_version),
                        resolve(handle, name, "ncclCommInitAll", api.comm_init_all),
                        resolve(handle, name, "ncclAllGather", api.all_gather),
                        resolve(handle, name, "ncclCommAbort", api.comm_abort),
                        resolve(handle, name, "ncclCommDestroy", api.comm_destroy)}) {
    if (!status.ok()) {
      dlclose(handle);
      return status.error();
    }
  }
  return api;
}

// The communicators of one group. A rank's calls and abort hold that rank's mutex: NCCL allows
// one thread at a time on a communicator.
class NcclGroup {
 public:
  NcclGroup(NcclApi api, std::vector<ncclComm_t> comms)
      : api_(api), comms_(std::move(comms)), mutexes_(comms_.size()) {}

  ~NcclGroup() {
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) api_.comm_destroy(comm);
    }
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int ranks() const { return static_cast<int>(comms_.size()); }

  Status all_gather(int rank, const float* send, float* recv, std::size_t count, Stream stream) {
    const auto self = static_cast<std::size_t>(rank);
    const std::lock_guard lock(mutexes_[self]);
    if (const int by = aborted_by_.load(); by >= 0) return aborted(by);
    const ncclResult_t result = api_.all_gather(send, recv, count, ncclFloat, comms_[self],
                                                static_cast<cudaStream_t>(stream.handle));
    if (result == ncclSuccess) return Status::success();
    return Error{fmt::format("nccl: ncclAllGather of {} floats on rank {} failed: {}", count, rank,
                             api_.describe(result))};
  }

  void abort(int by) {
    int none = -1;
    if (!aborted_by_.compare_exchange_strong(none, by)) return;
    for (std::size_t r = 0; r < comms_.size(); ++r) {
      const std::lock_guard lock(mutexes_[r]);
      if (comms_[r] == nullptr) continue;
      api_.comm_abort(comms_[r]);  // frees it; its result says nothing the caller can act on
      comms_[r] = nullptr;
    }
  }

 private:
  static Status aborted(int by) {
    return Error{fmt::format("nccl: communicator aborted: rank {} failed", by)};
  }

  NcclApi api_;
  std::vector<ncclComm_t> comms_;
  std::vector<std::mutex> mutexes_;
  std::atomic<int> aborted_by_{-1};
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int ranks() const override { return group_->ranks(); }
  Status all_gather(const float* send, float* recv, std::size_t count, Stream stream) override {
    return group_->all_gather(rank_, send, recv, count, stream);
  }
  void abort() override { group_->abort(rank_); }

 private:
  std::shared_ptr<NcclGroup> group_;
  int rank_;
};

}  // namespace

Expected<std::vector<std::unique_ptr<Communicator>>> make_nccl_communicators(
    std::span<const int> devices, std::string_view library) {
  if (devices.empty()) return Error{"nccl: a communicator group needs a device"};
  std::set<int> seen;
  for (const int device : devices) {
    if (device < 0) return Error{fmt::format("nccl: there is no device {}", device)};
    if (!seen.insert(device).second) {
      return Error{fmt::format("nccl: device {} is given to two ranks", device)};
    }
  }
  Expected<NcclApi> api = load_nccl(library);
  if (!api.ok()) return api.error();
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  if (const ncclResult_t result =
          api->comm_init_all(comms.data(), static_cast<int>(devices.size()), devices.data());
      result != ncclSuccess) {
    std::string listed;
    for (const int device : devices)
      listed += (listed.empty() ? "" : ", ") + std::to_string(device);
    return Error{fmt::format("nccl: ncclCommInitAll over devices [{}] failed: {}", listed,
                             api->describe(result))};
  }
  auto group = std::make_shared<NcclGroup>(*api, std::move(comms));
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int rank = 0; rank < group->ranks(); ++rank) {
    communicators.push_back(std::make_unique<NcclCommunicator>(group, rank));
  }
  return communicators;
}

}  // namespace tern::engine::cuda
