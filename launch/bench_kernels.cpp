// halognn-bench-kernels: the machine's limits (STREAM triad bandwidth, peak flops) and every CPU
// kernel of a training step timed against its roofline bound.
//
//   halognn-bench-kernels [--data DIR | --nodes N --edges M] [--widths 16,64,128,256,512]
//                         [--hidden 256] [--classes 16] [--reps 10] [--triad-mib 256]
//                         [--order blocks|rcm|none] [--order-block ROWS] [--isa ISA]
//                         [--numerics fast|portable] [--spmm-cache-mib MIB] [--limits-only]
//                         [--json FILE]
//
// Limits, measured by this program: triad a = b + s c over three float arrays (12 bytes per
// element, STREAM's count) with all OpenMP threads and with one; peak flops from independent
// fused multiply-adds of the widest vectors the CPU has (all threads and one).
// Kernels: each row gives the time (best of --reps after a warm-up, STREAM's convention), the
// compulsory bytes (every operand read once, every output written once; a read-modify-write
// output counts twice) and flops, the roofline bound max(bytes / triad, flops / peak) with the
// all-thread limits, and time / bound. SpMM rows add the "gather" rate: bytes as if every stored
// entry fetched its whole x row from memory (no reuse), for comparison with earlier tables, and
// under the values SpMM and the GAT aggregations a "gather limit": the rows they gather (the
// column indices, in order), of an SpMM feature block's width, read from a block of its size and
// nothing else (no kernel that gathers those rows runs faster), with the kernel's rate of
// gathered rows as a fraction of it.
// The graph is the default SBM (or --data), renumbered in the partitioner's locality order (one
// part; --order), as halognn-partition would store it.
//
// Built with -DHALOGNN_BENCH_BASELINE against an older tree (no multi-versioned kernels, no
// locality order, no fused kernels), the same program measures that tree's kernels on the graph
// in generator order: the "before" column of docs/benchmarks.md.
#include <omp.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <immintrin.h>
#include <iostream>
#include <numeric>
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
#include "launch/bench_limits.hpp"
#ifndef HALOGNN_BENCH_BASELINE
#include "compress/codec.hpp"
#include "compress/codec_plan.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "partition/partition.hpp"
#endif

namespace po = boost::program_options;
using namespace halognn;
using bench::best_seconds;
using bench::fill_random;
using bench::triad_gbs;

namespace {

std::vector<std::int64_t> split_ints(const std::string& s) {
  std::vector<std::int64_t> out;
  std::stringstream ss(s);
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (!tok.empty()) out.push_back(std::stoll(tok));
  }
  return out;
}

Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t stream) {
  Matrix m(rows, cols);
  fill_random(m.data(), rows * cols, stream);
  return m;
}

// ---- peak flops: independent multiply-add chains of the widest vectors -----------------------

constexpr int kChains = 12;  // more than latency x pipes on current cores

__attribute__((target("avx512f"))) double fma_chains_avx512(std::int64_t iters) {
  __m512 acc[kChains];
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  }
  float out[16];
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) double fma_chains_avx2(std::int64_t iters) {
  __m256 acc[kChains];
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  }
  float out[8];
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(out, s);
  return out[0];
}

double mul_add_chains_sse2(std::int64_t iters) {  // no FMA: a multiply and an add per step
  __m128 acc[kChains];
  const __m128 m = _mm_set1_ps(0.999999f), c = _mm_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm_set1_ps(static_cast<float>(i));
  for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], m), c);
  }
  float out[4];
  __m128 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm_add_ps(s, acc[i]);
  _mm_storeu_ps(out, s);
  return out[0];
}

/// Peak single-precision GFLOP/s with `threads` threads (2 flops per lane per step), and the
/// vector set used.
std::pair<double, std::string> peak_gflops(int threads, int reps) {
  __builtin_cpu_init();
  int lanes = 4;
  std::string set = "sse2";
  double (*fn)(std::int64_t) = mul_add_chains_sse2;
  if (__builtin_cpu_supports("avx512f")) {
    lanes = 16, set = "avx512", fn = fma_chains_avx512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    lanes = 8, set = "avx2", fn = fma_chains_avx2;
  }
  const std::int64_t iters = 20'000'000;
  double sink = 0;
  const double t = best_seconds(reps, [&] {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += fn(iters);
  });
  if (sink == 12345.678) std::printf(" ");  // keep the chains alive
  return {2.0 * lanes * kChains * static_cast<double>(iters) * threads / t / 1e9, set};
}

// ---- the graph --------------------------------------------------------------------------------

/// The GCN operator D^-1/2 (A + I) D^-1/2 of the symmetric graph with vertex v renumbered
/// new_id[v], 32-bit offsets.
CsrMatrix gcn_operator(const GlobalGraph& g, const std::vector<std::int64_t>& new_id) {
  GNN_CHECK_CONFIG(g.num_directed_edges() + g.num_nodes < (std::int64_t{1} << 31),
                   "graph too large for 32-bit CSR offsets");
  const GlobalId n = g.num_nodes;
  std::vector<GlobalId> old_of(static_cast<std::size_t>(n));
  for (GlobalId v = 0; v < n; ++v) old_of[new_id[v]] = v;
  std::vector<std::int32_t> row_ptr(static_cast<std::size_t>(n) + 1, 0);
  for (GlobalId i = 0; i < n; ++i) row_ptr[i + 1] = row_ptr[i] + static_cast<std::int32_t>(g.degree(old_of[i]) + 1);
  std::vector<LocalId> col(static_cast<std::size_t>(row_ptr[n]));
  std::vector<float> val(col.size());
#pragma omp parallel for schedule(dynamic, 1024)
  for (GlobalId i = 0; i < n; ++i) {
    const GlobalId v = old_of[i];
    const double dv = static_cast<double>(g.degree(v)) + 1.0;
    std::vector<std::pair<LocalId, float>> row;
    row.emplace_back(static_cast<LocalId>(i), static_cast<float>(1.0 / dv));
    for (EdgeOffset k = g.row_ptr[v]; k < g.row_ptr[v + 1]; ++k) {
      const GlobalId u = g.col[k];
      row.emplace_back(static_cast<LocalId>(new_id[u]),
                       static_cast<float>(1.0 / std::sqrt(dv * (static_cast<double>(g.degree(u)) + 1.0))));
    }
    std::sort(row.begin(), row.end());
    for (std::size_t k = 0; k < row.size(); ++k) {
      col[row_ptr[i] + k] = row[k].first;
      val[row_ptr[i] + k] = row[k].second;
    }
  }
  return CsrMatrix(n, n, row_ptr, col, val);
}

