#pragma once

// TERN_SIMT_ASAN is defined when the emulator is built under AddressSanitizer (GCC or Clang),
// which must be told about fiber switches and about fiber stacks that are unmapped.
#if defined(__SANITIZE_ADDRESS__)
#define TERN_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TERN_SIMT_ASAN 1
#endif
#endif
