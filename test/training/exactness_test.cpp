// P-rank training with exact codecs equals 1-rank training (DESIGN.md "Correctness anchors").
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "comm/transport.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

struct Trace {
  std::vector<double> loss;
  std::vector<double> val;
};

Trace train(const TrainConfig& cfg, LocalPartition part, Transport& transport) {
  Trainer trainer(cfg, std::move(part), transport, cpu_device());
  Trace t;
  for (int e = 0; e < cfg.epochs; ++e) {
    const EpochMetrics m = trainer.run_epoch(e, /*evaluate=*/e + 1 == cfg.epochs);
    t.loss.push_back(m.loss);
    if (m.eval) t.val.push_back(m.eval->val);
  }
  return t;
}

class Exactness : public ::testing::TestWithParam<ModelKind> {};

// Why 1e-4: the runs differ only in the order of floating-point sums: a node's neighbours are
// summed in local-id order (owned, then halo by owner) instead of global-id order, weight
// gradients are summed per rank and then all-reduced, and the loss is a sum of per-rank sums.
// Each float32 sum of n terms is exact to about n * 6e-8 relative to the sum of magnitudes; with
// degrees and row counts of a few hundred here that is ~1e-5 per step, and 20 Adam steps (whose
// update is bounded by lr per step whatever the gradient noise) keep the loss within 1e-4
// relative. A real error (a missing halo row, a wrong normalisation, a dropout mask that depends
// on the rank) moves the loss by 1e-2 or more from the first epoch on.
TEST_P(Exactness, PRankTrainingEqualsOneRankTraining) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Dataset ds = testing::small_dataset();
  const TrainConfig cfg = testing::small_config(GetParam());

  auto world = make_mpi_transport(MPI_COMM_WORLD);
  const Trace distributed = train(cfg, testing::partition_of(ds, size, rank), *world);

  auto self = make_mpi_transport(MPI_COMM_SELF);
  const Trace single = train(cfg, testing::partition_of(ds, 1, 0), *self);

  ASSERT_EQ(distributed.loss.size(), single.loss.size());
  for (std::size_t e = 0; e < single.loss.size(); ++e)
    EXPECT_NEAR(distributed.loss[e], single.loss[e], 1e-4 * std::fabs(single.loss[e]))
        << "epoch " << e;
  ASSERT_EQ(distributed.val.size(), 1u);
  EXPECT_NEAR(distributed.val[0], single.val[0], 1.0 / 120) << "at most one validation node differs";
  // Training made progress (so the comparison is not between two runs that do nothing).
  EXPECT_LT(single.loss.back(), 0.9 * single.loss.front());
}

