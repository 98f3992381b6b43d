// P-rank training with exact codecs equals 1-rank training (DESIGN.md "Correctness anchors").
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>

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

/// A model configuration of the exactness tests.
struct ModelCase {
  const char* name;
  ModelKind kind;
  void (*apply)(TrainConfig&);
};

const ModelCase kModels[] = {
    {"gcn", ModelKind::gcn, [](TrainConfig&) {}},
    {"sage", ModelKind::sage, [](TrainConfig&) {}},
    {"gat", ModelKind::gat, [](TrainConfig&) {}},
    // GAT as published: ELU (the default for GAT), dropout of attention coefficients and of the
    // aggregated values, averaged output heads.
    {"gat_published", ModelKind::gat,
     [](TrainConfig& c) {
       c.attention_dropout = 0.5f;
       c.value_dropout = 0.5f;
       c.output_heads = 2;
     }},
    {"gin", ModelKind::gin, [](TrainConfig&) {}},
    // Platonov et al.'s residual blocks: the first computes its input rows (halo rows included)
    // from the features with keyed dropout, layer norms see halo rows, the skip connection adds
    // owned rows only; dropout inside every block.
    {"gcn_residual", ModelKind::gcn,
     [](TrainConfig& c) {
       c.architecture = Architecture::residual;
       c.dropout = 0.2f;
       c.lr = 0.003f;
     }},
    {"sage_residual_3_blocks", ModelKind::sage,
     [](TrainConfig& c) {
       c.architecture = Architecture::residual;
       c.layers = 3;
       c.dropout = 0.2f;
       c.lr = 0.003f;
     }},
    // Platonov et al.'s GAT blocks (2 heads sharing the width 8): attention over owned and halo
    // rows of the normalised input, scores from a linear map of every local row.
    {"gat_residual", ModelKind::gat,
     [](TrainConfig& c) {
       c.architecture = Architecture::residual;
       c.dropout = 0.2f;
       c.lr = 0.003f;
     }},
    {"gin_trained_eps", ModelKind::gin,
     [](TrainConfig& c) {
       c.train_eps = true;
       c.gin_eps = 0.25f;
     }},
};

/// The exchange policies that exist, each in the setting that can equal a 1-rank run (which has
/// no halo to be stale): synchronous; pipelined with a synchronous epoch every epoch; refresh with
/// the per-row bound 1 (every row re-sent every epoch, through the policy's own indexed messages
/// and caches).
struct PolicyCase {
  const char* name;
  void (*apply)(TrainConfig&);
};

const PolicyCase kPolicies[] = {
    {"sync", [](TrainConfig&) {}},
    {"pipelined_sync_every_1",
     [](TrainConfig& c) {
       c.exchange = ExchangeMode::pipelined;
       c.sync_every = 1;
     }},
    {"refresh_bound_1",
     [](TrainConfig& c) {
       c.exchange = ExchangeMode::refresh;
       c.staleness_bound = 1;
     }},
};

TrainConfig config_of(const ModelCase& m, const PolicyCase& p) {
  TrainConfig cfg = testing::small_config(m.kind);
  m.apply(cfg);
  p.apply(cfg);
  return cfg;
}

class Exactness : public ::testing::TestWithParam<std::tuple<ModelCase, PolicyCase>> {};

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
  const TrainConfig cfg = config_of(std::get<0>(GetParam()), std::get<1>(GetParam()));

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

