// halognn-bench-grouping: the time semantic grouping takes (partition/semantic_groups.hpp), one
// table row per link, on a generated boundary graph or on the links of a partition.
//
//   halognn-bench-grouping --u 100000 [--v 100000] [--degree 10] [--communities 2000]
//                          [--mix 0.2] [--seed 1] [--threads N] [--groups-per-link K]
//   halognn-bench-grouping --data DIR --partition PDIR [--links N] [--threads N] ...
//
// Generated: one link whose U nodes belong to --communities planted communities; each u draws
// --degree distinct neighbours in V, from its community's share of V with probability 1 - mix
// and uniformly from all of V otherwise (partition/planted_link.hpp: one M2M component with
// shared-neighbour structure to find). Partition: the assignment is read back from a
// partition directory (halognn-partition's output, with or without groups), the boundary graphs
// are built from the dataset's graph, and the first --links links (all by default) are grouped.
//
// Columns: |U|, |V|, cross edges, 2-hop = Σ_v deg_U(v)² (the size of the sparse "shares a
// neighbour" structure one k-means pass walks), M2M components, groups, the elbow's M2M count,
// the counts tried, the error ‖B − B̃‖_F / ‖B‖_F, and the seconds group_link took.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/data/dataset.hpp"
#include "core/error.hpp"
#include "partition/partition_io.hpp"
#include "partition/planted_link.hpp"
#include "partition/semantic_groups.hpp"
#include "launch/tool_main.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

constexpr const char* kTool = "halognn-bench-grouping";

/// The parts of every node, read back from a partition directory's rank files.
std::vector<Rank> read_assignment(const std::string& dir, GlobalId num_nodes) {
  const Json m = read_partition_manifest(dir);
  const auto parts = static_cast<Rank>(m.at("parts").get<std::int64_t>());
  std::vector<Rank> out(static_cast<std::size_t>(num_nodes), -1);
  for (Rank r = 0; r < parts; ++r) {
    const LocalPartition lp = read_local_partition(dir, r, parts);
    GNN_CHECK_INPUT(lp.global_num_nodes == num_nodes, dir, "is a partition of ",
                    lp.global_num_nodes, " nodes, the dataset has ", num_nodes);
    for (LocalId i = 0; i < lp.num_owned; ++i) out[static_cast<std::size_t>(lp.global_ids[static_cast<std::size_t>(i)])] = r;
  }
  for (const Rank p : out) GNN_CHECK_INPUT(p >= 0, dir, "leaves a node without a part");
  return out;
}

std::int64_t two_hop(const BoundaryGraph& b) {
  std::vector<std::int64_t> deg(b.v.size(), 0);
  for (const std::int32_t v : b.u_col) ++deg[static_cast<std::size_t>(v)];
  std::int64_t s = 0;
  for (const std::int64_t d : deg) s += d * d;
  return s;
}

void print_header() {
  std::printf("%8s %9s %9s %10s %12s %6s %8s %8s %24s %8s %9s\n", "link", "|U|", "|V|", "edges",
              "2-hop", "m2m cc", "groups", "elbow k", "k tried (first..last)", "error", "seconds");
}

/// Sums over links: rows plain and sent, squared error times edges, edges, seconds.
struct Totals {
  std::int64_t rows_plain = 0, rows_sent = 0, edges = 0;
  double err2_edges = 0, seconds = 0;
};

void time_link(const BoundaryGraph& b, const GroupingConfig& cfg, bool curves, Totals& t) {
  const auto t0 = std::chrono::steady_clock::now();
  const LinkGroups lg = group_link(b, cfg);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int elbow_k = 0;
  std::string tried = "-";
  if (!lg.inertia_curve.empty()) {
    const std::size_t pick = elbow_index(lg.inertia_curve);
    elbow_k = lg.inertia_curve[pick].first;
    tried = std::to_string(lg.inertia_curve.size()) + ": " +
            std::to_string(lg.inertia_curve.front().first) + ".." +
            std::to_string(lg.inertia_curve.back().first);
  }
  const std::string name = std::to_string(b.from) + "->" + std::to_string(b.to);
  std::printf("%8s %9lld %9lld %10lld %12lld %6d %8lld %8d %24s %8.4f %9.3f\n", name.c_str(),
              static_cast<long long>(lg.u_nodes), static_cast<long long>(lg.v_nodes),
              static_cast<long long>(lg.edges), static_cast<long long>(two_hop(b)),
              lg.m2m_components, static_cast<long long>(lg.num_groups()), elbow_k, tried.c_str(),
              lg.error, s);
  if (curves) {
    std::printf("          inertia curve (M2M groups: inertia):");
    for (const auto& [k, inertia] : lg.inertia_curve) std::printf(" %d:%.4g", k, inertia);
    std::printf("\n");
  }
  std::fflush(stdout);
  t.rows_plain += lg.u_nodes;
  t.rows_sent += lg.rows_sent();
  t.edges += lg.edges;
  t.err2_edges += lg.error * lg.error * static_cast<double>(lg.edges);
  t.seconds += s;
}

