// halognn-partition: split a dataset directory into a partition directory (one file per rank).
//
//   halognn-partition --data DIR --parts K --out DIR [--method metis|random|parmetis]
//                     [--objective cut|vol] [--seed S] [--order blocks|rcm|none]
//                     [--order-block ROWS] [--metis-graph FILE]
//                     [--groups semantic [--groups-per-link K] [--drop-o2o]]
//                     [--sparsify-features K [--sparsify-sample NODES]]
//                     [--sample-degree D]   (--method parmetis)
//
// Prints the partition report as a table. Errors: one line "halognn-partition: <message>" on
// stderr and exit status 1. `--method parmetis` runs under mpirun on any number of ranks
// (partition/distributed_partition.hpp); there rank 0 prints the report and the error line.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "comm/mpi_env.hpp"
#include "core/data/dataset.hpp"
#include "core/error.hpp"
#include "core/process_memory.hpp"
#include "partition/distributed_partition.hpp"
#include "partition/partition.hpp"
#include "partition/partition_io.hpp"
#include "launch/tool_main.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

constexpr const char* kTool = "halognn-partition";

class Stopwatch {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

/// `stored_sparsified`: the dataset itself holds sparsified features (halognn-data sparsify).
void print_report(const std::string& name, std::int64_t num_features, bool stored_sparsified,
                  const PartitionConfig& cfg, const PartitionReport& r, const Json& manifest,
                  const std::string& out) {
  std::printf("%s: %s (%lld nodes, %lld edges, %lld features) -> %d part%s, %s", kTool,
              name.c_str(), static_cast<long long>(r.num_nodes),
              static_cast<long long>(r.num_edges), static_cast<long long>(num_features),
              r.num_parts, r.num_parts == 1 ? "" : "s", to_string(cfg.method).c_str());
  if (cfg.method != PartitionConfig::Method::random && cfg.parts > 1)
    std::printf("/%s", to_string(cfg.objective).c_str());
  std::printf(", seed %llu, order %s", static_cast<unsigned long long>(cfg.seed),
              to_string(cfg.order.kind).c_str());
  if (cfg.order.kind == LocalOrder::Kind::blocks)
    std::printf(" (%lld rows)", static_cast<long long>(cfg.order.block_rows));
  std::printf("\n");
  const double cut_pct = r.num_edges > 0 ? 100.0 * r.edge_cut / r.num_edges : 0.0;
  std::printf("edge cut %lld (%.2f%% of edges), communication volume %lld rows per exchange, "
              "imbalance %.3f\n",
              static_cast<long long>(r.edge_cut), cut_pct, static_cast<long long>(r.total_volume),
              r.imbalance);
  const double mean = r.num_parts > 0 ? static_cast<double>(r.num_nodes) / r.num_parts : 0.0;
  std::printf("%6s %12s %12s %12s %12s %14s %8s\n", "part", "owned", "halo", "boundary",
              "sent rows", "local edges", "balance");
  for (Rank p = 0; p < r.num_parts; ++p)
    std::printf("%6d %12lld %12lld %12lld %12lld %14lld %8.3f\n", p,
                static_cast<long long>(r.owned[p]), static_cast<long long>(r.halo[p]),
                static_cast<long long>(r.boundary[p]), static_cast<long long>(r.sent_rows[p]),
                static_cast<long long>(r.local_edges[p]), mean > 0 ? r.owned[p] / mean : 0.0);
  std::int64_t bytes = 0;
  for (const Json& f : manifest.at("files")) bytes += f.at("bytes").get<std::int64_t>();
  if (manifest.contains("groups"))
    for (const Json& f : manifest["groups"]["files"]) bytes += f.at("bytes").get<std::int64_t>();
  std::printf("wrote %s (manifest.json + %d rank files%s, %.1f MiB)\n", out.c_str(), r.num_parts,
              manifest.contains("groups") ? " + groups files" : "", bytes / (1024.0 * 1024.0));
  if (manifest.contains("features")) {
    const Json& f = manifest.at("features");
    std::printf("features sparsified%s: k = %d (%lld positions per row, ratio %.1f), codebook from "
                "%lld sampled nodes; feature bytes %.1f MiB dense -> %.2f MiB stored (%.1fx)\n",
                stored_sparsified ? " (as stored in the dataset)" : "",
                f.at("sparsify_k").get<int>(),
                static_cast<long long>(f.at("slots_per_row").get<std::int64_t>()),
                f.at("ratio").get<double>(),
                static_cast<long long>(f.at("codebook_rows").get<std::int64_t>()),
                r.feature_bytes_dense / (1024.0 * 1024.0),
                r.feature_bytes_stored / (1024.0 * 1024.0),
                r.feature_bytes_stored > 0
                    ? static_cast<double>(r.feature_bytes_dense) / r.feature_bytes_stored
                    : 0.0);
  }
}

/// The semantic-groups report: one line per link, then the totals.
void print_groups(const PartitionReport& r) {
  std::printf("semantic groups per link (edges by connection kind; rows sent per exchange):\n");
  std::printf("%9s %9s %9s %10s %6s %6s %6s %6s %8s %9s %16s %8s\n", "link", "|U|", "|V|",
              "edges", "O2O%", "O2M%", "M2O%", "M2M%", "groups", "mean size", "rows plain->sem",
              "error");
  std::int64_t plain = 0, sem = 0, edges = 0;
  double err2 = 0;
  for (const Json& l : r.group_links) {
    const auto e = l["edges"].get<std::int64_t>();
    auto pct = [&](const char* k) { return e > 0 ? 100.0 * l["edges_by_kind"][k].get<double>() / e : 0.0; };
    char link[32];
    std::snprintf(link, sizeof link, "%d->%d", l["from"].get<int>(), l["to"].get<int>());
    std::printf("%9s %9lld %9lld %10lld %6.1f %6.1f %6.1f %6.1f %8lld %9.1f %8lld->%-7lld %8.4f\n",
                link, static_cast<long long>(l["u_nodes"].get<std::int64_t>()),
                static_cast<long long>(l["v_nodes"].get<std::int64_t>()),
                static_cast<long long>(e), pct("o2o"), pct("o2m"), pct("m2o"), pct("m2m"),
                static_cast<long long>(l["groups"].get<std::int64_t>()),
                l["mean_group_size"].get<double>(),
                static_cast<long long>(l["rows_plain"].get<std::int64_t>()),
                static_cast<long long>(l["rows_semantic"].get<std::int64_t>()),
                l["error"].get<double>());
    plain += l["rows_plain"].get<std::int64_t>();
    sem += l["rows_semantic"].get<std::int64_t>();
    edges += e;
    err2 += l["error"].get<double>() * l["error"].get<double>() * static_cast<double>(e);
  }
  std::printf("all links: rows per exchange %lld plain -> %lld semantic (%.1fx fewer), "
              "error %.4f (edge-weighted)\n",
              static_cast<long long>(plain), static_cast<long long>(sem),
              sem > 0 ? static_cast<double>(plain) / static_cast<double>(sem) : 0.0,
              edges > 0 ? std::sqrt(err2 / static_cast<double>(edges)) : 0.0);
}

/// The MPI world size and rank the launcher (mpirun, srun) gave this process, from its
/// environment: {1, 0} when started on its own.
std::pair<int, int> launcher_world() {
  for (const auto& [size, rank] : {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                   std::pair{"PMIX_SIZE", "PMIX_RANK"},
                                   std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const char* s = std::getenv(size);
    const char* r = std::getenv(rank);
    if (s && r) return {std::atoi(s), std::atoi(r)};
  }
  return {1, 0};
}

/// --method parmetis: every rank partitions its share; rank 0 prints the report, or the error
/// that every rank agreed on.
int run_parmetis(int& argc, char**& argv, const PartitionConfig& cfg, const std::string& data,
                 const std::string& out) {
  MpiEnv mpi(argc, argv);
  const Rank rank = mpi.rank(), size = mpi.size();
  try {
    Stopwatch clock;
    // Progress on a terminal only (rank 0): one line, rewritten per step.
    const bool tty = rank == 0 && isatty(STDERR_FILENO);
    const DistributedPartitionResult r = distributed_partition(
        MPI_COMM_WORLD, data, cfg, out, {}, [&](const char* step) {
          if (tty) std::fprintf(stderr, "\r%s: %-40s", kTool, step);
        });
    if (tty) std::fprintf(stderr, "\r%*s\r", 60, "");
    if (rank != 0) return 0;
    for (const std::string& l : r.removed_leftovers)
      std::printf("%s: removed %s, left behind by a run that was killed\n", kTool, l.c_str());
    // The distributed partitioner refuses sparsified datasets (distributed_partition.cpp).
    print_report(r.dataset_name, r.num_features, false, cfg, r.report, r.manifest, out);
    // The peak RSS columns are the process's high-water mark after each step (the last one is
    // its peak): the step where it jumps is the one that needed the memory.
    const dist::SampledPartitionStats& sp = r.sampling;
    if (sp.entries > 0)
      std::printf("PT-Scotch partitioned %lld of %lld adjacency entries (--sample-degree %lld); "
                  "cut %lld, refined in %d sweeps to %lld; heaviest part %lld of at most %lld; "
                  "sample %.2f s, PT-Scotch %.2f s, refine %.2f s\n",
                  static_cast<long long>(sp.sampled_entries), static_cast<long long>(sp.entries),
                  static_cast<long long>(cfg.sample_degree), static_cast<long long>(sp.initial_cut),
                  sp.refine_rounds, static_cast<long long>(sp.final_cut),
                  static_cast<long long>(sp.heaviest_part), static_cast<long long>(sp.max_part_weight),
                  sp.sample_s, sp.initial_s, sp.refine_s);
    std::printf("%6s %12s %12s %8s %8s %8s %8s %8s %12s %12s   %s\n", "rank", "nodes", "edge rows",
                "read s", "graph s", "part s", "move s", "write s", "read MiB", "sent MiB",
                "peak RSS MiB after read / graph / PT-Scotch / part / move / write");
    DistributedPartitionStats worst;
    std::uint64_t sent = 0;
    for (Rank k = 0; k < size; ++k) {
      const DistributedPartitionStats& s = r.ranks[k];
      const auto mib = [](std::int64_t b) { return b / 1048576.0; };
      std::printf("%6d %12lld %12lld %8.2f %8.2f %8.2f %8.2f %8.2f %12.1f %12.1f   %.1f / %.1f / "
                  "%.1f / %.1f / %.1f / %.1f\n",
                  k, static_cast<long long>(s.node_end - s.node_begin),
                  static_cast<long long>(s.edge_end - s.edge_begin), s.read_s, s.graph_s,
                  s.partition_s, s.move_s, s.write_s, s.bytes_read / 1048576.0,
                  s.bytes_sent / 1048576.0, mib(s.peak_rss_after_read),
                  mib(s.peak_rss_after_graph), mib(s.peak_rss_after_scotch), mib(s.peak_rss_after_partition),
                  mib(s.peak_rss_after_move), mib(s.peak_rss_bytes));
      worst.read_s = std::max(worst.read_s, s.read_s);
      worst.graph_s = std::max(worst.graph_s, s.graph_s);
      worst.partition_s = std::max(worst.partition_s, s.partition_s);
      worst.move_s = std::max(worst.move_s, s.move_s);
      worst.write_s = std::max(worst.write_s, s.write_s);
      worst.peak_rss_bytes = std::max(worst.peak_rss_bytes, s.peak_rss_bytes);
      sent += s.bytes_sent;
    }
    std::printf("time (slowest rank per step): read %.2f s, graph %.2f s, partition %.2f s, move "
                "%.2f s, build+write %.2f s; total %.2f s on %d ranks; %.1f MiB sent; peak RSS "
                "%.1f MiB (largest rank)\n",
                worst.read_s, worst.graph_s, worst.partition_s, worst.move_s, worst.write_s,
                clock.lap(), size, sent / 1048576.0, worst.peak_rss_bytes / 1048576.0);
    return 0;
  } catch (const std::exception& e) {
    // distributed_partition throws on every rank together (the lowest failing rank's message).
    if (rank == 0 && isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%*s\r", 60, "");
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", kTool, e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  std::string data, out, method = "metis", objective = "cut", order = "blocks", metis_graph,
      groups = "none";
  std::int64_t order_block = LocalOrder{}.block_rows;
  int parts = 0, groups_per_link = 0, sparsify_k = 0;
  std::int64_t sparsify_sample = PartitionConfig{}.sparsify_sample;
  std::int64_t sample_degree = PartitionConfig{}.sample_degree;
  bool drop_o2o = false;
  std::uint64_t seed = 1;
  po::options_description opts(
      "Usage: halognn-partition --data DIR --parts K --out DIR [options]\n\n"
      "Partitions a dataset directory for a K-rank training job; writes OUT/manifest.json and\n"
      "one part-NNNNN.bin per rank (docs/partitioning.md).\n\nOptions");
  opts.add_options()
      ("help,h", "print this help and exit")
      ("data", po::value(&data)->required(), "dataset directory (manifest.json + .npy arrays)")
      ("parts", po::value(&parts)->required(), "number of parts = MPI ranks of the job")
      ("out", po::value(&out)->required(),
       "output partition directory (replaced if it is an existing partition directory)")
      ("method", po::value(&method)->default_value(method),
       "metis | random | parmetis (PT-Scotch's ParMETIS interface under mpirun: every rank reads "
       "only its slice of the dataset; docs/partitioning.md)")
      ("objective", po::value(&objective)->default_value(objective),
       "METIS objective: cut (edge cut) | vol (communication volume)")
      ("seed", po::value(&seed)->default_value(seed), "seed of METIS / the random assignment")
      ("order", po::value(&order)->default_value(order),
       "numbering of each part's owned rows: blocks (METIS blocks of --order-block rows) | rcm "
       "(reverse Cuthill-McKee) | none (ascending global id)")
      ("order-block", po::value(&order_block)->default_value(order_block),
       "rows per locality block (--order blocks)")
      ("metis-graph", po::value(&metis_graph),
       "also write the symmetric graph to this file in METIS format (for gpmetis)")
      ("groups", po::value(&groups)->default_value(groups),
       "none | semantic: also build the semantic groups of every link (docs/semantic_groups.md)")
      ("groups-per-link", po::value(&groups_per_link)->default_value(0),
       "M2M groups per link (0: at the elbow of the inertia curve; at least one per M2M "
       "component)")
      ("drop-o2o", po::bool_switch(&drop_o2o),
       "semantic groups: do not send one-to-one connections at all (SC-GNN's differential "
       "optimisation)")
      ("sparsify-features", po::value(&sparsify_k)->default_value(0),
       "k in [1, 128]: store the features sparsified, per node and 256-wide chunk the positions "
       "of the k largest and k smallest values plus one shared codebook (ratio 512/k against "
       "fp32; docs/partitioning.md); 0: dense. A sparsified dataset (halognn-data sparsify) is "
       "stored as it is: only its own k is accepted")
      ("sparsify-sample", po::value(&sparsify_sample)->default_value(sparsify_sample),
       "nodes (about; seeded by --seed) whose sorted values the codebook averages")
      ("sample-degree", po::value(&sample_degree)->default_value(sample_degree),
       "--method parmetis: PT-Scotch partitions a sample of the edges (seeded by --seed) in which "
       "a vertex keeps about this many, and label propagation refines the parts on the whole "
       "graph; 0: PT-Scotch partitions the whole graph (more memory)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, opts), vm);
  if (vm.count("help")) {
    std::cout << opts << '\n';
    return 0;
  }
  po::notify(vm);

  PartitionConfig cfg;
  cfg.parts = parts;
  cfg.method = parse_partition_method(method);
  cfg.objective = parse_partition_objective(objective);
  cfg.seed = seed;
  cfg.order.kind = parse_local_order(order);
  GNN_CHECK_CONFIG(order_block >= 1, "--order-block must be at least 1 (got ", order_block, ")");
  cfg.order.block_rows = order_block;
  cfg.order.seed = seed;
  GNN_CHECK_CONFIG(parts >= 1, "--parts must be at least 1 (got ", parts, ")");
  GNN_CHECK_CONFIG(groups == "none" || groups == "semantic", "unknown --groups '", groups,
                   "' (choose from: none, semantic)");
  cfg.semantic_groups = groups == "semantic";
  GNN_CHECK_CONFIG(cfg.semantic_groups || (groups_per_link == 0 && !drop_o2o),
                   "--groups-per-link and --drop-o2o need --groups semantic");
  GNN_CHECK_CONFIG(groups_per_link >= 0, "--groups-per-link must be non-negative");
  cfg.grouping.groups_per_link = groups_per_link;
  cfg.grouping.drop_o2o = drop_o2o;
  cfg.grouping.seed = seed;
  // A sparsified dataset (halognn-data sparsify) is partitioned as stored: its positions and
  // codebook are copied into the rank files. The same k may be named (so one command line serves
  // both forms); another k, or a sample for a codebook that is fixed already, is refused.
  const StoredFeatures stored = read_stored_features(data);
  if (stored.k > 0) {
    GNN_CHECK_CONFIG(sparsify_k == 0 || sparsify_k == stored.k, "--sparsify-features ", sparsify_k,
                     ": ", data, " holds features sparsified with k = ", stored.k,
                     " already; partition it with --sparsify-features ", stored.k,
                     " or without the option, or sparsify the dense dataset with "
                     "halognn-data sparsify --k ", sparsify_k);
    GNN_CHECK_CONFIG(vm["sparsify-sample"].defaulted(), "--sparsify-sample: ", data,
                     " holds features sparsified already (k = ", stored.k, ", codebook from about ",
                     stored.codebook_sample, " nodes, seed ", stored.codebook_seed,
                     "); its codebook is fixed, drop the option");
  } else {
    GNN_CHECK_CONFIG(vm["sparsify-sample"].defaulted() || sparsify_k > 0,
                     "--sparsify-sample needs --sparsify-features");
  }
  if (sparsify_k != 0)
    GNN_CHECK_CONFIG(sparsify_k >= 1 && sparsify_k <= kSparsifyMaxK, "--sparsify-features must be "
                     "in [1, ", kSparsifyMaxK, "] (0: dense), got ", sparsify_k);
  GNN_CHECK_CONFIG(sparsify_sample >= 1, "--sparsify-sample must be at least 1, got ",
                   sparsify_sample);
  cfg.sparsify_k = sparsify_k;
  cfg.sparsify_sample = sparsify_sample;
  GNN_CHECK_CONFIG(sample_degree >= 0, "--sample-degree must be non-negative (0: no sample), got ",
                   sample_degree);
  GNN_CHECK_CONFIG(vm["sample-degree"].defaulted() || cfg.method == PartitionConfig::Method::parmetis,
                   "--sample-degree needs --method parmetis (METIS partitions the whole graph)");
  cfg.sample_degree = sample_degree;
  if (cfg.method == PartitionConfig::Method::parmetis) {
    GNN_CHECK_CONFIG(metis_graph.empty(), "--metis-graph is not supported by --method parmetis "
                     "(no rank holds the whole graph)");
    return run_parmetis(argc, argv, cfg, data, out);
  }
  GNN_CHECK_CONFIG(launcher_world().first == 1, "--method ", method, " runs on one process, not "
                   "under mpirun with ", launcher_world().first, " ranks (use --method parmetis)");

  Stopwatch clock;
  const Dataset ds = read_dataset(data);
  const double t_read = clock.lap();
  GraphBuildStats stats;
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst, &stats);
  if (!metis_graph.empty()) write_metis_graph(g, metis_graph);
  const double t_graph = clock.lap();
  const std::vector<Rank> assignment = assign_parts(g, cfg);
  const double t_assign = clock.lap();
  PartitionReport report;
  std::vector<std::string> leftovers;
  const Json manifest = write_partition_dir(ds, g, assignment, cfg, out, &report, &leftovers);
  const double t_write = clock.lap();
  for (const std::string& l : leftovers)
    std::printf("%s: removed %s, left behind by a run that was killed\n", kTool, l.c_str());

  print_report(ds.name, ds.num_features(), ds.sparsified(), cfg, report, manifest, out);
  if (cfg.semantic_groups) print_groups(report);
  std::printf("time: read %.2f s, graph %.2f s, partition %.2f s, build+write %.2f s "
              "(of which semantic grouping %.2f s), total %.2f s; %s\n",
              t_read, t_graph, t_assign, t_write, report.grouping_seconds,
              t_read + t_graph + t_assign + t_write, peak_rss_text().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every rank parses the same options: rank 0 alone reports an error that comes
  // before MPI starts.
  if (launcher_world().second != 0) {
    try {
      return run(argc, argv);
    } catch (const std::exception&) {
      return 1;
    }
  }
  return halognn::run_tool(kTool, [&] { return run(argc, argv); });
}
