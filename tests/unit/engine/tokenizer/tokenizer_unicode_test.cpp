// UTF-8 handling, NFC and the streaming text assembler.
#include <gtest/gtest.h>

#include "engine/tokenizer/text_assembler.h"
#include "engine/tokenizer/unicode_normalization.h"
#include "engine/tokenizer/utf8.h"

namespace tern::engine {
namespace {

TEST(TokenizerUnicode, SanitizeReplacesMaximalSubparts) {
  EXPECT_EQ(sanitize_utf8("abc"), "abc");
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  // E2 82 is a truncated 3-byte sequence: one replacement, then 'x'.
  EXPECT_EQ(sanitize_utf8("\xE2\x82"
                          "x"),
            "\xEF\xBF\xBD"
            "x");
  // A surrogate (ED A0 80) is three maximal subparts of one byte each.
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Overlong encodings are invalid.
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\xA6\x99"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));
}

TEST(TokenizerUnicode, Nfc) {
  EXPECT_EQ(to_nfc("e\xCC\x81"), "\xC3\xA9");  // e + combining acute -> é
  EXPECT_EQ(to_nfc("\xC3\xA9"), "\xC3\xA9");
  // Canonical reordering: dot below (220) before acute (230), then composition.
  EXPECT_EQ(to_nfc("a\xCC\x81\xCC\xA3"), to_nfc("a\xCC\xA3\xCC\x81"));
  // Hangul jamo compose arithmetically: ᄒ ᅡ ᆫ -> 한.
  EXPECT_EQ(to_nfc("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"), "\xED\x95\x9C");
  // Singleton decompositions: the Ohm sign becomes Omega.
  EXPECT_EQ(to_nfc("\xE2\x84\xA6"), "\xCE\xA9");
  EXPECT_EQ(to_lowercase("\xC3\x84"
                         "Bc\xCE\xA3"),
            "\xC3\xA4"
            "bc\xCF\x83");
}

TEST(TokenizerUnicode, AssemblerChunkingDoesNotMatter) {
  const std::string bytes =
      "  \xE4\xB8\xAD\xFF"
      "a\xF0\x9F\xA6";
  std::string whole;
  TextAssembler at_once(1);
  at_once.append(bytes, whole);
  at_once.finish(whole);
  EXPECT_EQ(whole,
            " \xE4\xB8\xAD\xEF\xBF\xBD"
            "a\xEF\xBF\xBD");
  std::string streamed;
  TextAssembler bytewise(1);
  for (char c : bytes) {
    std::string piece;
    bytewise.append(std::string_view(&c, 1), piece);
    EXPECT_TRUE(is_valid_utf8(piece));
    streamed += piece;
  }
  bytewise.finish(streamed);
  EXPECT_EQ(streamed, whole);
}

}  // namespace
}  // namespace tern::engine
