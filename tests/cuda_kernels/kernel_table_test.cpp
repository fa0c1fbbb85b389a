// Every __global__ kernel in kernels/cuda is in the kernel table that both builds export, once.

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "kernels/cuda/kernel_table.h"
#include "tests/cuda_kernels/device_test_support.h"

namespace tern::kernels::cuda {
namespace {

std::string base_name(const std::string& entry) {
  std::string name = entry;
  if (!name.empty() && name.front() == '(') name.erase(0, 1);
  return name.substr(0, name.find('<'));
}

TEST(KernelTable, ListsEveryKernelOfTheSourcesOnce) {
  std::set<std::string> listed;
  std::set<std::string> entries;
  for (const KernelEntry& entry : kernel_table()) {
    EXPECT_TRUE(entries.insert(entry.name).second) << entry.name << " is listed twice";
    EXPECT_NE(std::string(entry.signature), "") << entry.name;
    listed.insert(base_name(entry.name));
  }
  const std::regex global_kernel(
      R"(__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\()");
  std::set<std::string> defined;
  for (const auto& file : std::filesystem::directory_iterator(
           std::filesystem::path(TERN_SOURCE_DIR) / "kernels/cuda")) {
    std::ifstream in(file.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (std::sregex_iterator it(source.begin(), source.end(), global_kernel), end; it != end; ++it)
      defined.insert((*it)[1]);
  }
  ASSERT_FALSE(defined.empty());
  for (const std::string& kernel : defined)
    EXPECT_TRUE(listed.contains(kernel))
        << kernel << " is not in the kernel table: add it to its launcher's TERN_KERNEL_TABLE_PART";
  for (const std::string& kernel : listed)
    EXPECT_TRUE(defined.contains(kernel)) << kernel << " is listed but not defined in kernels/cuda";
}

}  // namespace
}  // namespace tern::kernels::cuda
