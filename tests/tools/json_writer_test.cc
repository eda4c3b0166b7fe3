#include "tools/json_writer.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::tools {
namespace {

TEST(JsonWriterTest, ObjectKeysAreSortedBytewise) {
  const Json j = Json::Object(
      {{"b", Json::Int(1)}, {"a", Json::Int(2)}, {"B", Json::Null()}});
  EXPECT_EQ(j.Dump(), "{\"B\": null, \"a\": 2, \"b\": 1}");
}

TEST(JsonWriterTest, ScalarsAndNesting) {
  const Json j = Json::Array({Json::Bool(true), Json::Bool(false),
                              Json::Int(-9007199254740993), Json::Array({}),
                              Json::Object({}), Json::String("x")});
  EXPECT_EQ(j.Dump(), "[true, false, -9007199254740993, [], {}, \"x\"]");
}

TEST(JsonWriterTest, FloatsUseTheShortestRoundTripText) {
  EXPECT_EQ(Json::Float32(0.1f).Dump(), "0.1");
  EXPECT_EQ(Json::Float32(4.0f).Dump(), "4");
  EXPECT_EQ(Json::Float32(-0.25f).Dump(), "-0.25");
  EXPECT_EQ(Json::Float32(1.0f / 3.0f).Dump(), "0.33333334");
  EXPECT_EQ(Json::Float32(16777217.0f).Dump(), "16777216");
  EXPECT_EQ(Json::Float32(1e20f).Dump(), "1e+20");
  EXPECT_EQ(Json::Float32(-0.0f).Dump(), "-0");
  EXPECT_EQ(Json::Float64(0.1).Dump(), "0.1");
  EXPECT_EQ(Json::Float64(1.0 / 3.0).Dump(), "0.3333333333333333");
  EXPECT_EQ(Json::Float64(static_cast<double>(0.1f)).Dump(),
            "0.10000000149011612");
  EXPECT_EQ(Json::Float64(5e-324).Dump(), "5e-324");
}

TEST(JsonWriterTest, NonFiniteFloatsAreStrings) {
  EXPECT_EQ(Json::Float32(std::numeric_limits<float>::quiet_NaN()).Dump(),
            "\"NaN\"");
  EXPECT_EQ(Json::Float32(std::numeric_limits<float>::infinity()).Dump(),
            "\"Infinity\"");
  EXPECT_EQ(Json::Float64(-std::numeric_limits<double>::infinity()).Dump(),
            "\"-Infinity\"");
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(JsonQuote(std::string("\x00\x01\x1f\x7f", 4)),
            "\"\\u0000\\u0001\\u001f\\u007f\"");
}

TEST(JsonWriterTest, ValidUtf8IsWrittenAsIs) {
  EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(JsonWriterTest, InvalidUtf8BytesBecomeSurrogateEscapes) {
  // A lone continuation byte, a truncated sequence, an overlong encoding, an
  // encoded surrogate.
  EXPECT_EQ(JsonQuote("\xff"), "\"\\udcff\"");
  EXPECT_EQ(JsonQuote("a\x80z"), "\"a\\udc80z\"");
  EXPECT_EQ(JsonQuote("\xe2\x82"), "\"\\udce2\\udc82\"");
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\udcc0\\udcaf\"");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\udced\\udca0\\udc80\"");
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), "\"\\udcf4\\udc90\\udc80\\udc80\"");
}

}  // namespace
}  // namespace tpusim::tools
