// Single-process trainer behaviour: learning, determinism, metrics shape.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "comm/transport.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

class TrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) MPI_Init(nullptr, nullptr);  // singleton MPI; finalised at exit by the runtime
  }
};

std::vector<double> losses(const TrainConfig& cfg, const Dataset& ds) {
  auto t = make_mpi_transport(MPI_COMM_SELF);
  Trainer tr(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  std::vector<double> out;
  for (int e = 0; e < cfg.epochs; ++e) out.push_back(tr.run_epoch(e, false).loss);
  return out;
}

TEST_F(TrainerTest, GcnLearnsAPlantedPartition) {
  const Dataset ds = testing::small_dataset();
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.epochs = 100;
  cfg.hidden = 16;
  auto t = make_mpi_transport(MPI_COMM_SELF);
  Trainer tr(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  const FinalMetrics f = tr.run(nullptr);
  // 4 classes, homophily 0.8, informative features: chance is 0.25.
  EXPECT_GT(f.best_val, 0.7);
  EXPECT_GT(f.test_at_best_val, 0.7);
  EXPECT_GE(f.best_epoch, 0);
}

TEST_F(TrainerTest, SameSeedGivesIdenticalLossesAndOtherSeedDoesNot) {
  const Dataset ds = testing::small_dataset();
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.epochs = 5;
  const auto a = losses(cfg, ds), b = losses(cfg, ds);
  EXPECT_EQ(a, b);
  cfg.seed += 1;
  EXPECT_NE(losses(cfg, ds), a);
}

TEST_F(TrainerTest, EpochMetricsCarryTheReportedFields) {
  const Dataset ds = testing::small_dataset();
  TrainConfig cfg = testing::small_config(ModelKind::gat);
  cfg.epochs = 1;
  auto t = make_mpi_transport(MPI_COMM_SELF);
  Trainer tr(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device());
  const Json j = tr.run_epoch(0, true).to_json();
  for (const char* k : {"epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_s", "compute_s",
                        "comm_s", "codec_s", "overlap_s", "overlapped_exchanges", "bytes_sent", "traffic",
                        "synchronous", "max_staleness",
                        "halo_age"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j.at("val_acc").is_number());
  EXPECT_EQ(j.at("bytes_sent").get<std::int64_t>(), 0) << "one rank sends nothing";
}

// Why 1e-4: the sparse and dense layer-0 paths form the same products with the same dropout
// masks and differ only in the order of float32 sums (SpMM against GEMM), ~1e-6 relative per
// step; 10 Adam steps keep the loss within 1e-4 relative (as in the exactness test). A wrong mask
// or a missing row changes the loss by 1e-2 or more.
TEST_F(TrainerTest, SparseFeaturePathTrainsLikeTheDensePath) {
  Dataset ds = testing::small_dataset();
  // Bag-of-words-like features: about 5% of the entries stay.
  const CounterRng keep(RngKey{4, RngPurpose::test, 0, 0});
  for (std::int64_t i = 0; i < ds.features.rows(); ++i) {
    for (std::int64_t j = 0; j < ds.features.cols(); ++j) {
      if (keep.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j)) >= 0.05f)
        ds.features(i, j) = 0.0f;
    }
  }
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gat}) {
    SCOPED_TRACE(to_string(kind));
    TrainConfig cfg = testing::small_config(kind);
    cfg.epochs = 10;
    auto t = make_mpi_transport(MPI_COMM_SELF);
    EXPECT_TRUE(Trainer(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device()).sparse_input());
    const auto sparse = losses(cfg, ds);
    cfg.sparse_features = false;
    EXPECT_FALSE(Trainer(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device()).sparse_input());
    const auto dense = losses(cfg, ds);
    ASSERT_EQ(sparse.size(), dense.size());
    for (std::size_t e = 0; e < dense.size(); ++e)
      EXPECT_NEAR(sparse[e], dense[e], 1e-4 * std::abs(dense[e])) << "epoch " << e;
    EXPECT_LT(dense.back(), dense.front()) << "it learns";
  }
  // Dense features keep the dense path.
  auto t = make_mpi_transport(MPI_COMM_SELF);
  EXPECT_FALSE(Trainer(testing::small_config(ModelKind::gcn),
                       testing::partition_of(testing::small_dataset(), 1, 0), *t, cpu_device())
                   .sparse_input());
}

TEST_F(TrainerTest, RejectsInvalidConfigurations) {
  const Dataset ds = testing::small_dataset();
  auto t = make_mpi_transport(MPI_COMM_SELF);
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.dropout = 1.0f;
  EXPECT_THROW(Trainer(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device()), ConfigError);
  cfg = testing::small_config(ModelKind::gcn);
  cfg.codec = "q3";
  EXPECT_THROW(Trainer(cfg, testing::partition_of(ds, 1, 0), *t, cpu_device()), ConfigError);
}

}  // namespace
}  // namespace halognn