INSTANTIATE_TEST_SUITE_P(Models, Exactness,
                         ::testing::Values(ModelKind::gcn, ModelKind::sage, ModelKind::gat),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace halognn

namespace halognn {
namespace {

// The pipelined policy's synchronous epochs (drain, exchange into its own buffer, copy) are the
// same computation as the sync policy: with a synchronous epoch every epoch the runs are
// bit-identical. With one every other epoch, epoch 1 really runs on epoch 0's rows (so this test
// fails if the pipelined path is bypassed), and the metrics say so.
TEST(Pipelined, SyncEveryEpochIsBitIdenticalToSyncAndOtherwiseEpochOneIsStale) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_GE(size, 2) << "pipelining needs a halo";
  const Dataset ds = testing::small_dataset();
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.layers = 3;
  cfg.epochs = 8;
  auto world = make_mpi_transport(MPI_COMM_WORLD);
  const Trace sync = train(cfg, testing::partition_of(ds, size, rank), *world);
  cfg.exchange = ExchangeMode::pipelined;
  cfg.sync_every = 1;
  const Trace every = train(cfg, testing::partition_of(ds, size, rank), *world);
  EXPECT_EQ(every.loss, sync.loss);

  cfg.sync_every = 2;
  Trainer trainer(cfg, testing::partition_of(ds, size, rank), *world, cpu_device());
  const EpochMetrics e0 = trainer.run_epoch(0, false);
  const EpochMetrics e1 = trainer.run_epoch(1, false);
  EXPECT_EQ(e0.loss, sync.loss[0]);
  EXPECT_TRUE(e0.synchronous);
  EXPECT_FALSE(e1.synchronous);
  EXPECT_EQ(e1.max_staleness, 1);
  EXPECT_NE(e1.loss, sync.loss[1]) << "epoch 1 must use epoch 0's halo rows";
}

// An explicit fp32 plan equals the default path, and a plan that quantizes one layer does not:
// the per-layer codec plan really reaches the halo exchange (run with a halo, at P >= 2 ranks).
TEST(Codecs, ExplicitFp32PlanEqualsTheDefaultAndAQuantizedLayerDoesNot) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_GE(size, 2) << "codecs act on the halo";
  const Dataset ds = testing::small_dataset();
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.epochs = 5;
  auto world = make_mpi_transport(MPI_COMM_WORLD);
  const Trace base = train(cfg, testing::partition_of(ds, size, rank), *world);
  cfg.codec_forward = "fp32,fp32";
  cfg.codec_backward = "fp32";
  cfg.compress_layer0 = true;
  EXPECT_EQ(train(cfg, testing::partition_of(ds, size, rank), *world).loss, base.loss);
  cfg.codec_forward = "fp32,q8";
  EXPECT_NE(train(cfg, testing::partition_of(ds, size, rank), *world).loss, base.loss)
      << "layer 1's forward rows are quantized";
  cfg.codec_forward = "q8,fp32";
  EXPECT_NE(train(cfg, testing::partition_of(ds, size, rank), *world).loss, base.loss)
      << "--compress-layer0 quantizes the one-time feature exchange";
}

// Pipelined epochs use rows one epoch old; the bound forces a synchronous epoch every N, and
// the first epoch is synchronous. Asserted from the per-epoch metrics.
TEST(Pipelined, HaloAgeNeverExceedsTheBoundAndTrainingStillLearns) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Dataset ds = testing::small_dataset();
  for (const int bound : {0, 3}) {
    TrainConfig cfg = testing::small_config(ModelKind::gcn);
    cfg.layers = 3;
    cfg.epochs = 30;
    cfg.exchange = ExchangeMode::pipelined;
    cfg.sync_every = bound;
    cfg.smoothing = bound == 3 ? 0.5f : 0.0f;
    auto world = make_mpi_transport(MPI_COMM_WORLD);
    LocalPartition part = testing::partition_of(ds, size, rank);
    std::int64_t halo_rows = part.num_halo;
    world->all_reduce_sum(&halo_rows, 1);
    Trainer trainer(cfg, std::move(part), *world, cpu_device());
    double first = 0, last = 0;
    for (int e = 0; e < cfg.epochs; ++e) {
      const EpochMetrics m = trainer.run_epoch(e, false);
      const bool expect_sync = e == 0 || (bound > 0 && e % bound == 0);
      EXPECT_EQ(m.synchronous, expect_sync) << "epoch " << e;
      EXPECT_LE(m.max_staleness, expect_sync ? 0 : 1) << "epoch " << e;
      if (bound > 0) {
        EXPECT_LE(m.max_staleness, bound);
      }
      if (size > 1 && !expect_sync) {
        EXPECT_EQ(m.max_staleness, 1) << "epoch " << e;
      }
      // The age histogram: every halo row of layers 1 and 2, all of one age.
      const int age = expect_sync ? 0 : 1;
      ASSERT_EQ(m.halo_age["layers"].size(), 2u);
      for (const Json& l : m.halo_age["layers"]) {
        const Json& fwd = l["fwd"];
        ASSERT_GT(fwd.size(), static_cast<std::size_t>(age)) << "epoch " << e;
        EXPECT_EQ(fwd[static_cast<std::size_t>(age)].get<std::int64_t>(), halo_rows) << "epoch " << e;
        if (age == 1) {
          EXPECT_EQ(fwd[0].get<std::int64_t>(), 0);
        }
      }
      (e == 0 ? first : last) = m.loss;
    }
    EXPECT_LT(last, 0.8 * first) << "bound " << bound;
  }
}

}  // namespace
}  // namespace halognn