/// The transpose of a's structure and, per transposed entry, its index in a.
struct Transposed {
  CsrMatrix t;
  std::vector<std::int32_t> t_to_a;
};

Transposed transpose(const CsrMatrix& a) {
  const CsrView v = a.view();
  std::vector<std::int32_t> ptr(static_cast<std::size_t>(v.cols) + 1, 0), t_to_a(static_cast<std::size_t>(v.nnz));
  for (std::int64_t k = 0; k < v.nnz; ++k) ++ptr[v.col[k] + 1];
  for (std::int64_t c = 0; c < v.cols; ++c) ptr[c + 1] += ptr[c];
  std::vector<std::int32_t> pos(ptr.begin(), ptr.end() - 1);
  std::vector<LocalId> col(static_cast<std::size_t>(v.nnz));
  for (std::int64_t i = 0; i < v.rows; ++i)
    for (std::int32_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k) {
      const std::int32_t p = pos[v.col[k]]++;
      col[p] = static_cast<LocalId>(i);
      t_to_a[p] = k;
    }
  return {CsrMatrix(v.cols, v.rows, ptr, col, {}), std::move(t_to_a)};
}

#ifndef HALOGNN_BENCH_BASELINE
std::string seconds_text(std::chrono::steady_clock::time_point t0) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return buf;
}
#endif

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

// ---- the table --------------------------------------------------------------------------------

/// One table row as JSON: the kernel, its shape, time and compulsory bytes and flops.
Json kernel_json(const std::string& kernel, const std::string& shape, double t, double bytes,
                 double flops) {
  Json r = Json::object();
  r["kernel"] = kernel;
  r["shape"] = shape;
  r["ms"] = t * 1e3;
  r["bytes"] = bytes;
  r["flops"] = flops;
  return r;
}

#ifndef HALOGNN_BENCH_BASELINE
/// The limit of a gathering kernel at width f that gathers rows of `cols` floats in a pass (an
/// SpMM feature block, or all f): a's column indices, in a's order, read as rows of that width
/// from a block of a.cols such rows and nothing else (bench::row_read_gbs); printed under the
/// kernel's row with the kernel's rate of gathered rows (one row of f floats a stored entry, in
/// time t) as a fraction of it, and added to `out`.
void gather_limit(const std::string& kernel, const CsrView& a, std::int64_t f, std::int64_t cols,
                  double t, int threads, int reps, Json& out) {
  cols = (cols + 15) / 16 * 16;
  const double limit = bench::row_read_gbs(a.col, a.nnz, a.cols, cols, threads, reps);
  const double gathered = 4.0 * static_cast<double>(a.nnz * f) / t / 1e9;
  std::printf("  gather limit: the same %lld-float rows read from a %.1f MiB block, %.1f GB/s; "
              "%s gathers rows at %.1f GB/s, %.0f%% of it\n",
              static_cast<long long>(cols), 4.0 * static_cast<double>(a.cols * cols) / (1 << 20),
              limit, kernel.c_str(), gathered, 100.0 * gathered / limit);
  std::fflush(stdout);
  Json r = Json::object();
  r["kernel"] = kernel;
  r["f"] = static_cast<double>(f);
  r["block_cols"] = static_cast<double>(cols);
  r["row_read_gb_per_s"] = limit;
  r["kernel_gather_gb_per_s"] = gathered;
  out.push_back(r);
}
#endif

struct Limits {
  double triad = 0, peak = 0;  ///< all threads: GB/s, GFLOP/s
};

class Table {
 public:
  explicit Table(Limits lim) : lim_(lim) {
    std::printf("%-34s %-22s %10s %10s %7s %9s %9s %9s\n", "kernel", "shape", "ms", "bound ms",
                "ratio", "GB/s", "GFLOP/s", "gather");
  }
  /// One kernel: its time, compulsory bytes and flops, and (SpMM) its no-reuse gather bytes.
  void add(const std::string& kernel, const std::string& shape, double t, double bytes,
           double flops, double gather_bytes = 0) {
    const double bound = std::max(bytes / (lim_.triad * 1e9), flops / (lim_.peak * 1e9));
    std::printf("%-34s %-22s %10.3f %10.3f %7.2f %9.1f %9.1f", kernel.c_str(), shape.c_str(),
                t * 1e3, bound * 1e3, t / bound, bytes / t / 1e9, flops / t / 1e9);
    if (gather_bytes > 0)
      std::printf(" %9.1f", gather_bytes / t / 1e9);
    std::printf("\n");
    std::fflush(stdout);
    Json r = kernel_json(kernel, shape, t, bytes, flops);
    r["bound_ms"] = bound * 1e3;
    r["ratio"] = t / bound;
    if (gather_bytes > 0) r["gather_gb_per_s"] = gather_bytes / t / 1e9;
    rows_.push_back(r);
  }
  Json rows() const { return rows_; }

 private:
  Limits lim_;
  Json rows_ = Json::array();
};

std::string dims(std::int64_t a, std::int64_t b) {
  return std::to_string(a) + "x" + std::to_string(b);
}


#ifndef HALOGNN_BENCH_BASELINE
// ---- the GPU table ------------------------------------------------------------------------------