// The pipelined policy's synchronous epochs (drain, exchange into its own buffer, copy) are the
// same computation as the sync policy: with a synchronous epoch every epoch the runs are
// bit-identical, for every model. With one every other epoch, epoch 1 really runs on epoch 0's
// rows (so this test fails if the pipelined path is bypassed), and the metrics say so.
TEST_P(Exactness, PipelinedSyncEveryEpochIsBitIdenticalToSyncAndOtherwiseEpochOneIsStale) {
  if (std::string(std::get<1>(GetParam()).name) != "sync") GTEST_SKIP() << "one policy pair";
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_GE(size, 2) << "pipelining needs a halo";
  const Dataset ds = testing::small_dataset();
  TrainConfig cfg = config_of(std::get<0>(GetParam()), kPolicies[0]);
  cfg.layers = 3;
  cfg.epochs = 6;
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

// Bag-of-words features cross once as feature rows (training/feature_rows.hpp): a sparse row as
// (column, value) pairs, a row with half its entries or more as all its values. Layer 0 then
// builds its CSR from the owned and the received rows directly; P ranks train as one rank does
// (1e-4, as above: a wrong or missing halo row moves the loss by far more), and the bytes
// counted are exactly those of the format: per message an 8-byte size, per row a 4-byte count
// and 8 bytes per non-zero (sparse) or 4 per column (dense).
TEST(FeatureRows, BagOfWordsCrossAsPairsAndTrainLikeOneRank) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_GE(size, 2) << "features cross only between ranks";
  // The small graph with 64 features, of which each row keeps its 2 largest (about 3%); every
  // 20th row keeps half its entries (it crosses dense).
  Dataset ds = testing::small_dataset(3, 4, 64);
  const std::int64_t F = ds.features.cols();
  for (std::int64_t i = 0; i < ds.features.rows(); ++i) {
    std::vector<float> sorted(F);
    for (std::int64_t j = 0; j < F; ++j) sorted[j] = ds.features(i, j);
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (std::int64_t j = 0; j < F; ++j)
      if (i % 20 == 0 ? j >= F / 2 : ds.features(i, j) < sorted[1]) ds.features(i, j) = 0.0f;
  }
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage}) {
    SCOPED_TRACE(to_string(kind));
    TrainConfig cfg = testing::small_config(kind);
    cfg.epochs = 10;
    auto world = make_mpi_transport(MPI_COMM_WORLD);
    auto self = make_mpi_transport(MPI_COMM_SELF);
    {
      Trainer probe(cfg, testing::partition_of(ds, 1, 0), *self, cpu_device());
      if (rank == 0) std::printf("[ features ] layer 0 reads %s\n", probe.sparse_input() ? "CSR" : "dense");
    }
    const Trace single = train(cfg, testing::partition_of(ds, 1, 0), *self);
    const Trace distributed = train(cfg, testing::partition_of(ds, size, rank), *world);
    for (std::size_t e = 0; e < single.loss.size(); ++e)
      EXPECT_NEAR(distributed.loss[e], single.loss[e], 1e-4 * std::fabs(single.loss[e])) << "epoch " << e;
    EXPECT_LT(single.loss.back(), 0.9 * single.loss.front());

    // The bytes of the format, from the rows this rank sends.
    LocalPartition part = testing::partition_of(ds, size, rank);
    std::int64_t expected = 0, dense_rows = 0;
    for (const PeerRows& pr : part.send) {
      if (pr.rows.empty()) continue;
      expected += 8;
      for (const LocalId r : pr.rows) {
        std::int64_t c = 0;
        for (std::int64_t j = 0; j < F; ++j) c += part.features(r, j) != 0.0f;
        expected += 4 + (2 * c < F ? 8 * c : 4 * F);
        dense_rows += 2 * c >= F;
      }
    }
    std::int64_t sums[2] = {expected, dense_rows};
    MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_GT(sums[1], 0) << "some rows cross dense";
    cfg.epochs = 1;
    Trainer t(cfg, std::move(part), *world, cpu_device());
    EXPECT_TRUE(t.sparse_input());
    const FinalMetrics f = t.run({});
    EXPECT_EQ(f.feature_exchange_bytes, static_cast<std::uint64_t>(sums[0]));
    EXPECT_EQ(f.feature_exchange_codec, "fp32-rows");
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Exactness,
                         ::testing::Combine(::testing::ValuesIn(kModels),
                                            ::testing::ValuesIn(kPolicies)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param).name;
                         });

