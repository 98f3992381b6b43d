// Checkpoint and resume at 1, 2 and 4 ranks: a run stopped after epoch k and resumed from its
// checkpoint equals a run that was never stopped, bit for bit: every epoch's loss, the final
// parameters and the best-validation record. Covers the synchronous, pipelined (really stale
// epochs: a synchronisation period beyond the run; smoothing; stochastic-rounding codecs) and
// refresh (age bound 3, fraction 0.2, by gradient and by change) policies, Adam and SGD with
// momentum, and dropout.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport.hpp"
#include "test/training/training_fixture.hpp"
#include "training/checkpoint.hpp"

namespace halognn {
namespace {
namespace fs = std::filesystem;

struct Outcome {
  std::vector<double> loss;        ///< per epoch run
  StateArrays params;              ///< at the end
  FinalMetrics final;
};

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    world = make_mpi_transport(MPI_COMM_WORLD);
    // One directory for all ranks, named by rank 0.
    long long pid = ::getpid();
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    dir = (fs::temp_directory_path() / ("halognn_resume_test." + std::to_string(pid))).string();
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) fs::remove_all(dir);
    MPI_Barrier(MPI_COMM_WORLD);
  }

  /// Trains cfg.epochs epochs from scratch, or from the newest checkpoint in `from`; with
  /// `checkpoint_after` >= 0, writes a checkpoint after that epoch into `into`.
  Outcome train(const TrainConfig& cfg, const std::string& from, std::int64_t checkpoint_after,
                const std::string& into) {
    Trainer trainer(cfg, testing::partition_of(testing::small_dataset(), size, rank), *world,
                    cpu_device());
    if (!from.empty()) {
      const CheckpointManifest m = newest_checkpoint(from);
      check_resumable(m, cfg, size, 0);
      const StateArrays state = read_checkpoint_state(m, rank);
      trainer.load_state(StateReader(state, m.path));
    }
    Outcome out;
    out.final = trainer.run([&](const EpochMetrics& m) { out.loss.push_back(m.loss); },
                            [&](std::int64_t e) {
                              if (e == checkpoint_after)
                                write_checkpoint(into, e, trainer, cfg, 0, 0, MPI_COMM_WORLD);
                            });
    StateWriter w(out.params);
    trainer.save_parameters(w);
    return out;
  }

  /// Uninterrupted N epochs vs. k epochs, checkpoint, resume to N.
  void expect_resume_exact(TrainConfig cfg, int n, int k) {
    cfg.epochs = n;
    const Outcome whole = train(cfg, "", -1, "");
    cfg.epochs = k;
    const Outcome first = train(cfg, "", k - 1, dir);
    cfg.epochs = n;
    const Outcome rest = train(cfg, dir, -1, "");

    ASSERT_EQ(whole.loss.size(), static_cast<std::size_t>(n));
    ASSERT_EQ(first.loss.size(), static_cast<std::size_t>(k));
    ASSERT_EQ(rest.loss.size(), static_cast<std::size_t>(n - k));
    for (int e = 0; e < n; ++e) {
      const double resumed = e < k ? first.loss[static_cast<std::size_t>(e)]
                                   : rest.loss[static_cast<std::size_t>(e - k)];
      EXPECT_EQ(std::memcmp(&resumed, &whole.loss[static_cast<std::size_t>(e)], sizeof resumed), 0)
          << "epoch " << e << ": loss " << resumed << " after resuming, "
          << whole.loss[static_cast<std::size_t>(e)] << " uninterrupted";
    }
    ASSERT_EQ(whole.params.size(), rest.params.size());
    for (const auto& [name, a] : whole.params) {
      const NpyArray& b = rest.params.at(name);
      EXPECT_EQ(a.shape, b.shape) << name;
      EXPECT_TRUE(a.data == b.data) << name << " differs after resuming";
    }
    EXPECT_EQ(rest.final.best_epoch, whole.final.best_epoch);
    EXPECT_EQ(rest.final.best_val, whole.final.best_val);
    EXPECT_EQ(rest.final.test_at_best_val, whole.final.test_at_best_val);
    EXPECT_EQ(rest.final.best_val_loss, whole.final.best_val_loss);
    EXPECT_EQ(rest.final.epochs_run, whole.final.epochs_run);
    EXPECT_EQ(rest.final.early_stopped, whole.final.early_stopped);
    EXPECT_EQ(rest.final.restored, whole.final.restored);
    EXPECT_EQ(rest.final.final_epoch, whole.final.final_epoch);
    EXPECT_EQ(rest.final.final_scores.test, whole.final.final_scores.test);
    EXPECT_EQ(rest.final.final_scores.val_loss, whole.final.final_scores.val_loss);
  }

  int rank = 0, size = 1;
  std::unique_ptr<Transport> world;
  std::string dir;
};

