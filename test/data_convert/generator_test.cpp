// The degree-corrected SBM generator: determinism, sizes, the homophily and class-overlap knobs.
#include <omp.h>

#include <gtest/gtest.h>

#include "core/data/dataset.hpp"
#include "core/data/generator.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

SbmConfig small_config() {
  SbmConfig c;
  c.num_nodes = 5000;
  c.num_edges = 40000;
  c.num_classes = 5;
  c.num_features = 16;
  c.seed = 42;
  return c;
}

TEST(SbmGenerator, SameSeedGivesTheSameDatasetAtAnyThreadCount) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Dataset a = generate_sbm(small_config());
  omp_set_num_threads(std::max(2, saved));
  const Dataset b = generate_sbm(small_config());
  omp_set_num_threads(saved);
  EXPECT_EQ(a.edge_src, b.edge_src);
  EXPECT_EQ(a.edge_dst, b.edge_dst);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.features.to_host(), b.features.to_host());
  EXPECT_EQ(a.train_idx, b.train_idx);
  EXPECT_EQ(a.meta.dump(), b.meta.dump());
  SbmConfig other = small_config();
  other.seed = 43;
  EXPECT_NE(generate_sbm(other).edge_src, a.edge_src);
}

TEST(SbmGenerator, SizesAndSplitsMatchTheRequest) {
  const SbmConfig c = small_config();
  const Dataset ds = generate_sbm(c);
  EXPECT_NO_THROW(validate_dataset(ds, "generated"));
  EXPECT_EQ(ds.num_nodes, c.num_nodes);
  EXPECT_EQ(static_cast<std::int64_t>(ds.edge_src.size()), c.num_edges);
  EXPECT_EQ(ds.num_features(), c.num_features);
  EXPECT_EQ(ds.num_classes, c.num_classes);
  GraphBuildStats st;
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst, &st);
  // Duplicates and self-loops cost a few percent at this density.
  EXPECT_GT(g.num_directed_edges() / 2, c.num_edges * 85 / 100);
  EXPECT_EQ(ds.train_idx.size(), 500u);
  EXPECT_EQ(ds.val_idx.size(), 500u);
  EXPECT_EQ(ds.test_idx.size(), 4000u);
  // Power-law degrees: the largest degree is far above the mean, but capped.
  std::int64_t max_deg = 0;
  for (GlobalId v = 0; v < g.num_nodes; ++v) max_deg = std::max(max_deg, g.degree(v));
  const double mean = static_cast<double>(g.num_directed_edges()) / static_cast<double>(g.num_nodes);
  EXPECT_GT(max_deg, 10 * mean);
  EXPECT_LE(max_deg, static_cast<std::int64_t>(2 * c.max_degree_fraction * c.num_nodes));
  // Every class is populated.
  std::vector<int> sizes(c.num_classes, 0);
  for (auto l : ds.labels) ++sizes[l];
  for (int s : sizes) EXPECT_GT(s, 800);
}

TEST(SbmGenerator, MeasuredHomophilyFollowsTheKnob) {
  double last = -1;
  for (double h : {0.0, 0.3, 0.6, 0.9, 1.0}) {
    SbmConfig c = small_config();
    c.homophily = h;
    const double m = generate_sbm(c).meta.at("measured_homophily").get<double>();
    EXPECT_NEAR(m, h, 0.02) << "homophily knob " << h;
    EXPECT_GT(m, last);
    last = m;
  }
}

TEST(SbmGenerator, FeaturesSeparateClassesMoreWithLessNoise) {
  // With zero noise and no class overlap, every node's features equal its class mean.
  SbmConfig c = small_config();
  c.feature_noise = 0.0;
  c.class_overlap = 0.0;
  const Dataset ds = generate_sbm(c);
  for (GlobalId v = 1; v < 50; ++v) {
    if (ds.labels[v] != ds.labels[0]) continue;
    for (std::int64_t k = 0; k < c.num_features; ++k) {
      EXPECT_EQ(ds.features(v, k), ds.features(0, k));
    }
  }
}