/// Median seconds of `reps` runs of f on `dev` after one warm-up, the device drained before and
/// after each run (host clock: every run here takes a millisecond or more).
template <typename F>
double gpu_median_seconds(const Device& dev, int reps, F&& f) {
  f();
  dev.synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    dev.synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Matrix gpu_random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t stream,
                         const DevicePtr& gpu) {
  return random_matrix(rows, cols, stream).clone(gpu);
}

/// SpMM, SpMM-transpose, the layers' GEMMs and every codec on GPU 0, against the GPU's own
/// limits measured here: device-to-device copy bandwidth (bytes read + written, 1 GiB buffers)
/// and the SGEMM rate of an 8192^3 product. SpMM rows give the gather rate (every stored entry
/// fetches its whole x row, as the CPU table counts it) as a fraction of the copy bandwidth;
/// codec rows the bytes moved (fp32 in + encoded out, or back) as that fraction.
void gpu_table(const CsrMatrix& a, const std::vector<std::int64_t>& widths, std::int64_t hidden,
               std::int64_t classes, std::int64_t codec_rows, int reps, Json& results) {
  const DevicePtr gpu = cuda_device(0);
  const Device& dev = *gpu;
  std::printf("# %s; median of %d runs\n", dev.name().c_str(), reps);
  results["machine"] = dev.name();
  results["device"] = "cuda";

  // Limits.
  const std::size_t copy_bytes = std::size_t{1} << 30;
  Buffer<std::byte> src(copy_bytes, gpu), dst(copy_bytes, gpu);
  const double t_copy =
      gpu_median_seconds(dev, reps, [&] { dev.copy(dst.data(), src.data(), copy_bytes); });
  const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / t_copy / 1e9;
  const std::int64_t g = 8192;
  {
    const Matrix ga = gpu_random_matrix(g, g, 30, gpu), gb = gpu_random_matrix(g, g, 31, gpu);
    Matrix gy(g, g, gpu);
    const double t = gpu_median_seconds(dev, reps, [&] {
      kernels::gemm(dev, false, false, 1.0f, ga.view(), gb.view(), 0.0f, gy.view());
    });
    results["sgemm_tflop_per_s"] = 2.0 * static_cast<double>(g * g * g) / t / 1e12;
  }
  const double sgemm = results["sgemm_tflop_per_s"].get<double>();
  std::printf("copy: %.0f GB/s device to device (read + write, 1 GiB); sgemm: %.1f TFLOP/s (%lldx%lldx%lld)\n",
              copy_gbs, sgemm, static_cast<long long>(g), static_cast<long long>(g),
              static_cast<long long>(g));
  results["copy_gb_per_s"] = copy_gbs;

  // The graph on the GPU.
  const CsrView hv = a.view();
  const std::int64_t n = hv.rows, nnz = hv.nnz;
  const auto row_ptr = Buffer<std::int32_t>::from_host({hv.row_ptr, static_cast<std::size_t>(n + 1)}, gpu);
  const auto col = Buffer<LocalId>::from_host({hv.col, static_cast<std::size_t>(nnz)}, gpu);
  const auto val = Buffer<float>::from_host({hv.val, static_cast<std::size_t>(nnz)}, gpu);
  const CsrView av{n, hv.cols, nnz, row_ptr.data(), col.data(), val.data()};
  CsrView pattern = av;
  pattern.val = nullptr;

  Json rows = Json::array();
  std::printf("%-30s %-18s %9s %9s %9s %9s %9s\n", "kernel", "shape", "ms", "GB/s", "gather",
              "of copy", "TFLOP/s");
  auto row = [&](const std::string& kernel, const std::string& shape, double t, double bytes,
                 double flops, double fraction_bytes) {
    const double gather = fraction_bytes / t / 1e9;
    std::printf("%-30s %-18s %9.3f %9.0f %9.0f %9.2f %9.2f\n", kernel.c_str(), shape.c_str(),
                t * 1e3, bytes / t / 1e9, gather, gather / copy_gbs, flops / t / 1e12);
    std::fflush(stdout);
    Json r = kernel_json(kernel, shape, t, bytes, flops);
    r["fraction_of_copy"] = gather / copy_gbs;
    rows.push_back(r);
  };

  const double structure = 4.0 * static_cast<double>(n + 1) + 4.0 * static_cast<double>(nnz);
  const double values = 4.0 * static_cast<double>(nnz);
  for (const std::int64_t f : widths) {
    const Matrix x = gpu_random_matrix(n, f, 3, gpu);
    Matrix y(n, f, gpu);
    const double dense = 8.0 * static_cast<double>(n * f);
    const double flops = 2.0 * static_cast<double>(nnz * f);
    const double gather = 4.0 * static_cast<double>(nnz - n) * static_cast<double>(f);
    const std::string shape = "F=" + std::to_string(f);
    row("spmm (values)", shape,
        gpu_median_seconds(dev, reps, [&] { kernels::spmm(dev, av, x.view(), 0.0f, y.view()); }),
        structure + values + dense, flops, structure + values + dense + gather);
    row("spmm (structure only)", shape,
        gpu_median_seconds(dev, reps, [&] { kernels::spmm(dev, pattern, x.view(), 0.0f, y.view()); }),
        structure + dense, flops, structure + dense + gather);
    row("spmm_transpose (values)", shape,
        gpu_median_seconds(dev, reps,
                           [&] { kernels::spmm_transpose(dev, av, x.view(), 0.0f, y.view()); }),
        structure + values + dense, flops, structure + values + dense + gather);
  }
  auto gemm_row = [&](const char* what, bool ta, bool tb, std::int64_t m, std::int64_t k,
                      std::int64_t nn) {
    const Matrix am = ta ? gpu_random_matrix(k, m, 5, gpu) : gpu_random_matrix(m, k, 5, gpu);
    const Matrix bm = tb ? gpu_random_matrix(nn, k, 6, gpu) : gpu_random_matrix(k, nn, 6, gpu);
    Matrix y = gpu_random_matrix(m, nn, 7, gpu);
    const float beta = ta ? 1.0f : 0.0f;
    const double t = gpu_median_seconds(dev, reps, [&] {
      kernels::gemm(dev, ta, tb, 1.0f, am.view(), bm.view(), beta, y.view());
    });
    const double bytes = 4.0 * static_cast<double>(m * k + k * nn + m * nn * (beta != 0 ? 2 : 1));
    row(what, dims(m, k) + "*" + dims(k, nn), t, bytes, 2.0 * static_cast<double>(m * k * nn), bytes);
  };
  for (const std::int64_t f : widths) {
    gemm_row("gemm x W", false, false, n, f, f);
    gemm_row("gemm x^T gy (weight gradient)", true, false, f, n, f);
    gemm_row("gemm gy W^T (input gradient)", false, true, n, f, f);
  }
  gemm_row("gemm x W (classifier)", false, false, n, hidden, classes);

  // Codecs: a halo block of codec_rows rows with scattered global ids, at the hidden width and
  // at 128. GB/s is float32 input per second (as halognn-bench-codecs); "of copy" counts the
  // bytes moved (fp32 read + encoded written, or back).
  std::vector<GlobalId> ids(static_cast<std::size_t>(codec_rows));
  for (std::int64_t i = 0; i < codec_rows; ++i) ids[i] = 3 * i + 1;
  const auto gids = Buffer<GlobalId>::from_host(ids, gpu);
  for (const std::int64_t f : std::vector<std::int64_t>{128, hidden}) {
    const Matrix x = gpu_random_matrix(codec_rows, f, 40, gpu);
    Matrix y(codec_rows, f, gpu);
    const double in = 4.0 * static_cast<double>(codec_rows * f);
    for (const std::string& name : codec_names()) {
      const auto codec = make_codec(name);
      const std::size_t wire_bytes = codec->encoded_size(codec_rows, f).total();
      Buffer<std::byte> wire(wire_bytes, gpu);
      CodecContext ctx;
      ctx.seed = 1;
      ctx.row_ids = gids.data();
      const std::span<std::byte> w(wire.data(), wire_bytes);
      const double te = gpu_median_seconds(dev, reps, [&] {
        codec->encode(dev, x.view(), ctx, w);
        ++ctx.epoch;
      });
      const double td = gpu_median_seconds(dev, reps, [&] {
        codec->decode(dev, std::span<const std::byte>(wire.data(), wire_bytes), ctx, y.view());
      });
      const std::string shape = dims(codec_rows, f);
      const double moved = in + static_cast<double>(wire_bytes);
      std::printf("%-30s %-18s %9.3f %9.0f %9.0f %9.2f %9s\n", ("encode " + name).c_str(),
                  shape.c_str(), te * 1e3, in / te / 1e9, moved / te / 1e9,
                  moved / te / 1e9 / copy_gbs, "-");
      std::printf("%-30s %-18s %9.3f %9.0f %9.0f %9.2f %9s\n", ("decode " + name).c_str(),
                  shape.c_str(), td * 1e3, in / td / 1e9, moved / td / 1e9,
                  moved / td / 1e9 / copy_gbs, "-");
      std::fflush(stdout);
      for (const auto& [what, t] : {std::pair<const char*, double>{"encode ", te}, {"decode ", td}}) {
        Json r = Json::object();
        r["kernel"] = what + name;
        r["shape"] = shape;
        r["ms"] = t * 1e3;
        r["input_gb_per_s"] = in / t / 1e9;
        r["bytes"] = moved;
        r["fraction_of_copy"] = moved / t / 1e9 / copy_gbs;
        rows.push_back(r);
      }
    }
  }
  results["rows"] = rows;
}
#endif

