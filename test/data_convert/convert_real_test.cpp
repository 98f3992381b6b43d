// Each converter on the real files of shared/datasets, checked against the counts that the
// dataset's PROVENANCE.md states. Skipped when the shared folder is absent.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/data/converters.hpp"
#include "core/data/dataset.hpp"
#include "test/data_convert/test_util.hpp"

namespace halognn {
namespace {

struct Stats {
  std::int64_t undirected = 0, self_loops = 0, isolated = 0, feature_nnz = 0, unlabelled = 0;
  std::vector<std::int64_t> class_sizes;
};

Stats stats_of(const Dataset& ds) {
  Stats s;
  GraphBuildStats b;
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst, &b);
  s.undirected = g.num_directed_edges() / 2;
  s.self_loops = b.self_loops_dropped;
  for (GlobalId v = 0; v < g.num_nodes; ++v) s.isolated += g.degree(v) == 0;
  const float* x = ds.features.data();
  for (std::int64_t i = 0; i < ds.features.size(); ++i) s.feature_nnz += x[i] != 0.0f;
  s.class_sizes.assign(ds.num_classes, 0);
  for (std::int32_t l : ds.labels) l < 0 ? ++s.unlabelled : ++s.class_sizes[l];
  return s;
}

/// The path of `rel` under shared/datasets, or "" (the test then skips).
std::string shared(const std::string& rel) {
  const std::string root = test::shared_datasets();
  if (root.empty()) return {};
  const auto p = std::filesystem::path(root) / rel;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

#define SHARED_OR_SKIP(var, rel)                                                  \
  const std::string var = shared(rel);                                            \
  if (var.empty()) GTEST_SKIP() << "shared/datasets/" << (rel) << " not present"

void expect_split(const Dataset& ds, std::size_t train, std::size_t val, std::size_t test) {
  EXPECT_EQ(ds.train_idx.size(), train);
  EXPECT_EQ(ds.val_idx.size(), val);
  EXPECT_EQ(ds.test_idx.size(), test);
  EXPECT_NO_THROW(validate_dataset(ds, "converted"));
}

TEST(PlanetoidConverter, CoraFolderIsDetectedAsPlanetoidWithThePublicSplit) {
  SHARED_OR_SKIP(dir, "cora");
  const SourceLocation src = detect_source(dir, {});
  EXPECT_EQ(src.format, SourceFormat::planetoid);
  EXPECT_EQ(src.name, "cora");
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 2708);
  EXPECT_EQ(ds.edge_src.size(), 10858u);
  EXPECT_EQ(s.undirected, 5278);
  EXPECT_EQ(ds.num_features(), 1433);
  EXPECT_EQ(s.feature_nnz, 49216);
  EXPECT_EQ(ds.num_classes, 7);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{351, 217, 418, 818, 426, 298, 180}));
  expect_split(ds, 140, 500, 1000);
  EXPECT_EQ(ds.train_idx.front(), 0);
  EXPECT_EQ(ds.train_idx.back(), 139);
  EXPECT_EQ(ds.val_idx.front(), 140);
  EXPECT_EQ(ds.test_idx.front(), 1708);
  EXPECT_EQ(ds.test_idx.back(), 2707);
  EXPECT_EQ(ds.meta.at("features_missing").get<std::int64_t>(), 0);
  EXPECT_TRUE(dataset_warnings(ds).empty());
}

TEST(PlanetoidConverter, CiteseerAbsentIdsGetZeroFeaturesAndNoLabel) {
  SHARED_OR_SKIP(dir, "citeseer");
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 3327);
  EXPECT_EQ(s.undirected, 4552);
  EXPECT_EQ(s.self_loops, 248);
  EXPECT_EQ(ds.num_features(), 3703);
  EXPECT_EQ(s.feature_nnz, 105165);
  EXPECT_EQ(ds.num_classes, 6);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{249, 590, 668, 701, 596, 508}));
  EXPECT_EQ(s.unlabelled, 15);
  EXPECT_EQ(ds.meta.at("features_missing").get<std::int64_t>(), 15);
  expect_split(ds, 120, 500, 1000);
  EXPECT_EQ(dataset_warnings(ds).size(), 1u);
}

TEST(PlanetoidConverter, PubmedWithoutAllxKeepsWhatExistsAndWarns) {
  SHARED_OR_SKIP(dir, "pubmed");
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 19717);
  EXPECT_EQ(s.undirected, 44324);
  EXPECT_EQ(ds.num_features(), 500);
  EXPECT_EQ(s.feature_nnz, 2819 + 50140);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{4103, 7739, 7875}));
  EXPECT_EQ(ds.meta.at("features_missing").get<std::int64_t>(), 18657);
  expect_split(ds, 60, 500, 1000);
  const auto w = dataset_warnings(ds);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("allx is missing"), std::string::npos);
}

