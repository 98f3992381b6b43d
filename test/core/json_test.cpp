#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/json.hpp"

namespace halognn {
namespace {

TEST(Json, RoundTripsNestedValuesInOrder) {
  Json o = Json::object();
  o.set("b", 1);
  o.set("a", Json::Array{Json(1.5), Json("x\"y\n"), Json(), Json(true)});
  o.set("big", std::int64_t{1} << 60);
  const Json back = Json::parse(o.dump(2));
  EXPECT_EQ(back.dump(), o.dump());
  EXPECT_EQ(back.as_object()[0].first, "b");
  EXPECT_EQ(back.at("big").as_int(), std::int64_t{1} << 60);
  EXPECT_EQ(back.at("a").as_array()[1].as_string(), "x\"y\n");
}

TEST(Json, DoublesStayDoublesAndNonFiniteBecomesNull) {
  EXPECT_TRUE(Json::parse(Json(2.0).dump()).is_number());
  EXPECT_FALSE(Json::parse(Json(2.0).dump()).is_int());
  EXPECT_TRUE(Json::parse(Json(0.1 + 0.2).dump()).as_double() == 0.1 + 0.2);
  EXPECT_EQ(Json(std::numeric_limits<double>::quiet_NaN()).dump(), "null");
}

TEST(Json, RejectsMalformedText) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01", "\"\\x\"", "nul", "[1] x", "\"a\nb\""})
    EXPECT_THROW(Json::parse(bad), Error) << bad;
}

TEST(Json, DecodesUnicodeEscapes) {
  EXPECT_EQ(Json::parse("\"\\u00e9\\ud83d\\ude00\"").as_string(), "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Json, TypedAccessorsThrowOnMismatch) {
  const Json j = Json::parse("{\"a\": \"s\"}");
  EXPECT_THROW(j.at("a").as_int(), Error);
  EXPECT_THROW(j.at("missing"), Error);
}

}  // namespace
}  // namespace halognn