// The training protocol decides on all-reduced values only: P ranks stop at the epoch and keep
// the best epoch that one rank does, and the restored model evaluates to the scores recorded at
// that epoch (the evaluation is repeated with the same key, so stochastic codecs agree too).
TEST(Protocol, EarlyStoppingAndRestoreAgreeAcrossRankCounts) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Dataset ds = testing::small_dataset();
  // The last case selects by the validation loss with the L2 penalty added (--val-loss-l2):
  // training is the same as in the plain loss case (the term changes no gradient), so up to the
  // earlier of the two stops every evaluation's loss is that case's plus a positive penalty.
  const std::pair<SelectBy, bool> rules[] = {
      {SelectBy::score, false}, {SelectBy::loss, false}, {SelectBy::both, false}, {SelectBy::loss, true}};
  std::vector<EpochMetrics> by_loss_fp32;
  for (const auto& [by, l2] : rules) {
    for (const char* codec : {"fp32", "q4"}) {
      SCOPED_TRACE(std::string(to_string(by)) + (l2 ? "+l2 " : " ") + codec);
      TrainConfig cfg = testing::small_config(ModelKind::gcn);
      cfg.epochs = 300;
      cfg.lr = 0.05f;  // converges fast, so patience ends it well before 300 epochs
      cfg.patience = 8;
      cfg.select_by = by;
      cfg.val_loss_l2 = l2;
      // q4: a stochastic codec, so the re-evaluation must draw what the best epoch drew.
      cfg.codec = codec;
      auto world = make_mpi_transport(MPI_COMM_WORLD);
      Trainer distributed(cfg, testing::partition_of(ds, size, rank), *world, cpu_device());
      std::vector<EpochMetrics> epochs;
      const FinalMetrics d = distributed.run([&](const EpochMetrics& m) { epochs.push_back(m); });
      EXPECT_TRUE(d.early_stopped);
      EXPECT_LT(d.epochs_run, cfg.epochs);
      if (by == SelectBy::loss && std::string(codec) == "fp32") {
        if (!l2) {
          by_loss_fp32 = epochs;
        } else {
          const std::size_t common = std::min(epochs.size(), by_loss_fp32.size());
          ASSERT_GT(common, 0u);
          for (std::size_t e = 0; e < common; ++e) {
            EXPECT_EQ(epochs[e].loss, by_loss_fp32[e].loss) << "the same training, epoch " << e;
            EXPECT_GT(epochs[e].eval->val_loss, by_loss_fp32[e].eval->val_loss) << "epoch " << e;
          }
        }
      }
      if (std::string(codec) == "fp32") {
        // Exact exchanges: the same decisions as one rank.
        auto self = make_mpi_transport(MPI_COMM_SELF);
        Trainer single(cfg, testing::partition_of(ds, 1, 0), *self, cpu_device());
        const FinalMetrics s = single.run(nullptr);
        EXPECT_EQ(d.epochs_run, s.epochs_run);
        EXPECT_EQ(d.best_epoch, s.best_epoch);
        EXPECT_NEAR(d.final_scores.test, s.final_scores.test, 1.0 / 100);
      }
      // The restored model reproduces the best epoch's evaluation exactly.
      ASSERT_TRUE(d.restored);
      EXPECT_EQ(d.final_epoch, d.best_epoch);
      const EpochMetrics& best = epochs.at(static_cast<std::size_t>(d.best_epoch));
      ASSERT_TRUE(best.eval.has_value());
      EXPECT_EQ(d.final_scores.val, best.eval->val);
      EXPECT_EQ(d.final_scores.test, best.eval->test);
      EXPECT_EQ(d.final_scores.val_loss, best.eval->val_loss);
      // Patience: the run ended `patience` epochs after the last progress, which is the best
      // evaluation except under SelectBy::both (progress = either improved).
      if (by == SelectBy::both) {
        EXPECT_GE(d.epochs_run - 1 - d.best_epoch, cfg.patience);
      } else {
        EXPECT_EQ(d.epochs_run - 1 - d.best_epoch, cfg.patience);
      }
    }
  }
}

// ROC AUC over P ranks equals the 1-rank value: every rank's scores and labels are summed into
// global arrays before ranking, so the only difference is the float rounding of the logits
// (the same summation-order argument as above: a few ulps, far below one swapped pair in 1e-3).
TEST(Protocol, RocAucOverRanksEqualsOneRank) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Dataset ds = testing::small_dataset(3, /*classes=*/2);
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.metric = MetricKind::roc_auc;
  cfg.epochs = 6;
  auto world = make_mpi_transport(MPI_COMM_WORLD);
  const Trace distributed = train(cfg, testing::partition_of(ds, size, rank), *world);
  auto self = make_mpi_transport(MPI_COMM_SELF);
  const Trace single = train(cfg, testing::partition_of(ds, 1, 0), *self);
  ASSERT_EQ(distributed.val.size(), 1u);
  EXPECT_NEAR(distributed.val[0], single.val[0], 1e-3);
  EXPECT_GT(single.val[0], 0.6) << "an AUC of a model that learned something";
  // Every rank holds the same value.
  double v[2] = {distributed.val[0], -distributed.val[0]};
  world->all_reduce_max(v, 2);
  EXPECT_EQ(v[0], -v[1]);
}

}  // namespace
}  // namespace halognn

namespace halognn {
namespace {

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