TEST_F(Resume, SyncAdamDropoutIsBitIdentical) {
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  expect_resume_exact(cfg, 8, 4);
}

TEST_F(Resume, SyncGatSgdMomentumStochasticCodecIsBitIdentical) {
  TrainConfig cfg = testing::small_config(ModelKind::gat);
  cfg.optimizer = OptimizerKind::sgd;
  cfg.momentum = 0.9f;
  cfg.lr = 0.05f;
  cfg.codec = "q2";  // stochastic rounding keyed by (seed, epoch, layer, slot)
  expect_resume_exact(cfg, 7, 3);
}

TEST_F(Resume, PipelinedStaleEpochsWithSmoothingAreBitIdentical) {
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.layers = 3;
  cfg.exchange = ExchangeMode::pipelined;
  cfg.sync_every = 1000;  // only epoch 0 is synchronous: every resumed epoch uses stale rows
  cfg.smoothing = 0.5f;
  cfg.codec_forward = "q4";
  expect_resume_exact(cfg, 8, 4);
}

TEST_F(Resume, PipelinedWithoutSmoothingSgdIsBitIdentical) {
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.exchange = ExchangeMode::pipelined;
  cfg.sync_every = 5;  // epoch 5 synchronous: resumed after epoch 2, stale epochs 3 and 4 first
  cfg.optimizer = OptimizerKind::sgd;
  cfg.momentum = 0.5f;
  cfg.lr = 0.1f;
  expect_resume_exact(cfg, 7, 3);
}

TEST_F(Resume, RefreshByGradientIsBitIdentical) {
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.layers = 3;
  cfg.exchange = ExchangeMode::refresh;
  cfg.staleness_bound = 3;
  cfg.refresh_fraction = 0.2;
  expect_resume_exact(cfg, 9, 4);
}

TEST_F(Resume, RefreshByChangeWithCodecIsBitIdentical) {
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.exchange = ExchangeMode::refresh;
  cfg.staleness_bound = 3;
  cfg.refresh_fraction = 0.2;
  cfg.refresh_by = RefreshConfig::By::change;
  cfg.codec = "q8";
  expect_resume_exact(cfg, 8, 5);
}

TEST_F(Resume, TrainingProtocolStateIsBitIdentical) {
  // Model selection by loss with patience, the plateau schedule (its rate changes the losses of
  // the resumed epochs) and the best-model restore (the snapshot taken before the checkpoint is
  // what the end restores unless a later evaluation is better).
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.eval_every = 1;
  cfg.select_by = SelectBy::loss;
  cfg.patience = 4;
  cfg.lr = 0.5f;  // large enough that the validation loss stalls: the plateau schedule acts
  cfg.lr_schedule = LrScheduleKind::plateau;
  cfg.lr_patience = 1;
  cfg.lr_gamma = 0.5f;
  cfg.restore_best = true;
  expect_resume_exact(cfg, 14, 6);
}

}  // namespace
}  // namespace halognn
