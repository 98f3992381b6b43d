// The distributed partitioner (distributed_partition.hpp; docs/partitioning.md "Distributed
// partitioning").
//
// Data flow on K ranks, no rank ever holding more than its share of the graph:
//   1. rank r reads edge rows [r E/K, (r+1) E/K) and node rows [r N/K, (r+1) N/K) of the .npy
//      arrays (offset reads, core/data/npy.hpp NpyRowReader); split lists are read the same way and
//      routed to the owner of each listed node;
//   2. every edge goes, in both directions, to the rank owning its source node: rank r then
//      holds the complete (deduplicated, loop-free) neighbour lists of its node block;
//   3. PT-Scotch (64-bit SCOTCH_Num: no id is cut; seeded, deterministic, METIS' 3% imbalance)
//      partitions a sample of the edges, and label propagation refines the parts on the whole
//      graph (sampled_partition.hpp, scotch_kway.hpp);
//   4. the owner of every foreign neighbour tells its part and degree (dist_graph.hpp's plan);
//   5. each node moves, with its neighbour list, the parts and (for foreign neighbours) degrees
//      of its neighbours, its features, label and split, to the writer of its part (part p:
//      rank p mod K), which builds the part with build_part and writes its rank file into the
//      staging directory that rank 0 created; rank 0 writes the manifest and commits.
// Every fallible step ends in collective_try, so a failure anywhere is a failure everywhere.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <type_traits>

#include <zlib.h>

#include "comm/mpi_env.hpp"
#include "core/atomic_output.hpp"
#include "core/clock.hpp"
#include "core/data/npy.hpp"
#include "core/data/state_io.hpp"
#include "core/error.hpp"
#include "core/file_read.hpp"
#include "core/process_memory.hpp"
#include "partition/build_part.hpp"
#include "partition/dist_exchange.hpp"
#include "partition/distributed_partition.hpp"
#include "partition/partition_io.hpp"
#include "partition/sampled_partition.hpp"
#include "partition/scotch_kway.hpp"

namespace halognn {

namespace fs = std::filesystem;

namespace {

using dist::block_begin;
using dist::block_owner;
using dist::Cursor;
using dist::exchange;
using dist::put;

/// METIS' default imbalance (ufactor 30), asked of PT-Scotch and kept by the refinement.
constexpr double kImbalance = 0.03;

constexpr const char* kSplitNames[3] = {"train", "val", "test"};

/// The fields of a dataset's manifest.json that the partitioner needs (docs/datasets.md).
struct DatasetShape {
  std::string name;
  std::int64_t num_nodes = 0, num_edges = 0, num_features = 0;
  std::int32_t num_classes = 0;
  bool multilabel = false;
};

DatasetShape read_dataset_shape(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir, "not a directory (missing dataset)");
  const std::string path = (fs::path(dir) / "manifest.json").string();
  if (!fs::exists(path)) throw InputError(path, "missing");
  const Json m = read_json_file(path);
  GNN_CHECK_INPUT(m.is_object() && m.contains("format") && m["format"] == "halognn-dataset", path,
                  "not a halognn dataset manifest (\"format\" must be \"halognn-dataset\")");
  // Version 2 is a dataset with sparsified features (docs/datasets.md), which this partitioner
  // does not read: the serial partitioner does.
  GNN_CHECK_INPUT(json_int(m, "version", path) != 2 || !m.contains("sparsified_features"), path,
                  "a dataset with sparsified features cannot be partitioned with --method parmetis "
                  "(use the serial partitioner, --method metis)");
  GNN_CHECK_INPUT(json_int(m, "version", path) == 1, path, "unknown format version ",
                  json_int(m, "version", path), " (this build reads version 1)");
  DatasetShape s;
  s.name = m.contains("name") ? json_string(m, "name", path) : fs::path(dir).filename().string();
  s.num_nodes = json_int(m, "num_nodes", path);
  s.num_edges = json_int(m, "num_edges", path);
  s.num_features = json_int(m, "num_features", path);
  const std::int64_t classes = json_int(m, "num_classes", path);
  GNN_CHECK_INPUT(s.num_nodes >= 0 && s.num_edges >= 0 && s.num_features >= 0, path,
                  "negative size in the manifest");
  GNN_CHECK_INPUT(classes >= 1 && classes <= std::numeric_limits<std::int32_t>::max(), path,
                  "\"num_classes\" must be in [1, 2^31)");
  s.num_classes = static_cast<std::int32_t>(classes);
  s.multilabel = m.contains("multilabel") && json_bool(m, "multilabel", path);
  return s;
}

void expect_type(const NpyRowReader& f, std::initializer_list<NpyType> allowed, const char* what) {
  for (NpyType t : allowed)
    if (f.header().type == t) return;
  throw InputError(f.path(), "dtype " + npy_descr(f.header().type, f.header().item_size) +
                                 " not allowed (expected " + what + ")");
}

void expect_shape(const NpyRowReader& f, const std::vector<std::int64_t>& want, const char* pretty) {
  GNN_CHECK_INPUT(f.header().shape == want, f.path(), "shape ", format_shape(f.header().shape),
                  " does not match the expected ", pretty, " = ", format_shape(want));
}

/// One split in its stored form (indices or a mask), opened.
struct SplitFile {
  bool mask = false;
  std::unique_ptr<NpyRowReader> file;
};

SplitFile open_split(const std::string& dir, int s, std::int64_t n) {
  const std::string name = kSplitNames[s];
  const std::string idx = (fs::path(dir) / (name + "_idx.npy")).string();
  const std::string mask = (fs::path(dir) / (name + "_mask.npy")).string();
  const bool has_idx = fs::exists(idx), has_mask = fs::exists(mask);
  GNN_CHECK_INPUT(!(has_idx && has_mask), idx, "both ", name, "_idx.npy and ", name,
                  "_mask.npy exist; keep exactly one form of each split");
  GNN_CHECK_INPUT(has_idx || has_mask, idx, "missing (neither ", name, "_idx.npy nor ", name,
                  "_mask.npy exists)");
  SplitFile sf;
  sf.mask = has_mask;
  sf.file = std::make_unique<NpyRowReader>(has_mask ? mask : idx);
  if (has_mask) {
    expect_type(*sf.file, {NpyType::b1, NpyType::u1}, "bool or uint8");
    expect_shape(*sf.file, {n}, "(num_nodes,)");
  } else {
    expect_type(*sf.file, {NpyType::i8, NpyType::i4}, "int64 or int32");
    GNN_CHECK_INPUT(sf.file->header().shape.size() == 1, sf.file->path(), "shape ",
                    format_shape(sf.file->header().shape), " is not 1-D (k,)");
  }
  return sf;
}

/// This rank's block of nodes: complete neighbour lists and the rows of the node arrays.
struct NodeBlock {
  GlobalId begin = 0, end = 0;
  std::vector<EdgeOffset> row_ptr;
  std::vector<GlobalId> col;
  std::vector<float> features;        // (end - begin) x F
  std::vector<std::int32_t> labels;   // single-label
  std::vector<std::uint8_t> label_matrix;  // multi-label, (end - begin) x C
  std::vector<std::uint8_t> split;    // 0 none, 1 train, 2 val, 3 test
  std::vector<Rank> part;
  std::int64_t size() const { return end - begin; }
};

/// CRC32 pieces of the data the dataset fingerprint hashes (dataset_fingerprint): this rank's
/// slices of the edge sources, destinations (as int64) and labels (int32 or the 0/1 matrix).
struct CrcPieces {
  std::uint32_t src = 0, dst = 0, labels = 0;
  std::uint64_t src_len = 0, dst_len = 0, labels_len = 0;
};

}  // namespace

