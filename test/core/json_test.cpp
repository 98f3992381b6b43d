// The JSON helpers around nlohmann::ordered_json: order, exact integers, strict typed members,
// errors that name their origin.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/json.hpp"

namespace halognn {
namespace {

TEST(Json, RoundTripsNestedValuesInInsertionOrder) {
  Json o = Json::object();
  o["b"] = 1;
  o["a"] = Json::array({1.5, "x\"y\n", nullptr, true});
  o["big"] = std::int64_t{1} << 60;
  const Json back = parse_json(dump_json(o, 2), "test");
  EXPECT_EQ(back.begin().key(), "b");
  EXPECT_EQ(json_int(back, "big", "test"), std::int64_t{1} << 60);
  EXPECT_EQ(back["a"][1].get<std::string>(), "x\"y\n");
  EXPECT_EQ(dump_json(back), dump_json(o));
}

TEST(Json, DoublesStayDoublesAndNonFiniteBecomesNull) {
  EXPECT_TRUE(parse_json(dump_json(Json(2.0)), "t").is_number_float());
  EXPECT_EQ(parse_json(dump_json(Json(0.1 + 0.2)), "t").get<double>(), 0.1 + 0.2);
  EXPECT_EQ(dump_json(Json(std::numeric_limits<double>::quiet_NaN())), "null");
}

TEST(Json, MalformedTextIsAnInputErrorNamingItsOrigin) {
  // "[1e903]": a number beyond double, which the library reports as out_of_range rather than as a
  // parse error (found by fuzz_json).
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01", "\"\\x\"", "nul", "[1] 2", "[1e903]"}) {
    try {
      parse_json(bad, "some/file.json");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("some/file.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos) << e.what();
    }
  }
}

TEST(Json, DecodesUnicodeEscapesAndReplacesInvalidUtf8WhenWriting) {
  EXPECT_EQ(parse_json("\"\\u00e9\\ud83d\\ude00\"", "t").get<std::string>(),
            "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(dump_json(Json("a\xff")), "\"a\xef\xbf\xbd\"");
}

TEST(Json, TypedMembersAreStrictAndNameTheKey) {
  const Json j = parse_json(R"({"s": "x", "f": 2.0, "b": true, "i": 3})", "m.json");
  EXPECT_EQ(json_int(j, "i", "m.json"), 3);
  EXPECT_EQ(json_number(j, "i", "m.json"), 3.0);
  EXPECT_EQ(json_string(j, "s", "m.json"), "x");
  EXPECT_TRUE(json_bool(j, "b", "m.json"));
  for (const char* key : {"s", "f", "b", "missing"}) {
    try {
      json_int(j, key, "m.json");
      ADD_FAILURE() << key << " accepted as an integer";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("m.json"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("\"") + key + "\""), std::string::npos) << what;
    }
  }
  EXPECT_THROW(json_bool(j, "i", "m.json"), InputError);
  EXPECT_THROW(json_string(j, "i", "m.json"), InputError);
}

}  // namespace
}  // namespace halognn