TEST(LinqsConverter, CoraTextFilesGiveTheSameGraphWithAShchurSplit) {
  SHARED_OR_SKIP(dir, "cora");
  ConvertOptions o;
  o.format = SourceFormat::linqs;
  o.seed = 3;
  const Dataset ds = convert_dataset(dir, o);
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 2708);
  EXPECT_EQ(ds.edge_src.size(), 5429u);
  EXPECT_EQ(s.undirected, 5278);
  EXPECT_EQ(s.feature_nnz, 49216);
  // Classes in sorted-name order: Case_Based .. Theory.
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{298, 418, 818, 426, 217, 180, 351}));
  expect_split(ds, 140, 210, 2708 - 350);
}

TEST(LinqsConverter, CiteseerDropsCitationsOfUnknownPapers) {
  SHARED_OR_SKIP(dir, "citeseer");
  ConvertOptions o;
  o.format = SourceFormat::linqs;
  const Dataset ds = convert_dataset(dir, o);
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 3312);
  EXPECT_EQ(s.undirected, 4536);
  EXPECT_EQ(s.self_loops, 124);
  EXPECT_EQ(s.feature_nnz, 105165);
  EXPECT_EQ(ds.meta.at("citations_dropped").get<std::int64_t>(), 17);
  EXPECT_EQ(ds.num_classes, 6);
  expect_split(ds, 120, 180, 3312 - 300);
}

TEST(GnnBenchmarkConverter, AmazonPhotoCountsMatchProvenance) {
  SHARED_OR_SKIP(dir, "amazon-photo");
  EXPECT_EQ(detect_source(dir, {}).format, SourceFormat::gnn_benchmark);
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 7650);
  EXPECT_EQ(ds.edge_src.size(), 143663u);
  EXPECT_EQ(s.undirected, 119081);
  EXPECT_EQ(s.self_loops, 1);
  EXPECT_EQ(s.isolated, 115);
  EXPECT_EQ(ds.num_features(), 745);
  EXPECT_EQ(s.feature_nnz, 1979909);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{369, 1686, 703, 915, 882, 823, 1941, 331}));
  EXPECT_EQ(ds.meta.at("class_names").size(), 8u);
  expect_split(ds, 160, 240, 7650 - 400);
}

TEST(GnnBenchmarkConverter, LargestComponentMatchesThePitfallsStatistics) {
  SHARED_OR_SKIP(dir, "amazon-photo");
  ConvertOptions o;
  o.largest_component = true;
  const Dataset ds = convert_dataset(dir, o);
  EXPECT_EQ(ds.num_nodes, 7487);
  EXPECT_EQ(stats_of(ds).undirected, 119043);
  EXPECT_EQ(stats_of(ds).isolated, 0);
  expect_split(ds, 160, 240, 7487 - 400);
}

TEST(GraphDataConverter, AmazonComputersCountsMatchProvenance) {
  SHARED_OR_SKIP(dir, "amazon-computers");
  EXPECT_EQ(detect_source(dir, {}).format, SourceFormat::graphdata);
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 13752);
  EXPECT_EQ(ds.edge_src.size(), 287209u);
  EXPECT_EQ(s.undirected, 245861);
  EXPECT_EQ(s.isolated, 281);
  EXPECT_EQ(ds.num_features(), 767);
  EXPECT_EQ(s.feature_nnz, 3675081);
  EXPECT_EQ(s.class_sizes,
            (std::vector<std::int64_t>{436, 2142, 1414, 542, 5158, 308, 487, 818, 2156, 291}));
  EXPECT_EQ(ds.meta.at("class_names").size(), 10u);
  expect_split(ds, 200, 300, 13752 - 500);
}

TEST(GraphDataConverter, CoauthorCsCountsMatchProvenance) {
  SHARED_OR_SKIP(dir, "coauthor-cs");
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 18333);
  EXPECT_EQ(s.undirected, 81894);
  EXPECT_EQ(ds.num_features(), 6805);
  EXPECT_EQ(s.feature_nnz, 1092079);
  EXPECT_EQ(ds.num_classes, 15);
  EXPECT_EQ(s.class_sizes[9], 118);
  EXPECT_EQ(ds.meta.at("class_names").size(), 15u);
  expect_split(ds, 300, 450, 18333 - 750);
}

TEST(GraphDataConverter, BinaryFeaturesTurnCoauthorCsWordCountsIntoOnes) {
  SHARED_OR_SKIP(dir, "coauthor-cs");
  const Dataset counts = convert_dataset(dir, {});
  ConvertOptions o;
  o.binary_features = true;
  const Dataset bin = convert_dataset(dir, o);
  const auto c = counts.features.host(), b = bin.features.host();
  ASSERT_EQ(c.size(), b.size());
  std::int64_t above_one = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    ASSERT_EQ(b[i], c[i] != 0.0f ? 1.0f : 0.0f) << i;
    above_one += c[i] > 1.0f;
  }
  EXPECT_GT(above_one, 200000) << "CS stores word counts";
  EXPECT_EQ(stats_of(bin).feature_nnz, 1092079);
  EXPECT_EQ(bin.meta.at("binary_features").at("entries_changed").get<std::int64_t>(), above_one);
}