DistributedPartitionResult distributed_partition(MPI_Comm comm, const std::string& data_dir,
                                                 const PartitionConfig& cfg,
                                                 const std::string& out_arg,
                                                 const PartAssignment& assignment,
                                                 const PartitionProgress& progress) {
  int k_int = 1, me_int = 0;
  MPI_Comm_size(comm, &k_int);
  MPI_Comm_rank(comm, &me_int);
  const Rank K = k_int, me = me_int;
  const Rank P = cfg.parts;
  const auto step_begins = [&](const char* step) {
    if (me_int == 0 && progress) progress(step);
  };
  DistributedPartitionResult res;
  DistributedPartitionStats& st = res.local;
  auto t0 = Clock::now();

  // --- options and the dataset's shape (every rank reads the small manifest) -----------------
  DatasetShape ds;
  collective_try(comm, [&] {
    GNN_CHECK_CONFIG(P >= 1, "--parts must be at least 1 (got ", P, ")");
    GNN_CHECK_CONFIG(cfg.objective == PartitionConfig::Objective::cut,
                     "--objective vol is not supported by --method parmetis (PT-Scotch "
                     "minimises the edge cut)");
    GNN_CHECK_CONFIG(!cfg.semantic_groups,
                     "--groups semantic is not supported by --method parmetis");
    GNN_CHECK_CONFIG(cfg.sparsify_k == 0,
                     "--sparsify-features is not supported by --method parmetis");
    GNN_CHECK_CONFIG(cfg.seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                     "seed ", cfg.seed, " does not fit in a signed 64-bit integer");
    ds = read_dataset_shape(data_dir);
    GNN_CHECK_CONFIG(K <= ds.num_nodes, "cannot spread ", ds.num_nodes, " vertices over ", K,
                     " ranks (every rank needs at least one; use fewer ranks)");
    GNN_CHECK_CONFIG(P <= ds.num_nodes, "cannot split ", ds.num_nodes, " vertices into ", P,
                     " parts");
  });
  const std::int64_t N = ds.num_nodes, E = ds.num_edges, F = ds.num_features;
  const std::int32_t C = ds.num_classes;
  res.dataset_name = ds.name;
  res.num_features = F;

  NodeBlock nb;
  nb.begin = st.node_begin = block_begin(N, K, me);
  nb.end = st.node_end = block_begin(N, K, me + 1);
  const std::int64_t nloc = nb.size();
  st.edge_begin = block_begin(E, K, me);
  st.edge_end = block_begin(E, K, me + 1);
  CrcPieces crc;
  std::int64_t split_count[3] = {0, 0, 0};
  std::string split_path[3];

  // --- 1. read this rank's slices ----------------------------------------------------------------
  step_begins("reading slices");
  std::vector<GlobalId> src, dst;
  std::vector<std::vector<std::byte>> split_send(static_cast<std::size_t>(K));
  collective_try(comm, [&] {
    const auto file = [&](const char* name) { return (fs::path(data_dir) / name).string(); };
    NpyRowReader edges(file("edges.npy"));
    expect_type(edges, {NpyType::i8, NpyType::i4}, "int64 or int32");
    GNN_CHECK_INPUT(edges.header().shape.size() == 2 && edges.header().shape[1] == 2, edges.path(), "shape ",
                    format_shape(edges.header().shape), " is not (num_edges, 2)");
    GNN_CHECK_INPUT(edges.header().shape[0] == E, edges.path(), edges.header().shape[0],
                    " rows but manifest.json says num_edges = ", E);
    NpyRowReader features(file("features.npy"));
    expect_type(features, {NpyType::f4, NpyType::f8}, "float32 or float64");
    expect_shape(features, {N, F}, "(num_nodes, num_features)");
    NpyRowReader labels(file("labels.npy"));
    if (ds.multilabel) {
      expect_type(labels, {NpyType::u1, NpyType::b1}, "uint8 or bool for multilabel data");
      expect_shape(labels, {N, C}, "(num_nodes, num_classes)");
    } else {
      expect_type(labels, {NpyType::i8, NpyType::i4}, "int64 or int32");
      expect_shape(labels, {N}, "(num_nodes,)");
    }
    SplitFile splits[3] = {open_split(data_dir, 0, N), open_split(data_dir, 1, N),
                           open_split(data_dir, 2, N)};
    for (int s = 0; s < 3; ++s) split_path[s] = splits[s].file->path();

    // Edges: rows [edge_begin, edge_end), both columns.
    const std::int64_t m = st.edge_end - st.edge_begin;
    const std::vector<std::int64_t> pairs =
        npy_to_int64(edges.read_rows(st.edge_begin, m), edges.path());
    src.resize(static_cast<std::size_t>(m));
    dst.resize(static_cast<std::size_t>(m));
    for (std::int64_t e = 0; e < m; ++e) {
      src[e] = pairs[2 * e];
      dst[e] = pairs[2 * e + 1];
      GNN_CHECK_INPUT(src[e] >= 0 && src[e] < N && dst[e] >= 0 && dst[e] < N, edges.path(),
                      "node id ", (src[e] < 0 || src[e] >= N) ? src[e] : dst[e],
                      " out of range [0, ", N, ") (edge ", st.edge_begin + e, ")");
    }
    crc.src = crc_update(crc32(0, nullptr, 0), src.data(), src.size() * sizeof(GlobalId));
    crc.dst = crc_update(crc32(0, nullptr, 0), dst.data(), dst.size() * sizeof(GlobalId));
    crc.src_len = crc.dst_len = src.size() * sizeof(GlobalId);

    // Node rows [begin, end): features, labels, masks.
    nb.features = npy_to_float32(features.read_rows(nb.begin, nloc), features.path());
    for (std::size_t i = 0; i < nb.features.size(); ++i)
      GNN_CHECK_INPUT(std::isfinite(nb.features[i]), features.path(),
                      "non-finite feature value ", nb.features[i], " at node ",
                      nb.begin + static_cast<std::int64_t>(i) / std::max<std::int64_t>(F, 1),
                      ", column ", static_cast<std::int64_t>(i) % std::max<std::int64_t>(F, 1));
    if (ds.multilabel) {
      nb.label_matrix = npy_to_uint8(labels.read_rows(nb.begin, nloc), labels.path());
      for (std::size_t i = 0; i < nb.label_matrix.size(); ++i)
        GNN_CHECK_INPUT(nb.label_matrix[i] <= 1, labels.path(), "multi-label entry (node ",
                        nb.begin + static_cast<std::int64_t>(i / C), ", class ", i % C, ") is ",
                        int{nb.label_matrix[i]}, ", expected 0 or 1");
      crc.labels = crc_update(crc32(0, nullptr, 0), nb.label_matrix.data(), nb.label_matrix.size());
      crc.labels_len = nb.label_matrix.size();
    } else {
      const std::vector<std::int64_t> l = npy_to_int64(labels.read_rows(nb.begin, nloc),
                                                       labels.path());
      nb.labels.resize(l.size());
      for (std::size_t i = 0; i < l.size(); ++i) {
        GNN_CHECK_INPUT(l[i] >= -1 && l[i] < C, labels.path(), "label ", l[i], " of node ",
                        nb.begin + static_cast<std::int64_t>(i), " out of range [-1, ", C,
                        ") (-1 = unlabelled)");
        nb.labels[i] = static_cast<std::int32_t>(l[i]);
      }
      crc.labels = crc_update(crc32(0, nullptr, 0), nb.labels.data(),
                          nb.labels.size() * sizeof(std::int32_t));
      crc.labels_len = nb.labels.size() * sizeof(std::int32_t);
    }
    nb.split.assign(static_cast<std::size_t>(nloc), 0);
    for (int s = 0; s < 3; ++s) {
      NpyRowReader& f = *splits[s].file;
      if (splits[s].mask) {
        const std::vector<std::uint8_t> mk = npy_to_uint8(f.read_rows(nb.begin, nloc), f.path());
        for (std::int64_t i = 0; i < nloc; ++i) {
          GNN_CHECK_INPUT(mk[i] <= 1, f.path(), "mask entry of node ", nb.begin + i, " is ",
                          int{mk[i]}, ", expected 0 or 1");
          if (!mk[i]) continue;
          // Conflicts with other splits are checked once every split has arrived (below).
          put(split_send[me], static_cast<std::int64_t>(nb.begin + i));
          put(split_send[me], static_cast<std::int8_t>(s));
        }
      } else {
        // Index lists are split by position: rank r reads entries [r L/K, (r+1) L/K) and routes
        // each index to the owner of its node.
        const std::int64_t len = f.header().shape[0];
        const std::int64_t a = block_begin(len, K, me), b = block_begin(len, K, me + 1);
        const std::vector<std::int64_t> idx = npy_to_int64(f.read_rows(a, b - a), f.path());
        for (std::int64_t v : idx) {
          GNN_CHECK_INPUT(v >= 0 && v < N, f.path(), "split index ", v, " out of range [0, ", N,
                          ")");
          const Rank o = block_owner(N, K, v);
          put(split_send[o], v);
          put(split_send[o], static_cast<std::int8_t>(s));
        }
      }
    }
    st.bytes_read = edges.bytes_read() + features.bytes_read() + labels.bytes_read();
    for (auto& s : splits) st.bytes_read += s.file->bytes_read();
  });

  // Split membership: the owner of each node marks it; a node in two splits, listed twice or
  // without a label is refused as read_dataset refuses it.
  {
    const std::vector<std::byte> got = exchange(comm, split_send, st.bytes_sent);
    split_send = {};
    collective_try(comm, [&] {
      Cursor c(got);
      while (!c.done()) {
        const auto v = c.get<std::int64_t>();
        const auto s = c.get<std::int8_t>();
        std::uint8_t& code = nb.split[v - nb.begin];
        const std::string& origin = split_path[s];
        GNN_CHECK_INPUT(code != s + 1, origin, "node ", v, " is listed twice");
        GNN_CHECK_INPUT(code == 0, origin, "node ", v, " is also in the ",
                        kSplitNames[code - 1], " split (splits must be disjoint)");
        GNN_CHECK_INPUT(ds.multilabel || nb.labels[v - nb.begin] >= 0, origin, "split node ", v,
                        " has no label (-1 in labels.npy)");
        code = static_cast<std::uint8_t>(s + 1);
        ++split_count[s];
      }
    });
    GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, split_count, 3, MPI_INT64_T, MPI_SUM, comm));
  }
  st.read_s = seconds_since(t0);
  st.peak_rss_after_read = peak_rss_bytes();
  t0 = Clock::now();

  // --- 2. edges to the owner of their source: complete neighbour lists of the block -----------
  step_begins("building the graph");
  {
    std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(K));
    {
      std::vector<std::int64_t> count(static_cast<std::size_t>(K), 0);
      for (std::size_t e = 0; e < src.size(); ++e)
        if (src[e] != dst[e]) {
          ++count[block_owner(N, K, src[e])];
          ++count[block_owner(N, K, dst[e])];
        }
      for (Rank d = 0; d < K; ++d)
        send[d].reserve(static_cast<std::size_t>(count[d]) * 2 * sizeof(GlobalId));
    }
    for (std::size_t e = 0; e < src.size(); ++e) {
      const GlobalId u = src[e], v = dst[e];
      if (u == v) continue;
      const GlobalId uv[2] = {u, v}, vu[2] = {v, u};
      put(send[block_owner(N, K, u)], uv, 2);
      put(send[block_owner(N, K, v)], vu, 2);
    }
    src = {};
    dst = {};
    std::vector<std::byte> got = exchange(comm, send, st.bytes_sent);
    send = {};
    const std::int64_t pairs = static_cast<std::int64_t>(got.size() / (2 * sizeof(GlobalId)));
    const auto* pv = reinterpret_cast<const GlobalId*>(got.data());
    nb.row_ptr.assign(static_cast<std::size_t>(nloc) + 1, 0);
    for (std::int64_t i = 0; i < pairs; ++i) ++nb.row_ptr[pv[2 * i] - nb.begin + 1];
    std::partial_sum(nb.row_ptr.begin(), nb.row_ptr.end(), nb.row_ptr.begin());
    std::vector<GlobalId> col(static_cast<std::size_t>(pairs));
    {
      std::vector<EdgeOffset> fill(nb.row_ptr.begin(), nb.row_ptr.end() - 1);
      for (std::int64_t i = 0; i < pairs; ++i) col[fill[pv[2 * i] - nb.begin]++] = pv[2 * i + 1];
    }
    got = {};
    // Sort and deduplicate each row, exactly as build_symmetric_graph does.
    std::vector<EdgeOffset> kept(static_cast<std::size_t>(nloc), 0);
