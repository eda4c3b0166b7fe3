// tools/json_reader: what json_writer writes reads back exactly; bad text is
// an error naming the byte offset.

#include "tools/json_reader.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

TEST(JsonReaderTest, ReadsWhatTheWriterWrites) {
  const Json written = Json::Object(
      {{"a", Json::Int(-12)},
       {"b", Json::Float64(0.1)},
       {"c", Json::Array({Json::Bool(true), Json::Bool(false), Json::Null()})},
       {"d", Json::String("x\"y\\z\n\xc3\xa9\x80")},
       {"e", Json::Object({{"f", Json::Float64(1e-300)}})}});
  absl::StatusOr<JsonValue> v = ParseJson(written.Dump());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->kind, JsonValue::Kind::kObject);
  EXPECT_EQ(v->Get("a").number, -12);
  EXPECT_EQ(v->Get("b").number, 0.1);
  ASSERT_EQ(v->Get("c").items.size(), 3u);
  EXPECT_TRUE(v->Get("c").items[0].boolean);
  EXPECT_FALSE(v->Get("c").items[1].boolean);
  EXPECT_EQ(v->Get("c").items[1].kind, JsonValue::Kind::kBool);
  EXPECT_EQ(v->Get("c").items[2].kind, JsonValue::Kind::kNull);
  // The invalid byte 0x80 comes back through json_writer's \udc80.
  EXPECT_EQ(v->Get("d").string, "x\"y\\z\n\xc3\xa9\x80");
  EXPECT_EQ(v->Get("e").Get("f").number, 1e-300);
  EXPECT_EQ(v->Get("missing").kind, JsonValue::Kind::kNull);
}

TEST(JsonReaderTest, SurrogatePairsBecomeUtf8) {
  absl::StatusOr<JsonValue> v = ParseJson("[\"\\ud83d\\ude00\\u00e9\"]");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->items[0].string, "\xf0\x9f\x98\x80\xc3\xa9");
}

TEST(JsonReaderTest, BadTextNamesTheOffset) {
  EXPECT_EQ(ParseJson("{\"a\": 1,}").status().message(),
            "JSON: at byte 8: expected '\"', found '}'");
  EXPECT_EQ(ParseJson("[1 2]").status().message(),
            "JSON: at byte 3: expected ',' or ']', found '2'");
  EXPECT_EQ(ParseJson("{} x").status().message(),
            "JSON: at byte 3: expected end of text, found 'x'");
  EXPECT_EQ(ParseJson("").status().message(),
            "JSON: at byte 0: expected a value, found the end");
  EXPECT_EQ(ParseJson(std::string(100, '[')).status().message(),
            "JSON: at byte 65: expected nesting of at most 64, found '['");
}

}  // namespace
}  // namespace tpusim::tools
