// make_codec and the CLI codec plan.
#include <gtest/gtest.h>

#include <string>

#include "compress/codec_plan.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

std::string names(const std::vector<std::shared_ptr<const Codec>>& v) {
  std::string s;
  for (const auto& c : v) {
    if (!s.empty()) s += ',';
    s += c->name();
  }
  return s;
}

std::string config_error(std::string_view all, std::string_view fwd, std::string_view bwd, int layers) {
  try {
    parse_codec_plan(all, fwd, bwd, layers);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MakeCodec, BuildsEveryListedNameAndTheCodecKnowsItsName) {
  EXPECT_EQ(codec_names().size(), 15u);
  for (const auto& n : codec_names()) EXPECT_EQ(make_codec(n)->name(), n);
  EXPECT_TRUE(make_codec("fp32")->lossless());
}

TEST(MakeCodec, RejectsAnUnknownNameListingEveryValidName) {
  for (const char* bad : {"q3", "fp64", "", "Q1", "q1-fp32meta", "q16", "q1 "}) {
    try {
      make_codec(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("unknown codec '" + std::string(bad) + "'"), std::string::npos) << msg;
      for (const auto& n : codec_names()) EXPECT_NE(msg.find(n), std::string::npos) << n;
    }
  }
}

TEST(CodecPlan, DefaultsToFp32EverywhereWhenNothingIsGiven) {
  const auto plan = parse_codec_plan("", "", "", 3);
  EXPECT_EQ(names(plan.forward), "fp32,fp32,fp32");
  EXPECT_EQ(names(plan.backward), "fp32,fp32,fp32");
}

TEST(CodecPlan, AppliesTheSharedSpecToBothDirections) {
  const auto plan = parse_codec_plan("q1", "", "", 2);
  EXPECT_EQ(names(plan.forward), "q1,q1");
  EXPECT_EQ(names(plan.backward), "q1,q1");
  EXPECT_EQ(plan.forward[0].get(), plan.backward[1].get());  // equal names share one object
}

TEST(CodecPlan, TakesPerLayerListsPerDirection) {
  const auto plan = parse_codec_plan("q2", " fp32 , q1-fp16meta ,q1", "bf16", 3);
  EXPECT_EQ(names(plan.forward), "fp32,q1-fp16meta,q1");
  EXPECT_EQ(names(plan.backward), "bf16,bf16,bf16");
  EXPECT_EQ(describe(plan), "fwd fp32,q1-fp16meta,q1 bwd bf16,bf16,bf16");
  const auto per_layer_all = parse_codec_plan("fp32,q8", "", "q4", 2);
  EXPECT_EQ(names(per_layer_all.forward), "fp32,q8");
  EXPECT_EQ(names(per_layer_all.backward), "q4,q4");
}

TEST(CodecPlan, NamesTheBadTokenAndTheValidChoices) {
  auto msg = config_error("", "fp32,q3,q1", "", 3);
  EXPECT_NE(msg.find("forward codec spec 'fp32,q3,q1': 'q3' is not a codec"), std::string::npos) << msg;
  EXPECT_NE(msg.find("q1-bf16meta"), std::string::npos) << msg;
  msg = config_error("fp8", "", "", 1);
  EXPECT_NE(msg.find("shared codec spec 'fp8': 'fp8' is not a codec"), std::string::npos) << msg;
  msg = config_error("", "", "q1,,q1", 3);
  EXPECT_NE(msg.find("backward codec spec 'q1,,q1': name 2 is empty"), std::string::npos) << msg;
}

TEST(CodecPlan, RejectsAListWhoseLengthIsNotTheLayerCount) {
  const auto msg = config_error("", "fp32,q1", "", 3);
  EXPECT_NE(msg.find("lists 2 codecs but the model has 3 layers"), std::string::npos) << msg;
  EXPECT_NE(config_error("q1,q1,q1,q1", "", "", 3), "");
  EXPECT_NE(config_error("q1", "", "", 0), "");
}

}  // namespace
}  // namespace halognn
