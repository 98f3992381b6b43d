// The refresh policy at P >= 2 ranks: with s = 1 or r = 1 it is bit-identical to synchronous
// training (fp32, q1, and semantic group rows) while really going through its own path (indexed
// messages, caches); otherwise no row used is older than the bound, r = 0 sends exactly the rows
// whose age reached s, and training still learns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <vector>

#include "comm/transport.hpp"
#include "partition/semantic_groups.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

struct Trace {
  std::vector<double> loss;
  std::vector<EpochMetrics> metrics;
};

LocalPartition part_of(Rank size, Rank rank, bool groups) {
  const Dataset ds = testing::small_dataset();
  if (!groups) return testing::partition_of(ds, size, rank);
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  PartitionConfig pc;
  pc.parts = size;
  pc.seed = 7;
  const std::vector<Rank> owner = assign_parts(g, pc);
  std::vector<LocalPartition> all = build_local_partitions(ds, g, owner, size);
  LocalPartition lp = std::move(all[static_cast<std::size_t>(rank)]);
  attach_groups(lp, group_links(g, owner, size, GroupingConfig{}));
  return lp;
}

Trace train(const TrainConfig& cfg, LocalPartition part, Transport& t) {
  Trainer trainer(cfg, std::move(part), t, cpu_device());
  Trace tr;
  for (int e = 0; e < cfg.epochs; ++e) {
    tr.metrics.push_back(trainer.run_epoch(e, false));
    tr.loss.push_back(tr.metrics.back().loss);
  }
  return tr;
}

class Refresh : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ASSERT_GE(size, 2) << "refresh acts on the halo";
    world = make_mpi_transport(MPI_COMM_WORLD);
  }
  TrainConfig config() const {
    TrainConfig cfg = testing::small_config(ModelKind::sage);
    cfg.layers = 3;
    cfg.epochs = 7;
    return cfg;
  }
  int rank = 0, size = 1;
  std::unique_ptr<Transport> world;
};

TEST_F(Refresh, BoundOneOrFractionOneIsBitIdenticalToSyncThroughItsOwnPath) {
  struct Case {
    const char* name;
    const char* codec;
    bool groups;
    int s;
    double r;
  };
  for (const Case c : {Case{"s=1 fp32", "fp32", false, 1, 0.0}, Case{"r=1 fp32", "fp32", false, 50, 1.0},
                       Case{"s=1 q1", "q1", false, 1, 0.0}, Case{"s=1 semantic", "fp32", true, 1, 0.0}}) {
    SCOPED_TRACE(c.name);
    TrainConfig cfg = config();
    cfg.codec = c.codec;
    cfg.halo_rows = c.groups ? HaloRows::semantic : HaloRows::plain;
    const Trace sync = train(cfg, part_of(size, rank, c.groups), *world);
    cfg.exchange = ExchangeMode::refresh;
    cfg.staleness_bound = c.s;
    cfg.refresh_fraction = c.r;
    const Trace refresh = train(cfg, part_of(size, rank, c.groups), *world);
    EXPECT_EQ(refresh.loss, sync.loss);
    // Its own path: indexed messages (slot counts and indices are metadata even for fp32, whose
    // fixed-size messages have none), and its report counts every row refreshed.
    const EpochMetrics& m = refresh.metrics.back();
    const Json& fwd = m.traffic["layers"][1]["fwd"];
    const Json& sync_fwd = sync.metrics.back().traffic["layers"][1]["fwd"];
    EXPECT_GT(fwd["metadata"].get<std::int64_t>(), sync_fwd["metadata"].get<std::int64_t>());
    EXPECT_EQ(fwd["rows"], sync_fwd["rows"]);
    const Json& report = m.policy["refreshed"][0]["fwd"];
    EXPECT_EQ(report["by_age"].get<std::int64_t>() + report["by_importance"].get<std::int64_t>(),
              sync_fwd["rows"].get<std::int64_t>());
    EXPECT_TRUE(m.synchronous);
  }
}

TEST_F(Refresh, NoRowIsOlderThanTheBoundAndZeroFractionSendsExactlyTheRowsOfAgeS) {
  for (const double r : {0.0, 0.25}) {
    SCOPED_TRACE(r);
    TrainConfig cfg = config();
    cfg.exchange = ExchangeMode::refresh;
    cfg.staleness_bound = 3;
    cfg.refresh_fraction = r;
    cfg.epochs = 12;
    const Trace tr = train(cfg, part_of(size, rank, false), *world);
    const std::int64_t all_rows = tr.metrics[0].traffic["layers"][1]["fwd"]["rows"].get<std::int64_t>();
    ASSERT_GT(all_rows, 0);
    bool stale_used = false;
    for (const EpochMetrics& m : tr.metrics) {
      SCOPED_TRACE(m.epoch);
      EXPECT_LE(m.max_staleness, cfg.staleness_bound - 1) << "a row is re-sent when its age reaches s";
      stale_used = stale_used || m.max_staleness > 0;
      const Json& fwd = m.policy["refreshed"][0]["fwd"];
      if (r == 0) {
        // Every row was sent in epoch 0, so every row's age reaches s together.
        EXPECT_EQ(fwd["by_age"].get<std::int64_t>(), m.epoch % 3 == 0 ? all_rows : 0);
        EXPECT_EQ(fwd["by_importance"].get<std::int64_t>(), 0);
        EXPECT_EQ(m.traffic["layers"][1]["fwd"]["rows"].get<std::int64_t>(), m.epoch % 3 == 0 ? all_rows : 0);
      } else if (m.epoch > 0) {
        EXPECT_GT(fwd["by_importance"].get<std::int64_t>(), 0);
      }
      // Backward sends the gradients of the rows refreshed in this epoch.
      EXPECT_EQ(m.policy["refreshed"][0]["bwd"]["gradients"].get<std::int64_t>(),
                fwd["by_age"].get<std::int64_t>() + fwd["by_importance"].get<std::int64_t>());
    }
    EXPECT_TRUE(stale_used);
    EXPECT_LT(tr.loss.back(), tr.loss.front()) << "it still learns";
  }
}

}  // namespace
}  // namespace halognn
