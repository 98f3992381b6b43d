// halognn-bench-kernels: memory bandwidth (STREAM triad) and SpMM / GEMM throughput of the CPU
// reference kernels on the default graph.
//
//   halognn-bench-kernels [--data DIR] [--nodes N --edges M] [--widths 16,128,256] [--reps 10]
//                         [--triad-mib 256] [--json FILE]
//
// Every figure is the best of --reps timed runs after one warm-up run (STREAM's convention).
// Triad: a = b + s c over three float arrays, 12 bytes per element. SpMM: y = A x with the GCN
// normalisation's values (A + I) and, separately, structure only (val == nullptr); GFLOP/s
// counts 2 nnz F. Two rates bracket the memory traffic: "min GB/s" counts the compulsory bytes
// (row_ptr, col, val, x read once, y written once), "gather GB/s" counts one x row per stored
// entry as if no row were reused from cache (the upper bound the gathers can cost); compare both
// with the triad. GEMM: x W for W F x F, 2 n F^2 flops.
#include <omp.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/atomic_output.hpp"
#include "core/data/dataset.hpp"
#include "core/data/generator.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/kernels/kernels.hpp"
#include "core/rng.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

std::vector<std::int64_t> split_ints(const std::string& s) {
  std::vector<std::int64_t> out;
  std::stringstream ss(s);
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (!tok.empty()) out.push_back(std::stoll(tok));
  }
  return out;
}

template <typename F>
double best_seconds(int reps, F&& f) {
  f();  // warm-up: page faults, thread start-up
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void fill_random(Matrix& m, std::uint64_t stream) {
  const CounterRng rng({3, RngPurpose::test, stream, 0});
  auto h = m.host();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(h.size()); ++i) {
    h[i] = rng.uniform(static_cast<std::uint64_t>(i), 0) - 0.5f;
  }
}

/// GCN-normalised A + I (values 1/sqrt((d_v+1)(d_u+1))) of the symmetric graph, 32-bit offsets.
CsrMatrix gcn_operator(const GlobalGraph& g) {
  GNN_CHECK_CONFIG(g.num_directed_edges() + g.num_nodes < (std::int64_t{1} << 31),
                   "graph too large for 32-bit CSR offsets");
  const GlobalId n = g.num_nodes;
  std::vector<std::int32_t> row_ptr{0};
  std::vector<LocalId> col;
  std::vector<float> val;
  col.reserve(static_cast<std::size_t>(g.num_directed_edges() + n));
  val.reserve(col.capacity());
  for (GlobalId v = 0; v < n; ++v) {
    const double dv = static_cast<double>(g.degree(v)) + 1.0;
    bool diagonal = false;
    for (EdgeOffset k = g.row_ptr[v]; k < g.row_ptr[v + 1]; ++k) {
      const GlobalId u = g.col[k];
      if (!diagonal && u > v) {
        col.push_back(static_cast<LocalId>(v));
        val.push_back(static_cast<float>(1.0 / dv));
        diagonal = true;
      }
      col.push_back(static_cast<LocalId>(u));
      val.push_back(
          static_cast<float>(1.0 / std::sqrt(dv * (static_cast<double>(g.degree(u)) + 1.0))));
    }
    if (!diagonal) {
      col.push_back(static_cast<LocalId>(v));
      val.push_back(static_cast<float>(1.0 / dv));
    }
    row_ptr.push_back(static_cast<std::int32_t>(col.size()));
  }
  return CsrMatrix(n, n, row_ptr, col, val);
}

std::string machine_line() {
  std::string cpu = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  return cpu + ", " + std::to_string(omp_get_max_threads()) + " OpenMP threads";
}

