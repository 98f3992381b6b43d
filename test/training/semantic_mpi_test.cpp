// Semantic groups end to end, at P >= 2 ranks:
// - a graph whose boundary consists of complete bipartite blocks (plus stars and single edges)
//   trains with group rows exactly like with plain rows (GCN, SAGE and GIN, losses within 1e-5), while
//   sending fewer rows; one edge more breaks a block and the runs part; the same holds with the
//   owned rows in a locality order;
// - the grouped exchange is the adjoint pair through the transport;
// - a GCN layer's backward through a grouped exchange agrees with finite differences.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "comm/halo_exchange.hpp"
#include "comm/transport.hpp"
#include "core/rng.hpp"
#include "models/local_graph.hpp"
#include "partition/semantic_groups.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

constexpr GlobalId kPerPart = 40;

/// Rank p owns nodes p*40 .. p*40+39. Inside a part: a ring with chords. Between parts p < q:
/// two complete blocks, an O2M star, an M2O star and one single edge, on node slots reserved for
/// that pair. `extra_edge` adds one cross edge that makes the first block incomplete.
struct BlockGraph {
  Dataset ds;
  std::vector<Rank> owner;
  GlobalGraph g;
};

BlockGraph block_graph(Rank parts, bool extra_edge) {
  BlockGraph b;
  const GlobalId n = parts * kPerPart;
  Dataset& ds = b.ds;
  ds.name = "blocks";
  ds.num_nodes = n;
  auto edge = [&](GlobalId u, GlobalId v) {
    ds.edge_src.push_back(u);
    ds.edge_dst.push_back(v);
  };
  for (Rank p = 0; p < parts; ++p)
    for (GlobalId i = 0; i < kPerPart; ++i) {
      edge(p * kPerPart + i, p * kPerPart + (i + 1) % kPerPart);
      edge(p * kPerPart + i, p * kPerPart + (i + 7) % kPerPart);
    }
  for (Rank p = 0; p < parts; ++p)
    for (Rank q = p + 1; q < parts; ++q) {
      const GlobalId a = p * kPerPart + 11 * q % kPerPart, c = q * kPerPart + 11 * p;
      for (GlobalId i = 0; i < 3; ++i)
        for (GlobalId j = 0; j < 4; ++j) edge(a + i, c + j);  // block 3 x 4
      for (GlobalId i = 3; i < 7; ++i)
        for (GlobalId j = 4; j < 6; ++j) edge(a + i, c + j);  // block 4 x 2
      for (GlobalId j = 6; j < 9; ++j) edge(a + 7, c + j);    // O2M star
      edge(a + 8, c + 9);                                      // M2O star
      edge(a + 9, c + 9);
      edge(a + 10, c + 10);                                    // O2O
      if (extra_edge) edge(a + 0, c + 5);                      // joins the blocks, incompletely
    }
  ds.num_classes = 3;
  ds.features = Matrix(n, 5);
  ds.labels.resize(static_cast<std::size_t>(n));
  const CounterRng rng(RngKey{17, RngPurpose::test, 0, 0});
  for (GlobalId v = 0; v < n; ++v) {
    for (std::int64_t j = 0; j < 5; ++j) ds.features(v, j) = rng.uniform(static_cast<std::uint64_t>(v), static_cast<std::uint64_t>(j)) - 0.5f;
    ds.labels[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(rng.word(static_cast<std::uint64_t>(v), 9) % 3);
    const float s = rng.uniform(static_cast<std::uint64_t>(v), 10);
    (s < 0.5f ? ds.train_idx : s < 0.7f ? ds.val_idx : ds.test_idx).push_back(v);
  }
  b.owner.resize(static_cast<std::size_t>(n));
  for (GlobalId v = 0; v < n; ++v) b.owner[static_cast<std::size_t>(v)] = static_cast<Rank>(v / kPerPart);
  b.g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  return b;
}

/// Part `rank` of the block graph with its semantic groups; owned rows numbered by `order` (the
/// default, 1024-row blocks, leaves 40-row parts in ascending global id).
LocalPartition grouped_part(const BlockGraph& b, Rank parts, Rank rank,
                            const LocalOrder& order = LocalOrder{}) {
  std::vector<LocalPartition> all =
      build_local_partitions(b.ds, b.g, b.owner, parts, nullptr, order);
  LocalPartition lp = std::move(all[static_cast<std::size_t>(rank)]);
  attach_groups(lp, group_links(b.g, b.owner, parts, GroupingConfig{}));
  return lp;
}

struct TrainRun {
  std::vector<double> loss;
  std::uint64_t layer1_fwd_rows = 0;
};

TrainRun train(const TrainConfig& cfg, LocalPartition part, Transport& t) {
  Trainer trainer(cfg, std::move(part), t, cpu_device());
  TrainRun r;
  for (int e = 0; e < cfg.epochs; ++e) {
    const EpochMetrics m = trainer.run_epoch(e, false);
    r.loss.push_back(m.loss);
    r.layer1_fwd_rows = m.traffic["layers"][1]["fwd"]["rows"].get<std::uint64_t>();
  }
  return r;
}

class Semantic : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ASSERT_GE(size, 2) << "groups live on the boundary between ranks";
    world = make_mpi_transport(MPI_COMM_WORLD);
  }
  int rank = 0, size = 1;
  std::unique_ptr<Transport> world;
};

