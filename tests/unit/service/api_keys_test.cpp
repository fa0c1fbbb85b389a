#include "service/api_keys.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

// A missing key and a wrong one get different messages.
TEST(ApiKeysTest, MissingIsToldApartFromWrong) {
  const ApiKeys keys({"alpha"});
  EXPECT_EQ(keys.check("Bearer alpha"), ApiKeys::Verdict::allowed);
  EXPECT_EQ(keys.check(""), ApiKeys::Verdict::missing);
  EXPECT_EQ(keys.check("Bearer "), ApiKeys::Verdict::missing);
  EXPECT_EQ(keys.check("Bearer    "), ApiKeys::Verdict::missing);
  EXPECT_EQ(keys.check("Basic YWxwaGE="), ApiKeys::Verdict::missing);
  EXPECT_EQ(keys.check("Bearer beta"), ApiKeys::Verdict::wrong);
  EXPECT_EQ(ApiKeys({}).check(""), ApiKeys::Verdict::allowed);
}

// Anthropic's x-api-key carries the key when no Bearer key came; a wrong Bearer key stays wrong.
TEST(ApiKeysTest, XApiKeyBesideBearer) {
  const ApiKeys keys({"alpha"});
  EXPECT_EQ(keys.check("", "alpha"), ApiKeys::Verdict::allowed);
  EXPECT_EQ(keys.check("", " alpha "), ApiKeys::Verdict::allowed);
  EXPECT_EQ(keys.check("", "beta"), ApiKeys::Verdict::wrong);
  EXPECT_EQ(keys.check("", ""), ApiKeys::Verdict::missing);
  EXPECT_EQ(keys.check("Bearer alpha", "beta"), ApiKeys::Verdict::allowed);
  EXPECT_EQ(keys.check("Bearer beta", "alpha"), ApiKeys::Verdict::wrong);
  EXPECT_EQ(keys.check("Basic YWxwaGE=", "alpha"), ApiKeys::Verdict::allowed);
  EXPECT_EQ(ApiKeys({}).check("", "anything"), ApiKeys::Verdict::allowed);
}

TEST(ApiKeysTest, BearerInConstantTime) {
  const ApiKeys keys({"alpha", "beta"});
  EXPECT_TRUE(keys.allows("Bearer alpha"));
  EXPECT_TRUE(keys.allows("bearer beta"));
  EXPECT_FALSE(keys.allows("Bearer alph"));
  EXPECT_FALSE(keys.allows("Bearer alphaa"));
  EXPECT_FALSE(keys.allows("alpha"));
  EXPECT_FALSE(keys.allows(""));
  EXPECT_TRUE(ApiKeys({}).allows(""));
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
}

// A key is one identity whichever header carries it (admission's share, the owner of a stored
// response): before, `Authorization: Bearer k` and `x-api-key: k` were two clients.
TEST(ApiKeysTest, AKeyIsOneIdentityWhicheverHeaderCarriesIt) {
  const ApiKeys keys({"alpha", "beta"});
  EXPECT_EQ(keys.identity("Bearer alpha", ""), "key:0");
  EXPECT_EQ(keys.identity("bearer  alpha ", ""), "key:0");
  EXPECT_EQ(keys.identity("", "alpha"), "key:0");
  EXPECT_EQ(keys.identity("Bearer ", "alpha"), "key:0");
  EXPECT_EQ(keys.identity("Basic YWxwaGE=", "alpha"), "key:0");
  EXPECT_EQ(keys.identity("Bearer beta", ""), "key:1");
  EXPECT_EQ(keys.identity("", "beta"), "key:1");
  // The Bearer key wins, as it does for the check.
  EXPECT_EQ(keys.identity("Bearer beta", "alpha"), "key:1");
  EXPECT_EQ(keys.identity("Bearer gamma", ""), "");
  EXPECT_EQ(keys.identity("", ""), "");
  EXPECT_EQ(ApiKeys({}).identity("Bearer alpha", ""), "");
  // A key listed twice is one identity: its first place.
  EXPECT_EQ(ApiKeys({"alpha", "beta", "alpha"}).identity("", "alpha"), "key:0");
}

}  // namespace
}  // namespace tern::service
