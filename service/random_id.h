#pragma once

// Identifiers the server hands out (response, message, tool-call and request ids). They name
// stored responses that only their owner may read, so they must not be guessable from the ids a
// client has seen: every one is drawn from the kernel's cryptographic generator.
#include <cstddef>
#include <string>
#include <string_view>

namespace tern::service {

// 128 random bits as 32 lowercase hex digits.
inline constexpr std::size_t kRandomIdBytes = 16;

// Appends `bytes` random bytes to `out` as 2 * bytes hex digits. The bytes come from
// getrandom(2), read a few kilobytes at a time into a per-thread buffer, so an id costs a copy,
// not a system call.
void append_random_hex(std::string& out, std::size_t bytes = kRandomIdBytes);

// `prefix`, then `separator`, then 32 random hex digits: "chatcmpl-3f9a…".
std::string random_id(std::string_view prefix, std::string_view separator = "-");

}  // namespace tern::service