void print_totals(const Totals& t, std::size_t links) {
  std::printf("total over %zu links: rows plain %lld, rows sent %lld (%.2fx), error "
              "(edge-weighted) %.4f, grouping %.3f s\n",
              links, static_cast<long long>(t.rows_plain), static_cast<long long>(t.rows_sent),
              t.rows_sent > 0 ? static_cast<double>(t.rows_plain) / static_cast<double>(t.rows_sent) : 0.0,
              t.edges > 0 ? std::sqrt(t.err2_edges / static_cast<double>(t.edges)) : 0.0, t.seconds);
}

int run(int argc, char** argv) {
  PlantedLinkConfig gen;
  GroupingConfig cfg;
  std::string data, partition;
  int threads = 0;
  std::int64_t max_links = 0;
  bool curves = false;
  po::options_description desc("halognn-bench-grouping [options]");
  desc.add_options()("help,h", "show this help")
      ("u", po::value(&gen.u)->default_value(gen.u), "generated link: |U|")
      ("v", po::value(&gen.v)->default_value(gen.v), "generated link: |V| (0: as |U|)")
      ("degree", po::value(&gen.degree)->default_value(gen.degree), "generated link: cross edges per U node")
      ("communities", po::value(&gen.communities)->default_value(gen.communities),
       "generated link: planted communities")
      ("mix", po::value(&gen.mix)->default_value(gen.mix),
       "generated link: probability that an edge leaves its community")
      ("data", po::value(&data), "dataset directory (with --partition: group its links instead)")
      ("partition", po::value(&partition), "partition directory of --data")
      ("links", po::value(&max_links)->default_value(0), "group the first N links only (0: all)")
      ("groups-per-link", po::value(&cfg.groups_per_link)->default_value(0),
       "M2M groups per link (0: at the elbow)")
      ("seed", po::value(&gen.seed)->default_value(gen.seed), "generator and grouping seed")
      ("curves", po::bool_switch(&curves), "also print each link's inertia curve")
      ("threads", po::value(&threads)->default_value(threads), "OpenMP threads (0: the OpenMP default)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  po::notify(vm);
  GNN_CHECK_CONFIG(threads >= 0, "--threads must not be negative");
  GNN_CHECK_CONFIG(max_links >= 0, "--links must not be negative");
  GNN_CHECK_CONFIG(data.empty() == partition.empty(), "--data and --partition go together");
  if (threads > 0) omp_set_num_threads(threads);
  cfg.seed = gen.seed;

  if (data.empty()) {
    const BoundaryGraph b = planted_link(gen);
    std::printf("# generated link: |U| %lld, degree %lld, %lld communities, mix %.2f, seed %llu; "
                "%d OpenMP threads\n",
                static_cast<long long>(gen.u), static_cast<long long>(gen.degree),
                static_cast<long long>(gen.communities), gen.mix,
                static_cast<unsigned long long>(gen.seed), omp_get_max_threads());
    print_header();
    Totals t;
    time_link(b, cfg, curves, t);
    print_totals(t, 1);
    return 0;
  }
  const Dataset ds = read_dataset(data);
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  const std::vector<Rank> parts = read_assignment(partition, g.num_nodes);
  const Rank num_parts = *std::max_element(parts.begin(), parts.end()) + 1;
  std::vector<BoundaryGraph> links = boundary_graphs(g, parts, num_parts);
  if (max_links > 0 && static_cast<std::int64_t>(links.size()) > max_links) links.resize(static_cast<std::size_t>(max_links));
  std::printf("# %s (%lld nodes, %lld stored edges), %d parts, %zu links; %d OpenMP threads\n",
              ds.name.c_str(), static_cast<long long>(g.num_nodes),
              static_cast<long long>(g.row_ptr.back()), num_parts, links.size(),
              omp_get_max_threads());
  print_header();
  Totals t;
  for (const BoundaryGraph& b : links) time_link(b, cfg, curves, t);
  print_totals(t, links.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return halognn::run_tool(kTool, [&] { return run(argc, argv); });
}
