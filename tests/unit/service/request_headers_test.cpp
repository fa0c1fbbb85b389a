#include "service/request_headers.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tern::service {
namespace {

TEST(RequestIdTest, ClientIdsThatCannotForgeLogFieldsAreKept) {
  EXPECT_TRUE(usable_request_id("probe-42"));
  EXPECT_TRUE(usable_request_id("3f2a9c1e-7b4d-4e8a-9f00-123456789abc"));
  EXPECT_TRUE(usable_request_id("trace:span.1_a"));
  EXPECT_TRUE(usable_request_id(std::string(128, 'a')));
  EXPECT_FALSE(usable_request_id(""));
  EXPECT_FALSE(usable_request_id(std::string(129, 'a')));
  EXPECT_FALSE(usable_request_id("a b"));
  EXPECT_FALSE(usable_request_id("a\"b"));
  EXPECT_FALSE(usable_request_id("a=b"));
  EXPECT_FALSE(usable_request_id("a\nb"));
}

TEST(RequestIdTest, FreshIdsAreUsableAndDistinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_request_id();
    EXPECT_EQ(id.size(), 32u);
    EXPECT_TRUE(usable_request_id(id)) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(ContentTypeTest, OnlyJsonIsJson) {
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("Application/JSON"));
  EXPECT_TRUE(is_json_content_type("application/json; charset=utf-8"));
  EXPECT_TRUE(is_json_content_type(" application/json ;charset=utf-8"));
  EXPECT_FALSE(is_json_content_type(""));
  EXPECT_FALSE(is_json_content_type("text/plain"));
  EXPECT_FALSE(is_json_content_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(is_json_content_type("multipart/form-data; boundary=x"));
  EXPECT_FALSE(is_json_content_type("application/jsonp"));
  EXPECT_FALSE(is_json_content_type("application/json-seq"));
}

}  // namespace
}  // namespace tern::service
