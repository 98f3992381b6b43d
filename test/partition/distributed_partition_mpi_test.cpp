// The distributed partitioner (partition/distributed_partition.hpp) at 2 and 4 ranks: its rank
// files equal the serial writer's byte for byte under the same assignment, training on its
// partition equals 1-rank training, every rank reads only its slice, and bad input is refused on
// every rank without a hang or a half-written directory.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test/mpi_world.hpp"
#include "comm/transport.hpp"
#include "core/data/npy.hpp"
#include "partition/distributed_partition.hpp"
#include "partition/partition_io.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

using testing::world_rank;
using testing::world_size;

namespace fs = std::filesystem;

/// A scratch directory that every rank sees under the same name (rank 0's pid).
class SharedDir {
 public:
  SharedDir() {
    long long pid = static_cast<long long>(getpid());
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    path_ = fs::temp_directory_path() / ("halognn-distpart-test-" + std::to_string(pid));
    if (world_rank() == 0) {
      fs::remove_all(path_);
      fs::create_directories(path_);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) fs::remove_all(path_);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A rank file without what differs between two runs of the same partition: the run id (header
/// offset 88) and the CRC32 trailer that covers it.
std::string without_run_id(std::string bytes) {
  EXPECT_GT(bytes.size(), 100u);
  std::memset(bytes.data() + 88, 0, 8);
  bytes.resize(bytes.size() - 4);
  return bytes;
}

PartitionConfig parmetis_config(Rank parts, LocalOrder order) {
  PartitionConfig c;
  c.parts = parts;
  c.method = PartitionConfig::Method::parmetis;
  c.seed = 5;
  c.order = order;
  c.order.seed = c.seed;
  return c;
}

/// The test dataset, multi-label when asked (one label bit per class of the single label and of
/// its neighbour class).
Dataset test_dataset(bool multilabel) {
  Dataset ds = testing::small_dataset();
  if (multilabel) {
    ds.multilabel = true;
    ds.label_matrix.assign(static_cast<std::size_t>(ds.num_nodes * ds.num_classes), 0);
    for (GlobalId v = 0; v < ds.num_nodes; ++v) {
      ds.label_matrix[v * ds.num_classes + ds.labels[v]] = 1;
      ds.label_matrix[v * ds.num_classes + (ds.labels[v] + 1) % ds.num_classes] = v % 3 == 0;
    }
    ds.labels.clear();
  }
  return ds;
}

// (a) Given the same assignment, the distributed writer's rank files are the serial writer's,
// byte for byte (but for the run id), for part counts above, at and below the rank count, every
// locality order, single- and multi-label data; the manifests agree on everything but the run.
TEST(DistributedPartition, RankFilesEqualTheSerialWritersUnderTheSameAssignment) {
  const SharedDir dir;
  const Rank k = world_size();
  for (const bool multilabel : {false, true}) {
    const Dataset ds = test_dataset(multilabel);
    const std::string data = dir / (multilabel ? "data-ml" : "data");
    if (world_rank() == 0) write_dataset(ds, data);
    MPI_Barrier(MPI_COMM_WORLD);
    const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
    for (const Rank parts : {Rank{1}, k, k + 1, 2 * k + 1}) {
      for (const LocalOrder order : {LocalOrder{LocalOrder::Kind::none, 1024, 1},
                                     LocalOrder{LocalOrder::Kind::blocks, 48, 5},
                                     LocalOrder{LocalOrder::Kind::rcm, 1024, 1}}) {
        SCOPED_TRACE(::testing::Message() << "parts " << parts << ", order "
                                          << to_string(order.kind) << ", multilabel "
                                          << multilabel);
        PartitionConfig serial_cfg;
        serial_cfg.parts = parts;
        serial_cfg.seed = 5;
        serial_cfg.order = order;
        const std::vector<Rank> assignment = assign_parts(g, serial_cfg);
        const std::string serial = dir / "serial", distributed = dir / "distributed";
        Json serial_manifest;
        if (world_rank() == 0) serial_manifest = write_partition_dir(ds, g, assignment, serial_cfg, serial);
        const DistributedPartitionResult r = distributed_partition(
            MPI_COMM_WORLD, data, parmetis_config(parts, order), distributed,
            [&](GlobalId v) { return assignment[v]; });
        if (world_rank() != 0) continue;
        for (Rank p = 0; p < parts; ++p) {
          const std::string a = slurp(serial + "/" + partition_file_name(p));
          const std::string b = slurp(distributed + "/" + partition_file_name(p));
          // EXPECT, not ASSERT: rank 0 must not leave the loop (and its collectives) early.
          EXPECT_EQ(a.size(), b.size()) << "part " << p;
          EXPECT_TRUE(a.size() == b.size() && without_run_id(a) == without_run_id(b))
              << "part " << p << " differs";
        }
        const Json dm = read_partition_manifest(distributed);
        for (const char* key : {"edge_cut", "total_volume", "imbalance", "owned", "halo",
                                "boundary", "sent_rows", "local_edges", "pair_volume", "parts",
                                "feature_bytes_dense", "order"})
          EXPECT_EQ(dm[key], serial_manifest[key]) << key;
        EXPECT_EQ(dm["dataset"], serial_manifest["dataset"]) << "fingerprint and sizes";
        EXPECT_EQ(dm["method"], "parmetis");
        EXPECT_EQ(dm["ranks"], k);
        // Every rank file passes the reader's checks.
        for (Rank p = 0; p < parts; ++p) EXPECT_NO_THROW(read_local_partition(distributed, p, parts));
      }
    }
  }
}

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

// (b) The project's invariant on a partition PT-Scotch made on the job's ranks (from a sample of
// the edges, refined on the whole graph): training on it
// (exact fp32 exchange) equals training on one part, to float summation order (the tolerance of
// test/training/exactness_test.cpp, which says why 1e-4). The same seed gives the same partition.
TEST(DistributedPartition, TrainingOnItEqualsOneRankTraining) {
  const SharedDir dir;
  const Rank k = world_size();
  const Dataset ds = testing::small_dataset();
  const std::string data = dir / "data";
  if (world_rank() == 0) write_dataset(ds, data);
  MPI_Barrier(MPI_COMM_WORLD);
  PartitionConfig cfg = parmetis_config(k, LocalOrder{LocalOrder::Kind::blocks, 48, 5});
  // PT-Scotch sees a sample of the edges (a vertex keeps about 4 of its ~10), refined on all.
  cfg.sample_degree = 4;
  const DistributedPartitionResult r = distributed_partition(MPI_COMM_WORLD, data, cfg, dir / "p");
  EXPECT_LT(r.sampling.sampled_entries, r.sampling.entries * 3 / 4);
  if (world_rank() == 0) {
    EXPECT_EQ(r.report.edge_cut, r.sampling.final_cut);
    // A real partition: every part owns vertices, the cut is that of a partitioner (random
    // assignment cuts (k-1)/k of the edges), the balance is near METIS'.
    EXPECT_GT(r.report.edge_cut, 0);
    EXPECT_LT(r.report.edge_cut, r.report.num_edges * (k - 1) / k / 2);
    EXPECT_LE(r.report.imbalance, 1.10);
    for (GlobalId o : r.report.owned) EXPECT_GT(o, 0);
  }
  // Same seed, same partition.
  distributed_partition(MPI_COMM_WORLD, data, cfg, dir / "again");
  if (world_rank() == 0) {
    for (Rank p = 0; p < k; ++p)
      EXPECT_TRUE(without_run_id(slurp(dir / "p/" + partition_file_name(p))) ==
                  without_run_id(slurp(dir / "again/" + partition_file_name(p))))
          << "part " << p << " differs between two runs with one seed";
  }

  for (const ModelKind kind : {ModelKind::gcn, ModelKind::sage, ModelKind::gat}) {
    SCOPED_TRACE(to_string(kind));
    const TrainConfig tc = testing::small_config(kind);
    auto world = make_mpi_transport(MPI_COMM_WORLD);
    const Trace distributed = train(tc, read_local_partition(dir / "p", world_rank(), k), *world);
    auto self = make_mpi_transport(MPI_COMM_SELF);
    const Trace single = train(tc, testing::partition_of(ds, 1, 0), *self);
    ASSERT_EQ(distributed.loss.size(), single.loss.size());
    for (std::size_t e = 0; e < single.loss.size(); ++e)
      EXPECT_NEAR(distributed.loss[e], single.loss[e], 1e-4 * std::fabs(single.loss[e]))
          << "epoch " << e;
    ASSERT_EQ(distributed.val.size(), 1u);
    EXPECT_NEAR(distributed.val[0], single.val[0], 1.0 / 120);
    EXPECT_LT(single.loss.back(), 0.9 * single.loss.front());
  }
}

// (c) Rank r reads its slice and nothing else: the bytes each rank read are its edge rows, node
// rows and split-list slice plus the arrays' headers, and over all ranks every element byte of
// every array is read exactly once.
TEST(DistributedPartition, EveryRankReadsOnlyItsSlice) {
  const SharedDir dir;
  const Rank k = world_size();
  const Dataset ds = testing::small_dataset();
  const std::string data = dir / "data";
  if (world_rank() == 0) write_dataset(ds, data);
  MPI_Barrier(MPI_COMM_WORLD);
  const DistributedPartitionResult r = distributed_partition(
      MPI_COMM_WORLD, data, parmetis_config(k, LocalOrder{LocalOrder::Kind::none, 1024, 1}),
      dir / "p");
  const DistributedPartitionStats& s = r.local;
  std::uint64_t headers = 0, elements_total = 0;
  const char* files[] = {"edges.npy", "features.npy", "labels.npy", "train_idx.npy",
                         "val_idx.npy", "test_idx.npy"};
  std::uint64_t slice = 0;
  for (const char* f : files) {
    NpyRowReader npy(data + "/" + f);
    std::int64_t per_row = 1;
    for (std::size_t d = 1; d < npy.header().shape.size(); ++d) per_row *= npy.header().shape[d];
    const std::uint64_t row_bytes = per_row * npy.header().item_size;
    const std::uint64_t data_bytes = npy.header().shape[0] * row_bytes;
    headers += fs::file_size(data + "/" + f) - data_bytes;
    elements_total += data_bytes;
    const std::string name = f;
    const std::int64_t rows = npy.header().shape[0];
    // Edges: the edge block; node arrays: the node block; split lists: their own block.
    const std::int64_t lo = name == "edges.npy" ? s.edge_begin
                            : name.find("_idx") != std::string::npos
                                ? static_cast<std::int64_t>(static_cast<__int128>(rows) * world_rank() / k)
                                : s.node_begin;
    const std::int64_t hi = name == "edges.npy" ? s.edge_end
                            : name.find("_idx") != std::string::npos
                                ? static_cast<std::int64_t>(static_cast<__int128>(rows) * (world_rank() + 1) / k)
                                : s.node_end;
    slice += (hi - lo) * row_bytes;
  }
  EXPECT_EQ(s.bytes_read, headers + slice) << "rank " << world_rank() << " read beyond its slice";
  EXPECT_LT(s.bytes_read, elements_total / k + elements_total / 10 + headers);
  std::uint64_t read_all = s.bytes_read;
  MPI_Allreduce(MPI_IN_PLACE, &read_all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(read_all, elements_total + k * headers) << "every element byte read exactly once";
  EXPECT_EQ(s.node_end - s.node_begin, ds.num_nodes * (world_rank() + 1) / k - ds.num_nodes * world_rank() / k);
  EXPECT_GT(s.bytes_sent, 0u);
}

/// Runs the distributed partitioner and expects every rank to throw an error mentioning `what`,
/// with `out` not created and no staging directory left.
void expect_refused(const std::string& data, const PartitionConfig& cfg, const std::string& out,
                    const std::string& what) {
  std::string message;
  try {
    distributed_partition(MPI_COMM_WORLD, data, cfg, out);
  } catch (const std::exception& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(what), std::string::npos)
      << "rank " << world_rank() << " got '" << message << "', expected it to mention '" << what
      << "'";
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    EXPECT_FALSE(fs::exists(out)) << out << " was written";
    for (const auto& e : fs::directory_iterator(fs::path(out).parent_path()))
      EXPECT_EQ(e.path().filename().string().find(fs::path(out).filename().string() + ".tmp"),
                std::string::npos)
          << "left behind: " << e.path();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// (d) Bad input is refused on every rank with one line; nothing is written, nothing hangs.
TEST(DistributedPartition, BadInputIsRefusedOnEveryRank) {
  const SharedDir dir;
  const Rank k = world_size();
  const Dataset ds = testing::small_dataset();
  const std::string data = dir / "data";
  if (world_rank() == 0) write_dataset(ds, data);
  MPI_Barrier(MPI_COMM_WORLD);
  const PartitionConfig cfg = parmetis_config(k, LocalOrder{LocalOrder::Kind::none, 1024, 1});

  {  // more ranks than nodes
    const std::string tiny = dir / "tiny";
    if (world_rank() == 0) {
      Dataset t;
      t.name = "tiny";
      t.num_nodes = k - 1;
      t.features = Matrix(k - 1, 2);
      t.num_classes = 2;
      t.labels.assign(static_cast<std::size_t>(k - 1), 0);
      t.train_idx = {0};
      write_dataset(t, tiny);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    PartitionConfig one = cfg;
    one.parts = 1;
    expect_refused(tiny, one, dir / "out", "cannot spread " + std::to_string(k - 1) +
                                               " vertices over " + std::to_string(k) + " ranks");
  }
  {  // a missing array
    const std::string broken = dir / "no-features";
    if (world_rank() == 0) {
      fs::copy(data, broken);
      fs::remove(broken + "/features.npy");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_refused(broken, cfg, dir / "out", "features.npy");
  }
  {  // an edge id out of range in the last edge row: only the last rank reads it
    const std::string bad = dir / "bad-edge";
    if (world_rank() == 0) {
      fs::copy(data, bad);
      std::vector<std::int64_t> edges;
      for (std::size_t e = 0; e < ds.edge_src.size(); ++e) {
        edges.push_back(ds.edge_src[e]);
        edges.push_back(ds.edge_dst[e]);
      }
      edges.back() = ds.num_nodes + 7;
      fs::remove(bad + "/edges.npy");
      write_npy(bad + "/edges.npy", NpyType::i8,
                {static_cast<std::int64_t>(ds.edge_src.size()), 2}, edges);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_refused(bad, cfg, dir / "out",
                   "node id " + std::to_string(ds.num_nodes + 7) + " out of range");
  }
  {  // a node in two splits: found by the owner of the node, whichever rank read the lists
    const std::string bad = dir / "bad-split";
    if (world_rank() == 0) {
      fs::copy(data, bad);
      std::vector<std::int64_t> val(ds.val_idx.begin(), ds.val_idx.end());
      val.push_back(ds.train_idx.back());
      fs::remove(bad + "/val_idx.npy");
      write_npy(bad + "/val_idx.npy", NpyType::i8, {static_cast<std::int64_t>(val.size())}, val);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_refused(bad, cfg, dir / "out", "splits must be disjoint");
  }
  {  // options the distributed path does not have
    PartitionConfig vol = cfg;
    vol.objective = PartitionConfig::Objective::vol;
    expect_refused(data, vol, dir / "out", "--objective vol");
    PartitionConfig groups = cfg;
    groups.semantic_groups = true;
    expect_refused(data, groups, dir / "out", "--groups semantic");
    PartitionConfig sparse = cfg;
    sparse.sparsify_k = 4;
    expect_refused(data, sparse, dir / "out", "--sparsify-features");
  }
  {  // an output that is not a partition directory is left alone
    const std::string precious = dir / "precious";
    if (world_rank() == 0) {
      fs::create_directories(precious);
      std::ofstream(precious + "/notes.txt") << "keep me\n";
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::string message;
    try {
      distributed_partition(MPI_COMM_WORLD, data, cfg, precious);
    } catch (const std::exception& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("not a partition directory"), std::string::npos) << message;
    if (world_rank() == 0) {
      EXPECT_TRUE(fs::exists(precious + "/notes.txt"));
    }
  }
}

}  // namespace
}  // namespace halognn
