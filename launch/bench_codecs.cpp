// halognn-bench-codecs: encode and decode throughput of every codec on the CPU.
//
//   halognn-bench-codecs [--rows 100000] [--widths 16,128,256] [--codecs fp32,q1,...] [--reps 5]
//                        [--threads N] [--triad-mib 256] [--isa sse2|avx2|avx512]
//
// Throughput is bytes of float32 input per second (rows * width * 4 / time), the median of
// --reps timed runs after one warm-up run. enc+dec is the input rate of one encode plus one decode.
// The limit they are compared with, the STREAM triad bandwidth on the same number of threads, is
// measured first (launch/bench_limits.hpp); "/triad" columns give encode and decode as fractions.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "compress/codec_plan.hpp"
#include "core/error.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/rng.hpp"
#include "launch/bench_limits.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string tok; std::getline(ss, tok, ',');)
    if (!tok.empty()) out.push_back(tok);
  return out;
}

template <typename F>
double median_seconds(int reps, F&& f) {
  f();  // warm-up: page faults, thread start
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int run(int argc, char** argv) {
  std::int64_t rows = 100000;
  std::string widths_arg = "16,128,256", codecs_arg;
  int reps = 5;
  int threads = 0;
  std::int64_t triad_mib = 256;
  std::string isa;
  po::options_description desc("halognn-bench-codecs [options]");
  desc.add_options()("help,h", "show this help")
      ("rows", po::value(&rows)->default_value(rows), "rows per block")
      ("widths", po::value(&widths_arg)->default_value(widths_arg), "comma-separated row widths")
      ("codecs", po::value(&codecs_arg), "comma-separated codec names (default: all)")
      ("reps", po::value(&reps)->default_value(reps), "timed runs per measurement (median)")
      ("threads", po::value(&threads)->default_value(threads),
       "OpenMP threads (0: the OpenMP default; 1 gives the per-core rate)")
      ("triad-mib", po::value(&triad_mib)->default_value(triad_mib),
       "MiB per array of the triad measured first (the memory bandwidth compared with)")
      ("isa", po::value(&isa), "cap the codecs' instruction set: sse2 | avx2 | avx512");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  GNN_CHECK_CONFIG(rows > 0 && reps > 0, "--rows and --reps must be positive");
  GNN_CHECK_CONFIG(threads >= 0, "--threads must not be negative");
  GNN_CHECK_CONFIG(triad_mib > 0, "--triad-mib must be positive");
  if (threads > 0) omp_set_num_threads(threads);
  if (!isa.empty()) kernels::set_cpu_isa_limit(kernels::parse_cpu_isa(isa));
  const std::vector<std::string> codecs = codecs_arg.empty() ? codec_names() : split_list(codecs_arg);
  std::vector<std::int64_t> widths;
  for (const auto& w : split_list(widths_arg)) widths.push_back(std::stoll(w));

  const double triad = bench::triad_gbs(triad_mib * (1 << 20) / 4, omp_get_max_threads(), reps);
  std::printf("# %lld rows, %d OpenMP threads, %s loops, median of %d runs; GB/s of float32 input\n",
              static_cast<long long>(rows), omp_get_max_threads(), kernels::to_string(kernels::cpu_isa()),
              reps);
  std::printf("# triad: %.1f GB/s on %d threads (%lld MiB per array)\n", triad, omp_get_max_threads(),
              static_cast<long long>(triad_mib));
  std::printf("%-12s %6s %12s %8s %10s %10s %10s %8s %8s\n", "codec", "width", "bytes/row", "vs fp32",
              "enc GB/s", "dec GB/s", "enc+dec", "enc/tri", "dec/tri");
  std::vector<GlobalId> ids(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) ids[i] = 3 * i + 1;  // non-contiguous global ids
  for (const std::int64_t width : widths) {
    Matrix x(rows, width), y(rows, width);
    const CounterRng rng({1, RngPurpose::test, 0, 0});
    auto h = x.host();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < width; ++j)
        h[i * width + j] = 2.0f * rng.uniform(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j)) - 1.0f;
    const double input_gb = static_cast<double>(rows * width) * 4 / 1e9;
    for (const auto& name : codecs) {
      const auto codec = make_codec(name);
      const auto size = codec->encoded_size(rows, width);
      std::vector<std::byte> wire(size.total());
      CodecContext ctx;
      ctx.seed = 1;
      ctx.row_ids = ids.data();
      const double t_enc = median_seconds(reps, [&] {
        codec->encode(*cpu_device(), x.view(), ctx, wire);
        ++ctx.epoch;
      });
      const double t_dec = median_seconds(reps, [&] { codec->decode(*cpu_device(), wire, ctx, y.view()); });
      std::printf("%-12s %6lld %12.2f %8.4f %10.2f %10.2f %10.2f %8.2f %8.2f\n", name.c_str(),
                  static_cast<long long>(width), static_cast<double>(size.total()) / rows,
                  static_cast<double>(size.total()) / (static_cast<double>(rows * width) * 4),
                  input_gb / t_enc, input_gb / t_dec, input_gb / (t_enc + t_dec),
                  input_gb / t_enc / triad, input_gb / t_dec / triad);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "halognn-bench-codecs: " << e.what() << "\n";
    return 1;
  }
}
