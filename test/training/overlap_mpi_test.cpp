// Overlap of the synchronous exchange with computation (docs/training.md "Overlap") at P >= 2
// ranks: every epoch's loss and every evaluation equal those of a run that waits for each
// exchange first (--no-overlap), bit for bit, while the overlapped run really splits every
// exchange of layers >= 1 in both directions (and the other does not).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/transport.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

struct Trace {
  std::vector<double> loss, val, test;
  std::vector<int> overlapped;
  std::vector<std::uint64_t> bytes;
};

Trace train(const TrainConfig& cfg, Transport& t) {
  const Dataset ds = testing::small_dataset();
  Trainer trainer(cfg, testing::partition_of(ds, t.size(), t.rank()), t, cpu_device());
  Trace tr;
  for (int e = 0; e < cfg.epochs; ++e) {
    const EpochMetrics m = trainer.run_epoch(e, e % 2 == 1);
    tr.loss.push_back(m.loss);
    if (m.eval) {
      tr.val.push_back(m.eval->val);
      tr.test.push_back(m.eval->test);
    }
    tr.overlapped.push_back(m.overlapped_exchanges);
    tr.bytes.push_back(m.bytes_sent);
  }
  return tr;
}

class Overlap : public ::testing::TestWithParam<ModelKind> {
 protected:
  void SetUp() override {
    world = make_mpi_transport(MPI_COMM_WORLD);
    ASSERT_GE(world->size(), 2) << "overlap acts on the halo";
  }
  std::unique_ptr<Transport> world;
};

TEST_P(Overlap, EqualsWaitingFirstBitForBitAndSplitsEveryExchange) {
  for (const char* codec : {"fp32", "q1"}) {
    SCOPED_TRACE(codec);
    TrainConfig cfg = testing::small_config(GetParam());
    // 3 layers of width 8 over 12 features and 4 classes: layer 1 aggregates first (8 <= 8),
    // layer 2 transforms first (8 > 4); dropout on, so its halves are split too.
    cfg.layers = 3;
    cfg.epochs = 6;
    cfg.codec = codec;
    const Trace overlapped = train(cfg, *world);
    cfg.overlap = false;
    const Trace waited = train(cfg, *world);
    EXPECT_EQ(overlapped.loss, waited.loss);
    EXPECT_EQ(overlapped.val, waited.val);
    EXPECT_EQ(overlapped.test, waited.test);
    EXPECT_EQ(overlapped.bytes, waited.bytes);
    // Layers 1 and 2, forward and backward, every epoch.
    EXPECT_EQ(overlapped.overlapped, std::vector<int>(6, 4));
    EXPECT_EQ(waited.overlapped, std::vector<int>(6, 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Overlap,
                         ::testing::Values(ModelKind::gcn, ModelKind::sage, ModelKind::gin));

// The policies that hand out rows they hold do not split; neither do GAT's layers.
TEST(OverlapPolicies, OnlyTheSynchronousPolicySplitsAndGatNever) {
  std::unique_ptr<Transport> world = make_mpi_transport(MPI_COMM_WORLD);
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.epochs = 2;
  cfg.exchange = ExchangeMode::pipelined;
  EXPECT_EQ(train(cfg, *world).overlapped, std::vector<int>(2, 0));
  cfg = testing::small_config(ModelKind::gat);
  cfg.epochs = 2;
  EXPECT_EQ(train(cfg, *world).overlapped, std::vector<int>(2, 0));
}

}  // namespace
}  // namespace halognn
