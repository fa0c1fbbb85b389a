#pragma once

namespace tern::tools {

// Filled in at build time by write_build_info.cmake.
struct BuildInfo {
  const char* version;
  const char* git_sha;
  const char* build_type;
  const char* compiler;
  bool cuda_compiled;
};

const BuildInfo& build_info();

}  // namespace tern::tools