int run(int argc, char** argv) {
  std::string data_dir, widths_arg = "16,64,128,256,512", json_path;
  // Options of the current tree only (see HALOGNN_BENCH_BASELINE).
  [[maybe_unused]] std::string order = "blocks", isa, numerics = "fast";
  [[maybe_unused]] std::int64_t order_block = 1024;
  [[maybe_unused]] std::string device = "cpu";
  [[maybe_unused]] std::int64_t codec_rows = 1 << 20;
  std::int64_t hidden = 256, classes = 16;
  SbmConfig sbm;
  int reps = 10;
  std::int64_t triad_mib = 256;
  [[maybe_unused]] double spmm_cache_mib = 0.0;
  po::options_description desc("halognn-bench-kernels [options]");
  desc.add_options()("help,h", "show this help")(
      "data", po::value(&data_dir), "dataset directory (default: the generated SBM graph)")(
      "nodes", po::value(&sbm.num_nodes)->default_value(sbm.num_nodes), "SBM nodes")(
      "edges", po::value(&sbm.num_edges)->default_value(sbm.num_edges), "SBM undirected edges")(
      "widths", po::value(&widths_arg)->default_value(widths_arg),
      "feature widths F of the SpMM and GEMM rows")(
      "hidden", po::value(&hidden)->default_value(hidden),
      "width of the elementwise and GAT rows (the layers' hidden width)")(
      "classes", po::value(&classes)->default_value(classes), "output width of the classifier GEMMs")(
      "reps", po::value(&reps)->default_value(reps), "timed runs per figure (best is kept)")(
      "triad-mib", po::value(&triad_mib)->default_value(triad_mib), "MiB per triad array")
#ifndef HALOGNN_BENCH_BASELINE
      ("device", po::value(&device)->default_value(device),
       "cpu | cuda: the GPU table (device copy bandwidth and SGEMM rate as its limits; SpMM, "
       "GEMM and every codec on the GPU)")(
      "codec-rows", po::value(&codec_rows)->default_value(codec_rows),
       "rows per codec block in the GPU table")(
      "order", po::value(&order)->default_value(order),
       "renumber the graph as the partitioner would: blocks | rcm | none")(
      "order-block", po::value(&order_block)->default_value(order_block), "rows per block")(
      "isa", po::value(&isa), "cap the kernels' instruction set: sse2 | avx2 | avx512")(
      "numerics", po::value(&numerics)->default_value(numerics), "fast | portable")(
      "spmm-cache-mib", po::value(&spmm_cache_mib),
       "MiB of gathered rows an SpMM feature block may span (default: a quarter of the L3, "
       "within 16-64)")
#endif
      ("limits-only", "measure the triad and peak flops only")(
      "json", po::value(&json_path), "also write the results as JSON to this file");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  GNN_CHECK_CONFIG(reps > 0 && triad_mib > 0, "--reps and --triad-mib must be positive");
  GNN_CHECK_CONFIG(hidden > 0 && classes > 0, "--hidden and --classes must be positive");
  const std::vector<std::int64_t> widths = split_ints(widths_arg);
  for (const std::int64_t f : widths) GNN_CHECK_CONFIG(f > 0, "--widths must be positive");
  std::string kernel_set = "reference kernels of the base tree";
#ifndef HALOGNN_BENCH_BASELINE
  kernels::set_cpu_numerics(kernels::parse_cpu_numerics(numerics));
  if (!isa.empty()) kernels::set_cpu_isa_limit(kernels::parse_cpu_isa(isa));
  if (vm.count("spmm-cache-mib")) {
    GNN_CHECK_CONFIG(spmm_cache_mib > 0.0 && spmm_cache_mib <= 1 << 20,
                     "--spmm-cache-mib must be in (0, 1048576], got ", spmm_cache_mib);
    kernels::set_spmm_cache_budget(spmm_cache_mib * (1 << 20));
  }
  kernel_set = std::string("kernels ") + kernels::to_string(kernels::cpu_isa()) + ", numerics " +
               kernels::to_string(kernels::cpu_numerics()) + ", SpMM cache budget " +
               std::to_string(static_cast<long long>(kernels::spmm_cache_budget() / (1 << 20))) +
               " MiB";
#endif
  bool on_gpu = false;
#ifndef HALOGNN_BENCH_BASELINE
  GNN_CHECK_CONFIG(device == "cpu" || device == "cuda", "--device must be cpu or cuda");
  GNN_CHECK_CONFIG(codec_rows > 0, "--codec-rows must be positive");
  on_gpu = device == "cuda";
  if (on_gpu) GNN_CHECK_CONFIG(cuda_device_count() > 0, "--device cuda: no CUDA device visible");
#endif
  const Device& dev = *cpu_device();
  Json results = Json::object();
  results["machine"] = machine_line();
  results["kernels"] = kernel_set;
  const int threads = omp_get_max_threads();
  if (!on_gpu)
    std::printf("# %s; %s; best of %d runs\n", machine_line().c_str(), kernel_set.c_str(), reps);

  // The machine's limits.
  Limits lim;
  if (!on_gpu) {
  const std::int64_t triad_n = triad_mib * (1 << 20) / 4;
  lim.triad = triad_gbs(triad_n, threads, reps);
  const double triad_one = triad_gbs(triad_n, 1, reps);
  const auto [peak_all, peak_set] = peak_gflops(threads, reps);
  const double peak_one = peak_gflops(1, reps).first;
  lim.peak = peak_all;
  std::printf("triad: %.1f GB/s (%d threads), %.1f GB/s (1 thread); %lld MiB per array\n",
              lim.triad, threads, triad_one, static_cast<long long>(triad_mib));
  std::printf("peak: %.1f GFLOP/s (%d threads), %.1f GFLOP/s (1 thread); %s multiply-add chains\n",
              peak_all, threads, peak_one, peak_set.c_str());
  results["triad_gb_per_s"] = lim.triad;
  results["triad_1thread_gb_per_s"] = triad_one;
  results["peak_gflop_per_s"] = peak_all;
  results["peak_1thread_gflop_per_s"] = peak_one;
  results["peak_vector_set"] = peak_set;
  results["threads"] = threads;
  if (vm.count("limits-only")) {
    if (!json_path.empty()) write_file_atomic(json_path, dump_json(results) + "\n");
    return 0;
  }
  }

  // The graph, in the partitioner's locality order.
  Dataset ds = data_dir.empty() ? generate_sbm(sbm) : read_dataset(data_dir);
  const GlobalGraph graph = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  std::vector<std::int64_t> new_id(static_cast<std::size_t>(graph.num_nodes));
  std::iota(new_id.begin(), new_id.end(), 0);
  std::string order_used = "generator order";
#ifndef HALOGNN_BENCH_BASELINE
  {
    LocalOrder lo;
    lo.kind = parse_local_order(order);
    lo.block_rows = order_block;
    std::vector<std::int64_t> row_ptr(graph.row_ptr.begin(), graph.row_ptr.end());
    std::vector<std::int32_t> col(graph.col.begin(), graph.col.end());
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<std::int32_t> perm = locality_order(graph.num_nodes, row_ptr, col, lo);
    for (std::int64_t i = 0; i < graph.num_nodes; ++i) new_id[perm[i]] = i;
    order_used = "order " + to_string(lo.kind) +
                 (lo.kind == LocalOrder::Kind::blocks ? " (" + std::to_string(order_block) + " rows)"
                                                      : std::string()) +
                 ", " + seconds_text(t0);
  }
#endif
  const CsrMatrix a = gcn_operator(graph, new_id);
  const std::int64_t n = a.rows(), nnz = a.nnz();
  const std::string source = !data_dir.empty() ? data_dir
                             : vm["nodes"].defaulted() && vm["edges"].defaulted()
                                 ? std::string("generate_sbm(SbmConfig{})")
                                 : "generate_sbm(num_nodes=" + std::to_string(sbm.num_nodes) +
                                       ", num_edges=" + std::to_string(sbm.num_edges) + ")";
  std::printf("graph: %s, %lld nodes, %lld stored entries of A + I, %s\n", source.c_str(),
              static_cast<long long>(n), static_cast<long long>(nnz), order_used.c_str());
  results["graph"] = source;
  results["graph_order"] = order_used;
  results["graph_nodes"] = static_cast<double>(n);
  results["graph_nnz"] = static_cast<double>(nnz);

#ifndef HALOGNN_BENCH_BASELINE
  if (on_gpu) {
    gpu_table(a, widths, hidden, classes, codec_rows, reps, results);
    if (!json_path.empty()) write_file_atomic(json_path, dump_json(results) + "\n");
    return 0;
  }
#endif
  Table table(lim);
  Json gather_limits = Json::array();
  const double structure = 4.0 * static_cast<double>(n + 1) + 4.0 * static_cast<double>(nnz);
  const double values = 4.0 * static_cast<double>(nnz);
  CsrView pattern = a.view();
  pattern.val = nullptr;

  // Sparse products at every width.
  for (const std::int64_t f : widths) {
    const Matrix x = random_matrix(n, f, 3), b = random_matrix(1, f, 4);
    Matrix y(n, f);
    const double dense = 8.0 * static_cast<double>(n * f);  // x once, y once
    const double flops = 2.0 * static_cast<double>(nnz * f);
    const double gather = 4.0 * static_cast<double>(nnz - n) * static_cast<double>(f);
    const std::string shape = "F=" + std::to_string(f);
    const double t_spmm =
        best_seconds(reps, [&] { kernels::spmm(dev, a.view(), x.view(), 0.0f, y.view()); });
    table.add("spmm (values)", shape, t_spmm, structure + values + dense, flops,
              structure + values + dense + gather);
#ifndef HALOGNN_BENCH_BASELINE
    gather_limit("spmm (values)", a.view(), f, kernels::spmm_feature_block(a.cols(), f), t_spmm,
                 threads, reps, gather_limits);
#endif
    table.add("spmm (structure only)", shape,
              best_seconds(reps, [&] { kernels::spmm(dev, pattern, x.view(), 0.0f, y.view()); }),
              structure + dense, flops, structure + dense + gather);
    table.add("spmm_transpose (values)", shape,
              best_seconds(reps, [&] {
                kernels::spmm_transpose(dev, a.view(), x.view(), 0.0f, y.view());
              }),
              structure + values + dense, flops, structure + values + dense + gather);
#ifndef HALOGNN_BENCH_BASELINE
    table.add("spmm_bias", shape,
              best_seconds(reps, [&] {
                kernels::spmm_bias(dev, a.view(), x.view(), 0.0f, b.data(), y.view());
              }),
              structure + values + dense + 4.0 * f, flops + static_cast<double>(n * f));
#endif
  }

  // Dense products: the layers' shapes at every width (x W forward, xᵀ gy weight gradient,
  // gy Wᵀ input gradient) and the classifier's (F = hidden -> classes).
  auto gemm_row = [&](const char* what, bool ta, bool tb, std::int64_t m, std::int64_t k,
                      std::int64_t nn) {
    const Matrix am = ta ? random_matrix(k, m, 5) : random_matrix(m, k, 5);
    const Matrix bm = tb ? random_matrix(nn, k, 6) : random_matrix(k, nn, 6);
    Matrix y = random_matrix(m, nn, 7);
    const float beta = ta ? 1.0f : 0.0f;  // weight gradients accumulate
    const double t = best_seconds(reps, [&] {
      kernels::gemm(dev, ta, tb, 1.0f, am.view(), bm.view(), beta, y.view());
    });
    const double bytes = 4.0 * static_cast<double>(m * k + k * nn + m * nn * (beta != 0 ? 2 : 1));
    table.add(what, dims(m, k) + "*" + dims(k, nn), t, bytes, 2.0 * static_cast<double>(m * k * nn));
  };
  for (const std::int64_t f : widths) {
    gemm_row("gemm x W", false, false, n, f, f);
    gemm_row("gemm x^T gy (weight gradient)", true, false, f, n, f);
    gemm_row("gemm gy W^T (input gradient)", false, true, n, f, f);
  }
  gemm_row("gemm x W (classifier)", false, false, n, hidden, classes);
  gemm_row("gemm x^T gy (classifier)", true, false, hidden, n, classes);
  gemm_row("gemm gy W^T (classifier)", false, true, n, classes, hidden);
#ifndef HALOGNN_BENCH_BASELINE
  {
    // SAGE: y = x_own W_self + h W_neigh + b in one pass; GCN: dW, db from one pass over gy.
    const std::int64_t f = hidden;
    const Matrix x1 = random_matrix(n, f, 8), x2 = random_matrix(n, f, 9);
    const Matrix w1 = random_matrix(f, f, 10), w2 = random_matrix(f, f, 11), b = random_matrix(1, f, 12);
    Matrix y(n, f), gw(f, f), gb(1, f);
    table.add("linear (2 products + bias)", dims(n, 2 * f) + "*" + dims(2 * f, f),
              best_seconds(reps, [&] {
                kernels::linear(dev, x1.view(), w1.view(), x2.view(), w2.view(), b.data(), y.view());
              }),
              4.0 * static_cast<double>(2 * n * f + 2 * f * f + n * f + f),
              4.0 * static_cast<double>(n * f * f) + static_cast<double>(n * f));
    table.add("linear_grad (weight + bias grad)", dims(f, n) + "*" + dims(n, f),
              best_seconds(reps, [&] {
                kernels::linear_grad(dev, x1.view(), x2.view(), gw.view(), gb.data());
              }),
              4.0 * static_cast<double>(2 * n * f + 2 * f * f + 2 * f),
              2.0 * static_cast<double>(n * f * f) + static_cast<double>(n * f));
  }
#endif

  // Elementwise, row movement, loss and optimiser kernels at the hidden width.
  {
    const std::int64_t f = hidden, elems = n * f;
    const double e4 = 4.0 * static_cast<double>(elems);
    Matrix x = random_matrix(n, f, 13), y = random_matrix(n, f, 14), z(n, f);
    const Matrix b = random_matrix(1, f, 15);
    std::vector<GlobalId> ids(static_cast<std::size_t>(n));
    std::iota(ids.begin(), ids.end(), GlobalId{0});
    const std::string shape = dims(n, f);
    table.add("copy", shape, best_seconds(reps, [&] { kernels::copy(dev, x.view(), z.view()); }),
              2 * e4, 0);
    table.add("fill", shape, best_seconds(reps, [&] { kernels::fill(dev, z.view(), 0.5f); }), e4,
              0);
    table.add("axpy", shape,
              best_seconds(reps, [&] { kernels::axpy(dev, 1e-3f, x.view(), z.view()); }), 3 * e4,
              2.0 * static_cast<double>(elems));
    table.add("relu_forward (in place)", shape,
              best_seconds(reps, [&] { kernels::relu_forward(dev, z.view(), z.view()); }), 2 * e4,
              static_cast<double>(elems));
    table.add("relu_backward (in place)", shape,
              best_seconds(reps, [&] { kernels::relu_backward(dev, x.view(), z.view(), z.view()); }),
              3 * e4, static_cast<double>(elems));
    // The owned rows' dropout backward through the activated rows (docs/models.md): the same
    // streams as relu_backward, and no mask drawn.
    table.add("relu_dropout_backward (in place)", shape,
              best_seconds(reps, [&] {
                kernels::relu_dropout_backward(dev, 0.5f, x.view(), z.view(), z.view());
              }),
              3 * e4, 2.0 * static_cast<double>(elems));
    // An activation's forward (x -> z) and its backward in place on z, with its operations an
    // element for the flop column.
    const auto activation = [&](const std::string& name, auto forward, auto backward, double fwd_ops,
                                double bwd_ops) {
      table.add(name + "_forward", shape, best_seconds(reps, [&] { forward(dev, x.view(), z.view()); }),
                2 * e4, fwd_ops * static_cast<double>(elems));
      table.add(name + "_backward (in place)", shape,
                best_seconds(reps, [&] { backward(dev, x.view(), z.view(), z.view()); }), 3 * e4,
                bwd_ops * static_cast<double>(elems));
    };
    // GAT's: about 22 operations an element on the negative side (expm1's range reduction, a
    // degree-8 polynomial, the scaling), computed for every element.
    activation("elu", kernels::elu_forward, kernels::elu_backward, 22.0, 3.0);
    // The residual blocks': about 85 operations an element (two exps, polynomials of degree 5
    // and 9, a division), computed for every element (normal_math.hpp).
    activation("gelu", kernels::gelu_forward, kernels::gelu_backward, 85.0, 88.0);
    // The residual blocks' layer norm (x -> z with the row statistics; its backward in place on z,
    // the parameter gradients accumulated): x, gamma and beta read and z written once (the two
    // passes over a row's sums read it from the cache); about 9 and 14 operations an element.
    const Matrix gamma = random_matrix(1, f, 23), beta = random_matrix(1, f, 24);
    Matrix stats(n, 2), ggamma(1, f), gbeta(1, f);
    table.add("layer_norm_forward", shape,
              best_seconds(reps, [&] {
                kernels::layer_norm_forward(dev, x.view(), gamma.data(), beta.data(), 1e-5f, z.view(), stats.data());
              }),
              2 * e4 + 8.0 * f + 8.0 * n, 9.0 * static_cast<double>(elems));
    table.add("layer_norm_backward (in place)", shape,
              best_seconds(reps, [&] {
                kernels::layer_norm_backward(dev, x.view(), stats.data(), gamma.data(), z.view(), 0.0f, z.view(),
                                             ggamma.data(), gbeta.data());
              }),
              3 * e4 + 12.0 * f + 8.0 * n, 14.0 * static_cast<double>(elems));
    const RngKey key{1, RngPurpose::dropout, 0, 1};
    table.add("dropout_forward", shape,
              best_seconds(reps, [&] {
                kernels::dropout_forward(dev, key, ids.data(), 0.5f, x.view(), z.view());
              }),
              2 * e4 + 8.0 * n, static_cast<double>(elems));
    table.add("dropout_backward (in place)", shape,
              best_seconds(reps, [&] {
                kernels::dropout_backward(dev, key, ids.data(), 0.5f, z.view(), z.view());
              }),
              2 * e4 + 8.0 * n, static_cast<double>(elems));
    table.add("add_row_vector", shape,
              best_seconds(reps, [&] { kernels::add_row_vector(dev, b.data(), z.view()); }),
              2 * e4 + 4.0 * f, static_cast<double>(elems));
    std::vector<float> colsum(static_cast<std::size_t>(f));
    table.add("column_sum", shape,
              best_seconds(reps, [&] { kernels::column_sum(dev, y.view(), 1.0f, colsum.data()); }),
              e4, static_cast<double>(elems));
    // A halo-sized gather (a quarter of the rows, scattered) and the scatter-add back.
    std::vector<LocalId> rows(static_cast<std::size_t>(n / 4));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<LocalId>(i * 4 + (i % 3));
    Matrix packed(static_cast<std::int64_t>(rows.size()), f);
    const double moved = 4.0 * static_cast<double>(rows.size()) * static_cast<double>(f);
    table.add("gather_rows (n/4 rows)", dims(static_cast<std::int64_t>(rows.size()), f),
              best_seconds(reps, [&] {
                kernels::gather_rows(dev, x.view(), rows.data(), packed.view());
              }),
              2 * moved + 4.0 * static_cast<double>(rows.size()), 0);
    table.add("scatter_add_rows (n/4 rows)", dims(static_cast<std::int64_t>(rows.size()), f),
              best_seconds(reps, [&] {
                kernels::scatter_add_rows(dev, packed.view(), rows.data(), z.view());
              }),
              3 * moved + 4.0 * static_cast<double>(rows.size()), moved / 4);
    // Loss over all rows at the classifier width.
    const Matrix logits = random_matrix(n, classes, 16);
    Matrix glogits(n, classes);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) labels[i] = static_cast<std::int32_t>(i % classes);
    const double lbytes = 8.0 * static_cast<double>(n * classes) + 4.0 * static_cast<double>(n);
    table.add("softmax_cross_entropy", dims(n, classes),
              best_seconds(reps, [&] {
                kernels::softmax_cross_entropy(dev, logits.view(), labels.data(), nullptr, 1e-5f,
                                               glogits.view());
              }),
              lbytes, 5.0 * static_cast<double>(n * classes));
    // Adam over the parameters of a 3 x hidden model: about 2 hidden^2 + hidden x features.
    const std::int64_t params = 3 * f * f;
    Matrix w = random_matrix(1, params, 17), g = random_matrix(1, params, 18), m(1, params),
           v(1, params);
    kernels::AdamParams ap;
    std::int64_t step = 0;
    table.add("adam_step", std::to_string(params) + " params",
              best_seconds(reps, [&] {
                kernels::adam_step(dev, params, w.data(), g.data(), m.data(), v.data(), ap, ++step);
              }),
              28.0 * static_cast<double>(params), 12.0 * static_cast<double>(params));
  }

  // Graph attention at the hidden width, one head (3 x 256 GAT of the epoch table).
  {
    const std::int64_t f = hidden;
    const Transposed at = transpose(a);
    const Matrix z = random_matrix(n, f, 19), gy = random_matrix(n, f, 20);
    const Matrix att_dst = random_matrix(1, f, 21), att_src = random_matrix(1, f, 22);
    Matrix s_dst(n, 1), s_src(n, 1), y(n, f), gz(n, f), gs_dst(n, 1), gs_src(n, 1), ga_dst(1, f),
        ga_src(1, f);
    Matrix alpha(nnz, 1), edge_grad(nnz, 1);  // device memory, as the layers hold them
    const double zf = 4.0 * static_cast<double>(n * f);
    const double shape_bytes = structure;  // row_ptr + col (multiplicities are ones)
    // Both attention vectors' scores of every row (one rank: every row is a destination).
    table.add("head_scores", dims(n, f),
              best_seconds(reps, [&] {
#ifdef HALOGNN_BENCH_BASELINE  // a tree before head_scores: one pass per attention vector
                kernels::head_dot(dev, z.view(), att_dst.data(), 1, s_dst.data());
                kernels::head_dot(dev, z.view(), att_src.data(), 1, s_src.data());
#else
                kernels::head_scores(dev, z.view(), n, att_dst.data(), att_src.data(), 1,
                                     s_dst.data(), s_src.data());
#endif
              }),
              zf + 8.0 * n, 4.0 * static_cast<double>(n * f));
    const double t_gat = best_seconds(reps, [&] {
      kernels::gat_aggregate(dev, pattern, z.view(), s_dst.data(), s_src.data(), 1, 0.2f,
                             alpha.data(), nullptr, y.view());
    });
    table.add("gat_aggregate", "F=" + std::to_string(f), t_gat,
              shape_bytes + 2 * zf + 8.0 * n + 4.0 * static_cast<double>(nnz),
              2.0 * static_cast<double>(nnz * f) + 6.0 * static_cast<double>(nnz));
#ifndef HALOGNN_BENCH_BASELINE
    gather_limit("gat_aggregate", pattern, f, kernels::spmm_feature_block(pattern.cols, f), t_gat,
                 threads, reps, gather_limits);
#endif
    const double t_gat_back = best_seconds(reps, [&] {
      kernels::gat_aggregate_backward(dev, pattern, at.t.view(), at.t_to_a.data(), z.view(),
                                      s_dst.data(), s_src.data(), 1, 0.2f, alpha.data(), nullptr,
                                      gy.view(), edge_grad.data(), gs_dst.data(), gs_src.data(),
                                      gz.view());
    });
    table.add("gat_aggregate_backward", "F=" + std::to_string(f), t_gat_back,
              2 * shape_bytes + 4.0 * static_cast<double>(nnz) + 3 * zf + 16.0 * n +
                  8.0 * static_cast<double>(nnz),
              4.0 * static_cast<double>(nnz * f) + 8.0 * static_cast<double>(nnz));
#ifndef HALOGNN_BENCH_BASELINE
    // One gy row a stored entry, whole (the head's f columns), in the transposed structure's
    // order, for both z's gradient and the score gradients' dot products.
    gather_limit("gat_aggregate_backward", at.t.view(), f, f, t_gat_back, threads, reps,
                 gather_limits);
#endif
    table.add("head_scores_backward", dims(n, f),
              best_seconds(reps, [&] {
#ifdef HALOGNN_BENCH_BASELINE
                kernels::head_dot_backward(dev, z.view(), att_dst.data(), 1, gs_dst.data(),
                                           gz.view(), ga_dst.data());
                kernels::head_dot_backward(dev, z.view(), att_src.data(), 1, gs_src.data(),
                                           gz.view(), ga_src.data());
#else
                kernels::head_scores_backward(dev, z.view(), n, att_dst.data(), att_src.data(), 1,
                                              gs_dst.data(), gs_src.data(), gz.view(),
                                              ga_dst.data(), ga_src.data());
#endif
              }),
              3 * zf + 8.0 * n, 8.0 * static_cast<double>(n * f));
  }
  results["rows"] = table.rows();
  results["gather_limits"] = gather_limits;
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
