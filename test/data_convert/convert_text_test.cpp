// LINQS and MUSAE text converters and detection on small hand-written fixtures.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/data/converters.hpp"
#include "core/error.hpp"
#include "test/data_convert/test_util.hpp"

namespace halognn {
namespace {
namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string input_error(const std::string& input, const ConvertOptions& o = {}) {
  try {
    convert_dataset(input, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

TEST(LinqsConverter, SmallFixtureMapsIdsClassesAndEdges) {
  const fs::path d = test::fresh_temp_dir("linqs_ok");
  write_text(d / "toy.content", "p9\t1\t0\tB\np3\t0\t1\tA\np5\t1\t1\tB\n");
  write_text(d / "toy.cites", "p9\tp3\np5\tp5\nzz\tp3\n");
  const Dataset ds = convert_dataset(d.string(), {});
  EXPECT_EQ(ds.num_nodes, 3);
  EXPECT_EQ(ds.labels, (std::vector<std::int32_t>{1, 0, 1}));
  EXPECT_EQ(ds.edge_src, (std::vector<GlobalId>{1, 2}));  // citing -> cited
  EXPECT_EQ(ds.edge_dst, (std::vector<GlobalId>{0, 2}));
  EXPECT_EQ(ds.meta.at("citations_dropped").get<std::int64_t>(), 1);
  EXPECT_FLOAT_EQ(ds.features(2, 1), 1.0f);
  fs::remove_all(d);
}

TEST(LinqsConverter, MalformedContentNamesTheFileAndLine) {
  const fs::path d = test::fresh_temp_dir("linqs_bad");
  write_text(d / "toy.content", "p9\t1\t0\tB\np3\t0\tB\n");
  write_text(d / "toy.cites", "p9\tp3\n");
  std::string msg = input_error(d.string());
  EXPECT_NE(msg.find("toy.content"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  write_text(d / "toy.content", "p9\t1\t0\tB\np3\t0\tx\tB\n");
  msg = input_error(d.string());
  EXPECT_NE(msg.find("toy.content"), std::string::npos) << msg;
  write_text(d / "toy.content", "p9\t1\t0\tB\np3\t0\t1\tB\n");
  write_text(d / "toy.cites", "p9 p3\n");
  msg = input_error(d.string());
  EXPECT_NE(msg.find("toy.cites"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(MusaeConverter, QuotedCommasInNamesDoNotShiftTheClass) {
  const fs::path d = test::fresh_temp_dir("musae_ok");
  write_text(d / "fb_edges.csv", "id_1,id_2\n0,1\n2,2\n");
  write_text(d / "fb.json", R"({"1": [3], "0": [0, 2]})");
  write_text(d / "fb_target.csv",
             "id,facebook_id,page_name,page_type\n0,11,\"Shop, Inc.\",company\n1,12,X,tvshow\n"
             "2,13,\"a,b,c\",company\n");
  const Dataset ds = convert_dataset(d.string(), {});
  EXPECT_EQ(ds.num_nodes, 3);
  EXPECT_EQ(ds.labels, (std::vector<std::int32_t>{0, 1, 0}));
  EXPECT_EQ(ds.num_features(), 4);
  EXPECT_FLOAT_EQ(ds.features(0, 2), 1.0f);
  EXPECT_FLOAT_EQ(ds.features(1, 3), 1.0f);
  EXPECT_EQ(ds.meta.at("features_missing").get<std::int64_t>(), 1);  // node 2 has no feature entry
  fs::remove_all(d);
}

TEST(MusaeConverter, MalformedCsvAndJsonNameTheFile) {
  const fs::path d = test::fresh_temp_dir("musae_bad");
  write_text(d / "fb_edges.csv", "id_1,id_2\n0,1\n0;2\n");
  write_text(d / "fb.json", R"({"1": [3], "0": [0, 2]})");
  write_text(d / "fb_target.csv", "id,facebook_id,page_name,page_type\n0,1,a,x\n1,2,b,y\n2,3,c,x\n");
  std::string msg = input_error(d.string());
  EXPECT_NE(msg.find("fb_edges.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  write_text(d / "fb_edges.csv", "id_1,id_2\n0,1\n");
  write_text(d / "fb.json", R"({"1": [3], "0": [0, 2)");
  msg = input_error(d.string());
  EXPECT_NE(msg.find("fb.json"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(SourceDetection, AnEmptyFolderOrUnknownFormatIsAnInputError) {
  const fs::path d = test::fresh_temp_dir("detect_empty");
  EXPECT_THROW(detect_source(d.string(), {}), InputError);
  EXPECT_THROW(detect_source((d / "nope").string(), {}), InputError);
  EXPECT_THROW(parse_format("csv"), ConfigError);
  EXPECT_EQ(parse_format("gnn-benchmark"), SourceFormat::gnn_benchmark);
  fs::remove_all(d);
}

}  // namespace
}  // namespace halognn