#pragma omp parallel for schedule(dynamic, 1024)
    for (std::int64_t i = 0; i < nloc; ++i) {
      auto b = col.begin() + nb.row_ptr[i], e = col.begin() + nb.row_ptr[i + 1];
      std::sort(b, e);
      kept[i] = std::unique(b, e) - b;
    }
    std::vector<EdgeOffset> rp(static_cast<std::size_t>(nloc) + 1, 0);
    for (std::int64_t i = 0; i < nloc; ++i) rp[i + 1] = rp[i] + kept[i];
    nb.col.resize(static_cast<std::size_t>(rp[nloc]));
    for (std::int64_t i = 0; i < nloc; ++i)
      std::copy_n(col.begin() + nb.row_ptr[i], kept[i], nb.col.begin() + rp[i]);
    nb.row_ptr = std::move(rp);
  }
  std::int64_t directed_edges = static_cast<std::int64_t>(nb.col.size());
  GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &directed_edges, 1, MPI_INT64_T, MPI_SUM, comm));
  st.graph_s = seconds_since(t0);
  st.peak_rss_after_graph = peak_rss_bytes();
  t0 = Clock::now();

  // --- 3. the parts ----------------------------------------------------------------------------
  step_begins(cfg.sample_degree > 0 ? "sampling edges" : "partitioning (PT-Scotch)");
  nb.part.assign(static_cast<std::size_t>(nloc), 0);
  // The block with 32-bit local neighbour indices and the plan that refreshes a value per
  // foreign neighbour from its owner: for sampling and refining, then for step 4.
  dist::DistGraph g;
  {
    std::vector<GlobalId> vtxdist(static_cast<std::size_t>(K) + 1);
    for (Rank r = 0; r <= K; ++r) vtxdist[r] = block_begin(N, K, r);
    g = dist::dist_graph_from_global(comm, std::move(vtxdist), nb.row_ptr, nb.col, st.bytes_sent);
  }
  collective_try(comm, [&] {
    if (assignment) {
      for (std::int64_t i = 0; i < nloc; ++i) {
        nb.part[i] = assignment(nb.begin + i);
        GNN_CHECK_CONFIG(nb.part[i] >= 0 && nb.part[i] < P, "assignment gives vertex ",
                         nb.begin + i, " part ", nb.part[i], " outside [0, ", P, ")");
      }
      return;
    }
    if (P == 1) return;
    dist::SampledPartitionOptions opt;
    opt.parts = P;
    opt.imbalance = kImbalance;
    opt.seed = cfg.seed;
    opt.sample_degree = cfg.sample_degree;
    const std::vector<std::int64_t> part = dist::sampled_partition(
        comm, g, opt,
        [&](MPI_Comm c, const dist::DistGraph& sample) {
          step_begins("partitioning (PT-Scotch)");
          return dist::scotch_kway(c, sample, P, kImbalance, cfg.seed);
        },
        res.sampling, st.bytes_sent);
    for (std::int64_t i = 0; i < nloc; ++i) nb.part[i] = static_cast<Rank>(part[i]);
    st.peak_rss_after_scotch = res.sampling.peak_rss_after_initial;
  });
  st.partition_s = seconds_since(t0);
  st.peak_rss_after_partition = peak_rss_bytes();
  t0 = Clock::now();

  // --- 4. part and degree of every neighbour (from its block owner, through the ghost plan) ---
  step_begins("moving nodes to their parts");
  std::vector<Rank> col_part(nb.col.size());
  std::vector<std::int64_t> ghost_degree;
  {
    std::vector<std::int64_t> value(static_cast<std::size_t>(nloc));
    for (std::int64_t i = 0; i < nloc; ++i) value[i] = nb.part[i];
    const std::vector<std::int64_t> ghost_part = dist::ghost_values(comm, g, value, st.bytes_sent);
    for (std::int64_t i = 0; i < nloc; ++i) value[i] = nb.row_ptr[i + 1] - nb.row_ptr[i];
    ghost_degree = dist::ghost_values(comm, g, value, st.bytes_sent);
#pragma omp parallel for schedule(static)
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(nb.col.size()); ++e) {
      const std::int32_t u = g.adj[e];
      col_part[e] = u < nloc ? nb.part[u] : static_cast<Rank>(ghost_part[u - nloc]);
    }
  }
  // The degree of the neighbour of adjacency entry e.
  auto degree_of = [&](EdgeOffset e) -> std::int64_t {
    const std::int32_t u = g.adj[e];
    return u < nloc ? nb.row_ptr[u + 1] - nb.row_ptr[u] : ghost_degree[u - nloc];
  };

  // --- 5. every node to the writer of its part ----------------------------------------------
  // Structure stream (int64): gid, part, degree, neighbours, their parts, then the degrees of
  // the neighbours in other parts. Row stream: features, label (or label row), split code.
  const std::size_t row_bytes = static_cast<std::size_t>(F) * sizeof(float) +
                                (ds.multilabel ? static_cast<std::size_t>(C) : sizeof(std::int32_t)) + 1;
  std::vector<std::byte> structure, rowdata;
  {
    std::vector<std::vector<std::byte>> s_send(static_cast<std::size_t>(K)),
        r_send(static_cast<std::size_t>(K));
    for (std::int64_t i = 0; i < nloc; ++i) {
      const Rank p = nb.part[i];
      const Rank w = p % K;
      std::vector<std::byte>& s = s_send[w];
      const std::int64_t deg = nb.row_ptr[i + 1] - nb.row_ptr[i];
      put(s, static_cast<std::int64_t>(nb.begin + i));
      put(s, static_cast<std::int64_t>(p));
      put(s, deg);
      put(s, nb.col.data() + nb.row_ptr[i], static_cast<std::size_t>(deg));
      for (EdgeOffset e = nb.row_ptr[i]; e < nb.row_ptr[i + 1]; ++e)
        put(s, static_cast<std::int64_t>(col_part[e]));
      for (EdgeOffset e = nb.row_ptr[i]; e < nb.row_ptr[i + 1]; ++e)
        if (col_part[e] != p) put(s, degree_of(e));
      std::vector<std::byte>& r = r_send[w];
      put(r, nb.features.data() + i * F, static_cast<std::size_t>(F));
      if (ds.multilabel)
        put(r, nb.label_matrix.data() + i * C, static_cast<std::size_t>(C));
      else
        put(r, nb.labels[i]);
      put(r, nb.split[i]);
    }
    nb = NodeBlock{};
    g = dist::DistGraph{};
    col_part = {};
    ghost_degree = {};
    structure = exchange(comm, s_send, st.bytes_sent);
    s_send = {};
    rowdata = exchange(comm, r_send, st.bytes_sent);
  }
  st.move_s = seconds_since(t0);
  st.peak_rss_after_move = peak_rss_bytes();
  t0 = Clock::now();

  // --- 6. build and write the parts this rank writes ------------------------------------------
  step_begins("building and writing parts");
  std::unique_ptr<StagedDirectory> staged;
  std::string staging;
  std::uint64_t run_id = 0;
  collective_try(comm, [&] {
    if (me != 0) return;
    staged = std::make_unique<StagedDirectory>(
        out_arg, [](const fs::path& p) { return fs::is_empty(p) || is_partition_dir(p); },
        "partition");
    res.removed_leftovers = staged->removed_leftovers();
    staging = staged->staging().string();
    run_id = new_partition_run_id();
  });
  {
    std::int64_t len = static_cast<std::int64_t>(staging.size());
    GNN_CHECK_MPI(MPI_Bcast(&len, 1, MPI_INT64_T, 0, comm));
    staging.resize(static_cast<std::size_t>(len));
    GNN_CHECK_MPI(MPI_Bcast(staging.data(), static_cast<int>(len), MPI_CHAR, 0, comm));
    GNN_CHECK_MPI(MPI_Bcast(&run_id, 1, MPI_UINT64_T, 0, comm));
  }
  // Per written part: rank, bytes, crc, owned, halo, boundary, sent rows, local edges, cut
  // entries, then (peer, rows) pairs of its send plans.
  std::vector<std::int64_t> summary;
  collective_try(comm, [&] {
    // Index the received records by part (each part's records arrive in ascending gid: the
    // blocks ascend with rank, and every sender packed its block in order).
    struct Rec {
      std::size_t at;  // offset into `structure`
      std::int64_t row;  // index into rowdata
    };
    std::vector<std::vector<Rec>> by_part(static_cast<std::size_t>(P));
    {
      std::size_t at = 0;
      std::int64_t row = 0;
      while (at < structure.size()) {
        std::int64_t hdr[3];
        std::memcpy(hdr, structure.data() + at, sizeof hdr);
        by_part[hdr[1]].push_back({at, row++});
        std::size_t foreign = 0;
        const auto* parts = reinterpret_cast<const std::int64_t*>(structure.data() + at) + 3 + hdr[2];
        for (std::int64_t e = 0; e < hdr[2]; ++e) foreign += parts[e] != hdr[1];
        at += (3 + 2 * static_cast<std::size_t>(hdr[2]) + foreign) * sizeof(std::int64_t);
      }
    }
    for (Rank p = me; p < P; p += K) {
      const std::vector<Rec>& recs = by_part[p];
      OwnedRows rows;
      rows.part = p;
      rows.num_parts = P;
      rows.global_num_nodes = N;
      rows.global_num_directed_edges = directed_edges;
      rows.row_ptr.push_back(0);
      std::vector<std::pair<GlobalId, std::int64_t>> halo_deg;
      for (const Rec& r : recs) {
        const auto* w = reinterpret_cast<const std::int64_t*>(structure.data() + r.at);
        const std::int64_t deg = w[2];
        rows.gids.push_back(w[0]);
        rows.col.insert(rows.col.end(), w + 3, w + 3 + deg);
        const std::int64_t* parts = w + 3 + deg;
        const std::int64_t* degs = parts + deg;
        for (std::int64_t e = 0; e < deg; ++e) {
          rows.col_part.push_back(static_cast<Rank>(parts[e]));
          if (parts[e] != p) halo_deg.push_back({w[3 + e], *degs++});
        }
        rows.row_ptr.push_back(static_cast<EdgeOffset>(rows.col.size()));
      }
      // The last part this rank writes has taken its rows out of the records: free them before
      // the part is built (they are as large as its rows).
      if (p + K >= P) std::vector<std::byte>().swap(structure);
      std::sort(halo_deg.begin(), halo_deg.end());
      halo_deg.erase(std::unique(halo_deg.begin(), halo_deg.end()), halo_deg.end());
      const auto halo_degree = [&](GlobalId u) {
        const auto it = std::lower_bound(halo_deg.begin(), halo_deg.end(),
                                         std::pair<GlobalId, std::int64_t>{u, -1});
        GNN_ASSERT(it != halo_deg.end() && it->first == u, "no degree for halo vertex ", u);
        return it->second;
      };
      const auto fill = [&](std::span<const GlobalId> owned, LocalPartition& lp) {
        const std::int64_t n = static_cast<std::int64_t>(owned.size());
        lp.features = Matrix(n, F);
        lp.num_classes = C;
        lp.multilabel = ds.multilabel;
        if (ds.multilabel) lp.label_matrix.resize(static_cast<std::size_t>(n * C));
        else lp.labels.resize(static_cast<std::size_t>(n));
        lp.train_mask.resize(static_cast<std::size_t>(n));
        lp.val_mask.resize(static_cast<std::size_t>(n));
        lp.test_mask.resize(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
          const std::int64_t j =
              std::lower_bound(rows.gids.begin(), rows.gids.end(), owned[i]) - rows.gids.begin();
          const std::byte* b = rowdata.data() + recs[j].row * row_bytes;
          if (F > 0) std::memcpy(lp.features.data() + i * F, b, F * sizeof(float));
          b += F * sizeof(float);
          if (ds.multilabel) {
            std::memcpy(lp.label_matrix.data() + i * C, b, static_cast<std::size_t>(C));
            b += C;
          } else {
            std::memcpy(&lp.labels[i], b, sizeof(std::int32_t));
            b += sizeof(std::int32_t);
          }
          const auto s = static_cast<std::uint8_t>(*b);
          lp.train_mask[i] = s == 1;
          lp.val_mask[i] = s == 2;
          lp.test_mask[i] = s == 3;
        }
        lp.global_train = split_count[0];
        lp.global_val = split_count[1];
        lp.global_test = split_count[2];
      };
      LocalPartition lp = build_part(rows, halo_degree, cfg.order, fill);
      lp.run_id = run_id;
      const PartitionFileInfo info = write_local_partition_file(
          lp, (fs::path(staging) / partition_file_name(p)).string());
      std::int64_t boundary = 0, sent = 0, cut = 0;
      {
        std::vector<char> is_b(static_cast<std::size_t>(lp.num_owned), 0);
        for (const PeerRows& pr : lp.send)
          for (LocalId r : pr.rows) is_b[r] = 1, ++sent;
        boundary = std::count(is_b.begin(), is_b.end(), 1);
        for (LocalId c : lp.col) cut += c >= lp.num_owned;
      }
      summary.insert(summary.end(),
                     {p, static_cast<std::int64_t>(info.bytes), static_cast<std::int64_t>(info.crc32),
                      lp.num_owned, lp.num_halo, boundary, sent,
                      static_cast<std::int64_t>(lp.col.size()), cut,
                      static_cast<std::int64_t>(lp.send.size())});
      for (const PeerRows& pr : lp.send)
        summary.insert(summary.end(), {pr.peer, static_cast<std::int64_t>(pr.rows.size())});
    }
  });
  structure = {};
  rowdata = {};
  st.write_s = seconds_since(t0);
  st.peak_rss_bytes = peak_rss_bytes();

  // --- 7. rank 0 gathers, writes the manifest, commits ------------------------------------------
  std::vector<std::int64_t> all;
  std::vector<int> counts(static_cast<std::size_t>(K)), displs(counts.size());
  {
    const int n = static_cast<int>(summary.size());
    GNN_CHECK_MPI(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
    if (me == 0) {
      for (Rank r = 1; r < K; ++r) displs[r] = displs[r - 1] + counts[r - 1];
      all.resize(static_cast<std::size_t>(displs[K - 1] + counts[K - 1]));
    }
    GNN_CHECK_MPI(MPI_Gatherv(summary.data(), n, MPI_INT64_T, all.data(), counts.data(),
                              displs.data(), MPI_INT64_T, 0, comm));
  }
  std::vector<CrcPieces> pieces(static_cast<std::size_t>(K));
  GNN_CHECK_MPI(MPI_Gather(&crc, sizeof crc, MPI_BYTE, pieces.data(), sizeof crc, MPI_BYTE, 0, comm));
  res.ranks.resize(me == 0 ? static_cast<std::size_t>(K) : 0);
  GNN_CHECK_MPI(MPI_Gather(&st, sizeof st, MPI_BYTE, res.ranks.data(), sizeof st, MPI_BYTE, 0, comm));

  collective_try(comm, [&] {
    if (me != 0) return;
    PartitionReport& r = res.report;
    r.num_parts = P;
    r.num_nodes = N;
    r.num_edges = directed_edges / 2;
    r.owned.assign(static_cast<std::size_t>(P), 0);
    r.halo.assign(static_cast<std::size_t>(P), 0);
    r.boundary.assign(static_cast<std::size_t>(P), 0);
    r.sent_rows.assign(static_cast<std::size_t>(P), 0);
    r.local_edges.assign(static_cast<std::size_t>(P), 0);
    std::vector<Json> files(static_cast<std::size_t>(P));
    std::vector<std::vector<PartitionReport::PairVolume>> pv(static_cast<std::size_t>(P));
    std::int64_t cut_twice = 0;
    for (std::size_t at = 0; at < all.size();) {
      const auto p = static_cast<Rank>(all[at]);
      files[p] = {{"rank", p}, {"file", partition_file_name(p)}, {"bytes", all[at + 1]},
                  {"crc32", all[at + 2]}};
      r.owned[p] = all[at + 3];
      r.halo[p] = all[at + 4];
      r.boundary[p] = all[at + 5];
      r.sent_rows[p] = all[at + 6];
      r.local_edges[p] = all[at + 7];
      cut_twice += all[at + 8];
      const std::int64_t peers = all[at + 9];
      at += 10;
      for (std::int64_t j = 0; j < peers; ++j, at += 2)
        pv[p].push_back({p, static_cast<Rank>(all[at]), all[at + 1]});
    }
    r.edge_cut = cut_twice / 2;
    GlobalId max_owned = 0;
    for (Rank p = 0; p < P; ++p) {
      max_owned = std::max(max_owned, r.owned[p]);
      r.total_volume += r.sent_rows[p];
      r.pair_volume.insert(r.pair_volume.end(), pv[p].begin(), pv[p].end());
      r.feature_bytes_dense += r.owned[p] * F * static_cast<std::int64_t>(sizeof(float));
    }
    r.feature_bytes_stored = r.feature_bytes_dense;
    r.imbalance = N > 0 ? static_cast<double>(max_owned) * P / N : 1.0;

    // The fingerprint of the whole dataset from the ranks' CRC pieces (zlib's crc32_combine).
    std::uint32_t data_crc = static_cast<std::uint32_t>(crc32(0, nullptr, 0));
    for (const CrcPieces& c : pieces)
      data_crc = static_cast<std::uint32_t>(crc32_combine(data_crc, c.src, static_cast<z_off_t>(c.src_len)));
    for (const CrcPieces& c : pieces)
      data_crc = static_cast<std::uint32_t>(crc32_combine(data_crc, c.dst, static_cast<z_off_t>(c.dst_len)));
    for (const CrcPieces& c : pieces)
      data_crc = static_cast<std::uint32_t>(
          crc32_combine(data_crc, c.labels, static_cast<z_off_t>(c.labels_len)));

    Json dataset = Json::object();
    dataset["name"] = ds.name;
    dataset["fingerprint"] = dataset_fingerprint(N, F, C, E, data_crc);
    dataset["num_nodes"] = N;
    dataset["num_edges"] = r.num_edges;
    dataset["num_features"] = F;
    dataset["num_classes"] = C;
    dataset["multilabel"] = ds.multilabel;
    Json m = Json::object();
    m["format"] = kPartitionFormatName;
    m["version"] = kPartitionFormatVersion;
    m["run_id"] = format_run_id(run_id);
    m["dataset"] = std::move(dataset);
    m["parts"] = P;
    m["method"] = to_string(cfg.method);
    m["objective"] = to_string(cfg.objective);
    m["seed"] = static_cast<std::int64_t>(cfg.seed);
    m["ranks"] = K;
    m["order"] = to_string(cfg.order.kind);
    if (cfg.order.kind == LocalOrder::Kind::blocks) m["order_block_rows"] = cfg.order.block_rows;
    m["edge_cut"] = r.edge_cut;
    m["total_volume"] = r.total_volume;
    m["imbalance"] = r.imbalance;
    m["owned"] = r.owned;
    m["halo"] = r.halo;
    m["boundary"] = r.boundary;
    m["sent_rows"] = r.sent_rows;
    m["local_edges"] = r.local_edges;
    Json pvj = Json::array();
    for (const auto& x : r.pair_volume) pvj.push_back({x.from, x.to, x.rows});
    m["pair_volume"] = std::move(pvj);
    m["files"] = files;
    m["feature_bytes_dense"] = r.feature_bytes_dense;
    m["feature_bytes_stored"] = r.feature_bytes_stored;
    // The manifest goes last: a directory without one is recognisably incomplete.
    write_file_atomic(staged->file("manifest.json"), dump_json(m, 2) + "\n");
    staged->commit();
    res.manifest = std::move(m);
  });
  return res;
}

}  // namespace halognn
