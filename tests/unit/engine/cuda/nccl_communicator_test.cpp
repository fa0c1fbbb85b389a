// The NCCL Communicator: NCCL is loaded with dlopen, so a missing library is an error naming it
// and what to install, and without a GPU making a group is an error, never a crash. With a GPU
// (`make test-gpu`), one rank on device 0 gathers, reduces and aborts. A build without CUDA
// says so.

#include "engine/backend/cuda/nccl_communicator.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

#include "engine/backend/cuda/cudart_device_runtime.h"
#include "tests/unit/engine/cuda/device_runtime_test_support.h"

namespace tern::engine::cuda {
namespace {

constexpr int kDevice0[] = {0};

#if defined(TERN_WITH_CUDA)

TEST(NcclCommunicator, AMissingLibraryIsAnErrorNamingItAndWhatToInstall) {
  const auto made = make_nccl_communicators(kDevice0, "libnccl-missing-for-test.so.2");
  ASSERT_FALSE(made.ok());
  const std::string& message = made.error().message;
  EXPECT_EQ(message.rfind("nccl: libnccl-missing-for-test.so.2 not found (dlopen: ", 0), 0u)
      << message;
  EXPECT_NE(message.find("tensor parallelism on GPUs needs NCCL 2"), std::string::npos) << message;
}

TEST(NcclCommunicator, AGroupNeedsDistinctDevices) {
  const int twice[] = {0, 0};
  const auto made = make_nccl_communicators(twice);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().message, "nccl: device 0 is given to two ranks");
  EXPECT_FALSE(make_nccl_communicators({}).ok());
}

bool nccl_installed() {
  void* handle = dlopen(std::string(kNcclLibrary).c_str(), RTLD_NOW | RTLD_LOCAL);
  return handle != nullptr;  // left open: NCCL is not unloaded
}

TEST(NcclCommunicator, WithoutAGpuMakingAGroupIsAnError) {
  if (!nccl_installed()) GTEST_SKIP() << kNcclLibrary << " is not installed here";
  if (make_cuda_device_runtime(0).ok()) GTEST_SKIP() << "this machine has a GPU";
  const auto made = make_nccl_communicators(kDevice0);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().message.rfind("nccl: ncclCommInitAll over devices [0] failed: ", 0), 0u)
      << made.error().message;
}

TEST(NcclCommunicator, OneRankOnAGpuGathersReducesAndAborts) {
  Expected<std::unique_ptr<DeviceRuntime>> made_runtime = make_cuda_device_runtime(0);
  if (!made_runtime.ok()) GTEST_SKIP() << made_runtime.error().message;
  DeviceRuntime& runtime = **made_runtime;
  auto group = make_nccl_communicators(kDevice0);
  ASSERT_TRUE(group.ok()) << group.error().message;
  Communicator& communicator = *(*group)[0];
  EXPECT_EQ(communicator.ranks(), 1);
  const Stream stream = *runtime.create_stream();
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  auto partial = must_allocate(runtime, 12, "partial");
  auto gathered = must_allocate(runtime, 12, "gathered");
  auto out = must_allocate(runtime, 12, "out");
  ASSERT_TRUE(runtime.copy_to_device(partial.get(), values.data(), 12, stream).ok());
  const Status reduced = all_reduce_sum(communicator, runtime, partial.as<float>(),
                                        gathered.as<float>(), out.as<float>(), 3, stream);
  ASSERT_TRUE(reduced.ok()) << reduced.message();
  EXPECT_EQ(download<float>(runtime, gathered, stream), values);
  EXPECT_EQ(download<float>(runtime, out, stream), values);
  communicator.abort();
  const Status later =
      communicator.all_gather(partial.as<float>(), gathered.as<float>(), 3, stream);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.message(), "nccl: communicator aborted: rank 0 failed");
  runtime.destroy_stream(stream);
}

#else

TEST(NcclCommunicator, ABuildWithoutCudaSaysSo) {
  const auto made = make_nccl_communicators(kDevice0);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().message.rfind("nccl: no CUDA in this build", 0), 0u);
}

#endif

}  // namespace
}  // namespace tern::engine::cuda
