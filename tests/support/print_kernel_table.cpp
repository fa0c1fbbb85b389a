// Prints the CUDA kernel table of the build it is linked with (nvcc's or the emulator's), one
// kernel per line: name, then its parameter types. CTest compares the two builds' output. Each
// build's types live in its own inline namespace (kernels/cuda/cuda_namespace.h), which is left
// out of the comparison.

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "kernels/cuda/kernel_table.h"

namespace {

std::string demangled_type(const char* mangled) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  std::string text = status == 0 && name ? name.get() : mangled;
  for (const std::string inline_namespace : {"cuda::device::", "cuda::emulated::"}) {
    for (std::size_t at = text.find(inline_namespace); at != std::string::npos;
         at = text.find(inline_namespace, at))
      text.replace(at, inline_namespace.size(), "cuda::");
  }
  return text;
}

}  // namespace

int main() {
  for (const tern::kernels::cuda::KernelEntry& entry : tern::kernels::cuda::kernel_table())
    std::printf("%s %s\n", entry.name, demangled_type(entry.signature).c_str());
  return 0;
}