TEST(GraphDataConverter, CoauthorPhysicsCountsMatchProvenance) {
  SHARED_OR_SKIP(dir, "coauthor-physics");
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 34493);
  EXPECT_EQ(s.undirected, 247962);
  EXPECT_EQ(ds.num_features(), 8415);
  EXPECT_EQ(s.feature_nnz, 1137311);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{5750, 5045, 17426, 2753, 3519}));
  expect_split(ds, 100, 150, 34493 - 250);
}

TEST(HeterophilousConverter, TolokersUsesTheStoredSplit) {
  SHARED_OR_SKIP(dir, "tolokers");
  EXPECT_EQ(detect_source(dir, {}).format, SourceFormat::heterophilous);
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 11758);
  EXPECT_EQ(s.undirected, 519000);
  EXPECT_EQ(s.isolated, 0);
  EXPECT_EQ(ds.num_features(), 10);
  EXPECT_EQ(s.feature_nnz, 61101);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{9192, 2566}));
  expect_split(ds, 5879, 2939, 2940);
}

TEST(HeterophilousConverter, ChameleonFortranOrderMasksGiveTheGeomGcnSplit) {
  SHARED_OR_SKIP(dir, "chameleon");
  for (int split : {0, 9}) {
    ConvertOptions o;
    o.split_index = split;
    const Dataset ds = convert_dataset(dir, o);
    const Stats s = stats_of(ds);
    EXPECT_EQ(ds.num_nodes, 2277);
    EXPECT_EQ(s.undirected, 31371);
    EXPECT_EQ(ds.num_features(), 2325);
    EXPECT_EQ(s.feature_nnz, 29157);
    EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{456, 460, 453, 521, 387}));
    expect_split(ds, 1092, 729, 456);
  }
  ConvertOptions bad;
  bad.split_index = 10;
  EXPECT_THROW(convert_dataset(dir, bad), ConfigError);
}

TEST(HeterophilousConverter, FilteredVariantsAreSelectedByName) {
  SHARED_OR_SKIP(cham, "chameleon");
  SHARED_OR_SKIP(squi, "squirrel");
  ConvertOptions o;
  o.name = "chameleon_filtered";
  Dataset ds = convert_dataset(cham, o);
  EXPECT_EQ(ds.num_nodes, 890);
  EXPECT_EQ(stats_of(ds).undirected, 8854);
  EXPECT_EQ(stats_of(ds).feature_nnz, 9903);
  expect_split(ds, 409, 287, 194);
  o.name = "squirrel_filtered";
  ds = convert_dataset(squi, o);
  EXPECT_EQ(ds.num_nodes, 2223);
  EXPECT_EQ(stats_of(ds).undirected, 46998);
  expect_split(ds, 1053, 718, 452);
  ds = convert_dataset(squi, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 5201);
  EXPECT_EQ(s.undirected, 198353);
  EXPECT_EQ(s.feature_nnz, 93477);
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{1042, 1040, 1039, 1040, 1040}));
  expect_split(ds, 2496, 1664, 1041);
}

TEST(MusaeConverter, FacebookPagePageCountsMatchProvenance) {
  SHARED_OR_SKIP(dir, "facebook-page-page");
  EXPECT_EQ(detect_source(dir, {}).format, SourceFormat::musae);
  const Dataset ds = convert_dataset(dir, {});
  const Stats s = stats_of(ds);
  EXPECT_EQ(ds.num_nodes, 22470);
  EXPECT_EQ(ds.edge_src.size(), 171002u);
  EXPECT_EQ(s.undirected, 170823);
  EXPECT_EQ(s.self_loops, 179);
  EXPECT_EQ(ds.num_features(), 4714);
  EXPECT_EQ(s.feature_nnz, 314583);
  // Sorted class names: company, government, politician, tvshow.
  EXPECT_EQ(s.class_sizes, (std::vector<std::int64_t>{6495, 6880, 5768, 3327}));
  expect_split(ds, 80, 120, 22470 - 200);
}

TEST(ConvertRoundTrip, WrittenDatasetReadsBackIdentically) {
  SHARED_OR_SKIP(dir, "cora");
  const Dataset ds = convert_dataset(dir, {});
  const std::string out = test::fresh_temp_dir("convert_roundtrip") + "/cora";
  write_dataset(ds, out);
  const Dataset back = read_dataset(out);
  EXPECT_EQ(back.num_nodes, ds.num_nodes);
  EXPECT_EQ(back.edge_src, ds.edge_src);
  EXPECT_EQ(back.labels, ds.labels);
  EXPECT_EQ(back.test_idx, ds.test_idx);
  EXPECT_EQ(back.features.to_host(), ds.features.to_host());
  EXPECT_EQ(back.meta.at("split").at("kind").get<std::string>(), "planetoid-public");
  std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}

}  // namespace
}  // namespace halognn
