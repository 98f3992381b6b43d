// Sparsified features end to end, at P >= 2 ranks: a partition written with sparsify_k trains
// exactly like a dense partition of the decoded features (GCN, SAGE, GAT and GIN, with dropout
// and row normalisation), so the rank files, the one-time exchange of the halo rows' positions
// and the compact layer-0 kernels together compute what the dense path computes; the bytes
// reported are the positions that crossed.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "comm/transport.hpp"
#include "core/data/feature_sparsify.hpp"
#include "partition/partition_io.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

constexpr std::int32_t kK = 3;

Dataset wide_dataset() {
  SbmConfig c;
  c.num_nodes = 500;
  c.num_edges = 2500;
  c.num_classes = 4;
  c.num_features = 300;  // two chunks, the second 44 wide
  c.homophily = 0.8;
  c.train_fraction = 0.3;
  c.val_fraction = 0.2;
  c.seed = 5;
  return generate_sbm(c);
}

class Sparsified : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ASSERT_GE(size, 2) << "the halo exchange needs two ranks";
    world = make_mpi_transport(MPI_COMM_WORLD);
    long long pid = ::getpid();
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    dir = fs::temp_directory_path() / ("halognn_sparsify_test." + std::to_string(pid));
    if (rank == 0) {
      // The same data sparsified by the partitioner, and decoded into a dense dataset.
      const Dataset ds = wide_dataset();
      const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
      PartitionConfig pc;
      pc.parts = size;
      pc.seed = 7;
      const std::vector<Rank> owner = assign_parts(g, pc);
      pc.sparsify_k = kK;
      pc.sparsify_sample = 200;  // a sample: the codebook must still be the same everywhere
      write_partition_dir(ds, g, owner, pc, (dir / "compact").string());
      const SparseFeatures sf = sparsify_features(ds.features.data(), ds.num_nodes,
                                                  ds.features.cols(), kK, pc.seed,
                                                  200.0 / static_cast<double>(ds.num_nodes));
      Dataset decoded = wide_dataset();
      desparsify_features(sf, decoded.features.data());
      pc.sparsify_k = 0;
      write_partition_dir(decoded, g, owner, pc, (dir / "dense").string());
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) fs::remove_all(dir);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  int rank = 0, size = 1;
  std::unique_ptr<Transport> world;
  fs::path dir;
};

struct TrainRun {
  std::vector<double> loss;
  FinalMetrics final;
  bool compact = false;
};

TrainRun train(TrainConfig cfg, const std::string& dir, Rank rank, Rank size, Transport& t) {
  cfg.partition_dir = dir;
  Trainer trainer(cfg, read_local_partition(dir, rank, size), t, cpu_device());
  TrainRun r;
  r.final = trainer.run([&](const EpochMetrics& m) { r.loss.push_back(m.loss); });
  r.compact = trainer.compact_input();
  return r;
}

// Why 1e-5 relative: both runs multiply the same non-zero feature entries (the decoded matrix is
// zero elsewhere) under the same dropout masks and differ in float summation order only; a halo
// row left without its positions, another codebook or another mask moves the loss by 1e-3 or more.
TEST_F(Sparsified, TrainsLikeTheDecodedDensePartitionForEveryModel) {
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gat, ModelKind::gin}) {
    SCOPED_TRACE(to_string(kind));
    TrainConfig cfg = testing::small_config(kind);
    cfg.epochs = 6;
    cfg.row_normalize_features = true;
    cfg.sparse_features = false;  // the dense partition stays dense (its features are ~2% non-zero)
    const TrainRun compact = train(cfg, (dir / "compact").string(), rank, size, *world);
    const TrainRun dense = train(cfg, (dir / "dense").string(), rank, size, *world);
    ASSERT_TRUE(compact.compact);
    ASSERT_FALSE(dense.compact);
    ASSERT_EQ(compact.loss.size(), dense.loss.size());
    for (std::size_t e = 0; e < dense.loss.size(); ++e)
      EXPECT_NEAR(compact.loss[e], dense.loss[e], 1e-5 * std::abs(dense.loss[e])) << "epoch " << e;
    EXPECT_NEAR(compact.final.final_scores.test, dense.final.final_scores.test, 1e-12);
  }
}

TEST_F(Sparsified, ReportsThePositionsThatCrossedAndTheBytesHeld) {
  TrainConfig cfg = testing::small_config(ModelKind::gcn);
  cfg.epochs = 1;
  cfg.sparse_features = false;  // the decoded partition held dense: its memory is the fp32 matrix
  const TrainRun compact = train(cfg, (dir / "compact").string(), rank, size, *world);
  const TrainRun dense = train(cfg, (dir / "dense").string(), rank, size, *world);
  const SparsifyLayout layout = make_sparsify_layout(300, kK);
  const FeatureBytes& c = compact.final.feature_bytes;
  const FeatureBytes& d = dense.final.feature_bytes;
  // Every halo row's positions cross once: slots bytes a row, against 4 bytes a feature dense.
  ASSERT_GT(d.sent, 0u);
  EXPECT_EQ(d.sent, d.sent_dense);
  EXPECT_EQ(c.sent_dense, d.sent_dense);
  EXPECT_EQ(c.sent * 300 * 4, d.sent * static_cast<std::uint64_t>(layout.slots()));
  EXPECT_EQ(compact.final.feature_exchange_bytes, c.sent);
  // In memory and in the rank files: positions (plus one codebook and slot map per rank).
  const std::uint64_t per_rank = static_cast<std::uint64_t>(layout.slots()) * 8;
  EXPECT_EQ(c.memory_dense, d.memory_dense);
  EXPECT_EQ(d.memory, 2 * d.memory_dense);  // the dense input and its dropout copy
  EXPECT_EQ((c.memory - size * per_rank) * 300 * 4,
            c.memory_dense * static_cast<std::uint64_t>(layout.slots()));
  EXPECT_EQ(c.stored_dense, d.stored);
  EXPECT_EQ((c.stored - size * layout.slots() * 4) * 300 * 4,
            c.stored_dense * static_cast<std::uint64_t>(layout.slots()));
  EXPECT_EQ(compact.final.feature_form, "sparsified");
  EXPECT_EQ(compact.final.feature_exchange_codec, "positions");
}

}  // namespace
}  // namespace halognn