TEST(SbmGenerator, ClassOverlapGivesThatShareOfNodesAnotherClassMean) {
  // Without noise a node's features are exactly one class mean: its own, or with probability
  // class_overlap another class's (uniform over the others).
  for (const double overlap : {0.0, 0.3, 1.0}) {
    SbmConfig c = small_config();
    c.feature_noise = 0.0;
    c.class_overlap = overlap;
    const Dataset ds = generate_sbm(c);
    // The class means, from the same seed without overlap: same labels and means, and every
    // node carries its own class's mean there.
    SbmConfig plain = c;
    plain.class_overlap = 0.0;
    const Dataset ref = generate_sbm(plain);
    std::vector<std::vector<float>> mean(c.num_classes);
    for (GlobalId v = 0; v < ref.num_nodes; ++v) {
      auto& m = mean[ref.labels[v]];
      const float* r = ref.features.data() + v * c.num_features;  // const Dataset: host data
      if (m.empty()) m.assign(r, r + c.num_features);
    }
    std::int64_t borrowed = 0;
    for (GlobalId v = 0; v < ds.num_nodes; ++v) {
      ASSERT_EQ(ds.labels[v], ref.labels[v]);
      const float* f = ds.features.data() + v * c.num_features;
      const std::vector<float> row(f, f + c.num_features);
      int carried = -1;
      for (int k = 0; k < c.num_classes; ++k)
        if (row == mean[k]) carried = k;
      ASSERT_GE(carried, 0) << "node " << v << " carries no class mean";
      borrowed += carried != ds.labels[v];
    }
    EXPECT_EQ(borrowed, ds.meta.at("borrowed_feature_means").get<std::int64_t>());
    EXPECT_NEAR(static_cast<double>(borrowed) / static_cast<double>(ds.num_nodes), overlap, 0.02)
        << "class_overlap " << overlap;
    EXPECT_EQ(ds.meta.at("config").at("class_overlap").get<double>(), overlap);
  }
}

TEST(SbmGenerator, PresetsCarryTheShapesTheyName) {
  EXPECT_EQ(sbm_preset("default").num_edges, SbmConfig{}.num_edges);
  EXPECT_EQ(sbm_preset("default").homophily, SbmConfig{}.homophily);
  const SbmConfig p = sbm_preset("products");
  EXPECT_EQ(p.num_nodes, 2449029);
  EXPECT_EQ(p.num_edges, 61859140);
  EXPECT_EQ(p.num_features, 100);
  EXPECT_EQ(p.num_classes, 47);
  EXPECT_NEAR(p.max_degree_fraction * static_cast<double>(p.num_nodes), 17481, 1e-6);
  const SbmConfig r = sbm_preset("reddit");
  EXPECT_EQ(r.num_nodes, 232965);
  EXPECT_EQ(r.num_edges * 2, 114848856);  // Reddit's stored edges, both directions
  EXPECT_EQ(r.num_features, 602);
  EXPECT_EQ(r.num_classes, 41);
  for (const std::string& n : sbm_preset_names()) EXPECT_NO_THROW(sbm_preset(n)) << n;
  EXPECT_THROW(sbm_preset("arxiv"), ConfigError);
  EXPECT_THROW(sbm_preset(""), ConfigError);
}

TEST(SbmGenerator, InvalidConfigurationsAreRejected) {
  SbmConfig c = small_config();
  c.homophily = 1.5;
  EXPECT_THROW(generate_sbm(c), ConfigError);
  c = small_config();
  c.num_classes = 0;
  EXPECT_THROW(generate_sbm(c), ConfigError);
  c = small_config();
  c.train_fraction = 0.8;
  c.val_fraction = 0.3;
  EXPECT_THROW(generate_sbm(c), ConfigError);
  c = small_config();
  c.class_overlap = -0.1;
  EXPECT_THROW(generate_sbm(c), ConfigError);
  c.class_overlap = 1.1;
  EXPECT_THROW(generate_sbm(c), ConfigError);
}

}  // namespace
}  // namespace halognn
