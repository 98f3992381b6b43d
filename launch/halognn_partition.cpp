// halognn-partition: split a dataset directory into a partition directory (one file per rank).
//
//   halognn-partition --data DIR --parts K --out DIR [--method metis|random]
//                     [--objective cut|vol] [--seed S] [--order blocks|rcm|none]
//                     [--order-block ROWS] [--metis-graph FILE]
//
// Prints the partition report as a table. Errors: one line "halognn-partition: <message>" on
// stderr and exit status 1.
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include <boost/program_options.hpp>

#include "core/data/dataset.hpp"
#include "core/error.hpp"
#include "partition/partition.hpp"
#include "partition/partition_io.hpp"

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

void print_report(const Dataset& ds, const PartitionConfig& cfg, const PartitionReport& r,
                  const Json& manifest, const std::string& out) {
  std::printf("%s: %s (%lld nodes, %lld edges, %lld features) -> %d part%s, %s", kTool,
              ds.name.c_str(), static_cast<long long>(r.num_nodes),
              static_cast<long long>(r.num_edges), static_cast<long long>(ds.num_features()),
              r.num_parts, r.num_parts == 1 ? "" : "s", to_string(cfg.method).c_str());
  if (cfg.method == PartitionConfig::Method::metis && cfg.parts > 1)
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
  std::printf("wrote %s (manifest.json + %d rank files, %.1f MiB)\n", out.c_str(), r.num_parts,
              bytes / (1024.0 * 1024.0));
}

int run(int argc, char** argv) {
  std::string data, out, method = "metis", objective = "cut", order = "blocks", metis_graph;
  std::int64_t order_block = LocalOrder{}.block_rows;
  int parts = 0;
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
      ("method", po::value(&method)->default_value(method), "metis | random")
      ("objective", po::value(&objective)->default_value(objective),
       "METIS objective: cut (edge cut) | vol (communication volume)")
      ("seed", po::value(&seed)->default_value(seed), "seed of METIS / the random assignment")
      ("order", po::value(&order)->default_value(order),
       "numbering of each part's owned rows: blocks (METIS blocks of --order-block rows) | rcm "
       "(reverse Cuthill-McKee) | none (ascending global id)")
      ("order-block", po::value(&order_block)->default_value(order_block),
       "rows per locality block (--order blocks)")
      ("metis-graph", po::value(&metis_graph),
       "also write the symmetric graph to this file in METIS format (for gpmetis)");
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
  const Json manifest = write_partition_dir(ds, g, assignment, cfg, out, &report);
  const double t_write = clock.lap();

  print_report(ds, cfg, report, manifest, out);
  std::printf("time: read %.2f s, graph %.2f s, partition %.2f s, build+write %.2f s, "
              "total %.2f s\n",
              t_read, t_graph, t_assign, t_write, t_read + t_graph + t_assign + t_write);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", kTool, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kTool, e.what());
  }
  return 1;
}