// Why 1e-5: on complete blocks the grouped aggregate α_v D_g(v) Σ_u w_u β_u h_u equals the plain
// Σ_u α_v β_u h_u exactly in real arithmetic; in float32 the sums run in another order (a group
// row first), ~1e-7 relative per product over a few terms, and 8 Adam steps stay far below 1e-5.
// A wrong weight, a wrong β or a missing member moves the loss by 1e-3 or more (see the control).
TEST_F(Semantic, CompleteBlocksTrainExactlyLikePlainRowsWithFewerRows) {
  // GIN sums its neighbours unweighted (β = 1, α = 1): a group acts as D_g(v) identical
  // neighbours, which on a complete block is the members' sum.
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gin}) {
    SCOPED_TRACE(to_string(kind));
    TrainConfig cfg = testing::small_config(kind);
    cfg.dropout = 0.0f;  // dropout acts on rows, and a group row is not its members' rows
    cfg.epochs = 8;
    const BlockGraph b = block_graph(size, false);
    const TrainRun plain = train(cfg, grouped_part(b, size, rank), *world);
    cfg.halo_rows = HaloRows::semantic;
    const TrainRun sem = train(cfg, grouped_part(b, size, rank), *world);
    for (std::size_t e = 0; e < plain.loss.size(); ++e)
      EXPECT_NEAR(sem.loss[e], plain.loss[e], 1e-5 * std::fabs(plain.loss[e])) << "epoch " << e;
    EXPECT_LT(sem.layer1_fwd_rows, plain.layer1_fwd_rows) << "groups send fewer rows";
    EXPECT_LT(plain.loss.back(), plain.loss.front());

    // Control: one more cross edge makes a block incomplete, and the grouped run departs.
    cfg.halo_rows = HaloRows::plain;
    const BlockGraph broken = block_graph(size, true);
    const TrainRun plain2 = train(cfg, grouped_part(broken, size, rank), *world);
    cfg.halo_rows = HaloRows::semantic;
    const TrainRun sem2 = train(cfg, grouped_part(broken, size, rank), *world);
    double worst = 0;
    for (std::size_t e = 0; e < plain2.loss.size(); ++e)
      worst = std::max(worst, std::fabs(sem2.loss[e] - plain2.loss[e]) / std::fabs(plain2.loss[e]));
    EXPECT_GT(worst, 1e-4) << "an incomplete block is only approximated";
  }
}

// The same exactness when the owned rows are in a locality order (halognn-partition's default):
// the groups name local rows, so they must be attached to the renumbered part. Plain rows under
// the order also train like plain rows without it (only summation orders differ).
TEST_F(Semantic, CompleteBlocksStayExactUnderALocalityOrder) {
  const LocalOrder order{LocalOrder::Kind::blocks, 8, 3};
  const BlockGraph b = block_graph(size, false);
  {
    const LocalPartition lp = grouped_part(b, size, rank, order);
    ASSERT_FALSE(std::is_sorted(lp.global_ids.begin(), lp.global_ids.begin() + lp.num_owned))
        << "the order must renumber the owned rows, or this test shows nothing";
  }
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage}) {
    SCOPED_TRACE(to_string(kind));
    TrainConfig cfg = testing::small_config(kind);
    cfg.dropout = 0.0f;
    cfg.epochs = 8;
    const TrainRun unordered = train(cfg, grouped_part(b, size, rank), *world);
    const TrainRun plain = train(cfg, grouped_part(b, size, rank, order), *world);
    cfg.halo_rows = HaloRows::semantic;
    const TrainRun sem = train(cfg, grouped_part(b, size, rank, order), *world);
    for (std::size_t e = 0; e < plain.loss.size(); ++e) {
      EXPECT_NEAR(plain.loss[e], unordered.loss[e], 1e-5 * std::fabs(unordered.loss[e]))
          << "epoch " << e;
      EXPECT_NEAR(sem.loss[e], plain.loss[e], 1e-5 * std::fabs(plain.loss[e])) << "epoch " << e;
    }
    EXPECT_LT(sem.layer1_fwd_rows, plain.layer1_fwd_rows) << "groups send fewer rows";
  }
}

/// β of GCN for a local row, as the trainer gives it.
std::function<float(LocalId)> gcn_beta(const LocalPartition& lp) {
  return [&lp](LocalId r) {
    return neighbour_scale(ModelKind::gcn, lp.global_degree[static_cast<std::size_t>(r)]);
  };
}

double dot(const Matrix& a, const Matrix& b) {
  double s = 0;
  for (std::int64_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a.host()[static_cast<std::size_t>(i)]) * b.host()[static_cast<std::size_t>(i)];
  return s;
}