int run(int argc, char** argv) {
  std::string data_dir, widths_arg = "16,128,256", json_path;
  SbmConfig sbm;
  int reps = 10;
  std::int64_t triad_mib = 256;
  po::options_description desc("halognn-bench-kernels [options]");
  desc.add_options()("help,h", "show this help")(
      "data", po::value(&data_dir), "dataset directory (default: the generated SBM graph)")(
      "nodes", po::value(&sbm.num_nodes)->default_value(sbm.num_nodes), "SBM nodes")(
      "edges", po::value(&sbm.num_edges)->default_value(sbm.num_edges), "SBM undirected edges")(
      "widths", po::value(&widths_arg)->default_value(widths_arg), "feature widths F")(
      "reps", po::value(&reps)->default_value(reps), "timed runs per figure (best is kept)")(
      "triad-mib", po::value(&triad_mib)->default_value(triad_mib), "MiB per triad array")(
      "json", po::value(&json_path), "also write the results as JSON to this file");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  GNN_CHECK_CONFIG(reps > 0 && triad_mib > 0, "--reps and --triad-mib must be positive");
  const Device& dev = *cpu_device();
  Json results = Json::object();
  results["machine"] = machine_line();
  std::printf("# %s; best of %d runs\n", machine_line().c_str(), reps);

  // STREAM triad.
  {
    const std::int64_t n = triad_mib * (1 << 20) / 4;
    Matrix a(1, n), b(1, n), c(1, n);
    fill_random(b, 1);
    fill_random(c, 2);
    float* pa = a.data();
    const float* pb = b.data();
    const float* pc = c.data();
    const float s = 3.0f;
    const double t = best_seconds(reps, [&] {
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    });
    const double gbs = 12.0 * static_cast<double>(n) / t / 1e9;
    std::printf("triad: %lld MiB per array, %.2f ms, %.1f GB/s\n",
                static_cast<long long>(triad_mib), t * 1e3, gbs);
    results["triad_gb_per_s"] = gbs;
  }

  // The graph.
  Dataset ds = data_dir.empty() ? generate_sbm(sbm) : read_dataset(data_dir);
  const GlobalGraph graph = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  const CsrMatrix a = gcn_operator(graph);
  const std::int64_t n = a.rows(), nnz = a.nnz();
  const std::string source = !data_dir.empty() ? data_dir
                             : vm["nodes"].defaulted() && vm["edges"].defaulted()
                                 ? std::string("generate_sbm(SbmConfig{})")
                                 : "generate_sbm(num_nodes=" + std::to_string(sbm.num_nodes) +
                                       ", num_edges=" + std::to_string(sbm.num_edges) + ")";
  std::printf("graph: %s, %lld nodes, %lld stored entries of A + I\n", source.c_str(),
              static_cast<long long>(n), static_cast<long long>(nnz));
  results["graph"] = source;
  results["graph_nodes"] = static_cast<double>(n);
  results["graph_nnz"] = static_cast<double>(nnz);

  std::printf("%-22s %5s %10s %10s %10s %12s\n", "kernel", "F", "ms", "GFLOP/s", "min GB/s",
              "gather GB/s");
  Json rows = Json::array();
  auto report = [&](const char* kernel, std::int64_t f, double t, double flops, double bytes,
                    double gather_bytes) {
    std::printf("%-22s %5lld %10.2f %10.2f %10.1f %12.1f\n", kernel, static_cast<long long>(f),
                t * 1e3, flops / t / 1e9, bytes / t / 1e9, gather_bytes / t / 1e9);
    Json r = Json::object();
    r["kernel"] = kernel;
    r["F"] = static_cast<double>(f);
    r["ms"] = t * 1e3;
    r["gflop_per_s"] = flops / t / 1e9;
    r["min_gb_per_s"] = bytes / t / 1e9;
    r["gather_gb_per_s"] = gather_bytes / t / 1e9;
    rows.push_back(r);
  };
  for (const std::int64_t f : split_ints(widths_arg)) {
    GNN_CHECK_CONFIG(f > 0, "widths must be positive");
    Matrix x(n, f), y(n, f);
    fill_random(x, 3);
    const double dense_bytes = 2.0 * static_cast<double>(n * f) * 4.0;  // x once, y once
    const double csr_bytes = 4.0 * static_cast<double>(n + 1 + nnz);
    const double t_val =
        best_seconds(reps, [&] { kernels::spmm(dev, a.view(), x.view(), 0.0f, y.view()); });
    const double gathers = 4.0 * static_cast<double>(nnz * f) - 4.0 * static_cast<double>(n * f);
    report("spmm (values)", f, t_val, 2.0 * nnz * f, csr_bytes + 4.0 * nnz + dense_bytes,
           csr_bytes + 4.0 * nnz + dense_bytes + gathers);
    CsrView structure = a.view();
    structure.val = nullptr;
    const double t_str =
        best_seconds(reps, [&] { kernels::spmm(dev, structure, x.view(), 0.0f, y.view()); });
    report("spmm (structure only)", f, t_str, 2.0 * nnz * f, csr_bytes + dense_bytes,
           csr_bytes + dense_bytes + gathers);
    Matrix w(f, f);
    fill_random(w, 4);
    const double t_gemm = best_seconds(
        reps, [&] { kernels::gemm(dev, false, false, 1.0f, x.view(), w.view(), 0.0f, y.view()); });
    report("gemm n x F . F x F", f, t_gemm, 2.0 * n * f * f, dense_bytes + 4.0 * f * f,
           dense_bytes + 4.0 * f * f);
  }
  results["kernels"] = rows;
  if (!json_path.empty()) write_file_atomic(json_path, dump_json(results) + "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halognn-bench-kernels: %s\n", e.what());
    return 1;
  }
}
