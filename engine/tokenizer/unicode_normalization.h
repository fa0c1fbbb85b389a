#pragma once

// Unicode NFC and lowercase for the tokenizer.json normalizers. The data comes from tables
// generated out of Python's unicodedata (Unicode 14, the version PCRE2 10.42 also uses), so no
// ICU is needed at run time. Input must be valid UTF-8.
#include <string>
#include <string_view>

namespace tern::engine {

std::string to_nfc(std::string_view text);

// Full per-code-point lowercase mapping, as Rust's char::to_lowercase (no final-sigma context).
std::string to_lowercase(std::string_view text);

}  // namespace tern::engine