double global_sum(double x) {
  double out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

/// Values keyed by global id, so every rank agrees on them.
Matrix keyed(const LocalPartition& lp, LocalId begin, LocalId end, std::int64_t f, std::uint64_t seed) {
  const CounterRng rng(RngKey{seed, RngPurpose::test, 3, 0});
  Matrix m(end - begin, f);
  for (LocalId i = begin; i < end; ++i)
    for (std::int64_t j = 0; j < f; ++j)
      m(i - begin, j) = rng.uniform(static_cast<std::uint64_t>(lp.global_ids[static_cast<std::size_t>(i)]), static_cast<std::uint64_t>(j)) - 0.5f;
  return m;
}

TEST_F(Semantic, GroupedExchangeIsTheAdjointPairThroughTheTransport) {
  // A random graph (groups of every kind, incomplete blocks) partitioned by METIS.
  const Dataset ds = testing::small_dataset(5);
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  PartitionConfig pc;
  pc.parts = size;
  const std::vector<Rank> owner = assign_parts(g, pc);
  std::vector<LocalPartition> all = build_local_partitions(ds, g, owner, size);
  LocalPartition lp = std::move(all[static_cast<std::size_t>(rank)]);
  attach_groups(lp, group_links(g, owner, size, GroupingConfig{}));
  auto plan = std::make_shared<const HaloPlan>(HaloPlan::build_grouped(lp, gcn_beta(lp), cpu_device()));
  TrafficCounter traffic;
  HaloExchange ex(plan, *world, traffic);
  const std::int64_t f = 4;
  const Matrix x = keyed(lp, 0, lp.num_owned, f, 1);
  const Matrix y = keyed(lp, lp.num_owned, lp.num_local(), f, 2);
  Matrix ex_x(lp.num_halo, f), et_y(lp.num_owned, f);
  ex.start_forward(1, 0, 0, x.cview(), ex_x.view()).wait();
  ex.start_backward(1, 0, 0, y.cview(), et_y.view()).wait();
  const double lhs = global_sum(dot(ex_x, y)), rhs = global_sum(dot(x, et_y));
  EXPECT_GT(std::fabs(lhs), 1e-3) << "the operator is not zero";
  EXPECT_NEAR(lhs, rhs, 1e-5 * (std::fabs(lhs) + std::fabs(rhs)));
}

// L = Σ over ranks of <GCN(x with halo from the grouped exchange), r>. The layer is linear in x,
// so a central difference with a large step is exact up to float rounding (~1e-6 relative).
TEST_F(Semantic, GcnBackwardThroughAGroupedExchangeMatchesFiniteDifferences) {
  const BlockGraph b = block_graph(size, true);
  LocalPartition lp = grouped_part(b, size, rank);
  const LocalGraph graph = LocalGraph::build(lp, cpu_device());
  auto plan = std::make_shared<const HaloPlan>(HaloPlan::build_grouped(lp, gcn_beta(lp), cpu_device()));
  TrafficCounter traffic;
  HaloExchange ex(plan, *world, traffic);
  LayerConfig lc;
  lc.kind = ModelKind::gcn;
  lc.in_dim = 3;
  lc.out_dim = 2;
  auto layer = make_layer(lc, 5, 1);
  layer->prepare(graph);
  Matrix x_owned = keyed(lp, 0, lp.num_owned, 3, 7);
  const Matrix r = keyed(lp, 0, lp.num_owned, 2, 8);
  Matrix x(lp.num_local(), 3), y(lp.num_owned, 2);
  auto loss = [&] {
    kernels::copy(*cpu_device(), x_owned.cview(), x.view().rows_range(0, lp.num_owned));
    ex.start_forward(1, 0, 0, x_owned.cview(), x.view().rows_range(lp.num_owned, lp.num_local())).wait();
    layer->forward(graph, x.view(), y.view(), ForwardContext{});
    return global_sum(dot(y, r));
  };
  loss();
  Matrix gx(lp.num_local(), 3);
  layer->backward(graph, r.view(), gx.view());
  ex.start_backward(1, 0, 0, gx.view().rows_range(lp.num_owned, lp.num_local()),
                    gx.view().rows_range(0, lp.num_owned)).wait();
  // Probe the first rows of every rank (ring rows; the boundary slots start there too) and one
  // column each; ranks take turns so every rank evaluates every perturbed loss.
  for (int owner_rank = 0; owner_rank < size; ++owner_rank)
    for (LocalId i = 0; i < 12; ++i) {
      const std::int64_t j = i % 3;
      const float step = 0.5f;
      float* entry = owner_rank == rank ? &x_owned(i, j) : nullptr;
      if (entry) *entry += step;
      const double up = loss();
      if (entry) *entry -= 2 * step;
      const double down = loss();
      if (entry) *entry += step;
      const double fd = (up - down) / (2 * step);
      if (entry) {
        EXPECT_NEAR(gx(i, j), fd, 1e-4 * (1 + std::fabs(fd))) << "rank " << rank << " row " << i;
      }
    }
}

}  // namespace
}  // namespace halognn
