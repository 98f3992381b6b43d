#include "core/kernels/cpu_isa.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "core/error.hpp"

namespace halognn::kernels {
namespace {

CpuIsa detect() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // libgcc also checks that the OS saves the wider registers (XCR0), so a CPU whose OS does not
  // enable AVX-512 state reports no avx512f here.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return CpuIsa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::avx2;
#endif
  return CpuIsa::sse2;
}

std::atomic<int> g_limit{static_cast<int>(CpuIsa::avx512)};
std::atomic<int> g_numerics{static_cast<int>(CpuNumerics::fast)};
std::atomic<double> g_spmm_budget{0.0};  // 0: the rule of spmm_cache_budget()

}  // namespace

const char* to_string(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::sse2: return "sse2";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

CpuIsa parse_cpu_isa(const std::string& s) {
  if (s == "sse2") return CpuIsa::sse2;
  if (s == "avx2") return CpuIsa::avx2;
  if (s == "avx512") return CpuIsa::avx512;
  throw ConfigError("unknown instruction set '" + s + "' (choices: sse2, avx2, avx512)");
}

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa cpu_isa() {
  const int limit = g_limit.load(std::memory_order_relaxed);
  const int have = static_cast<int>(detected_cpu_isa());
  return static_cast<CpuIsa>(limit < have ? limit : have);
}

void set_cpu_isa_limit(CpuIsa limit) {
  g_limit.store(static_cast<int>(limit), std::memory_order_relaxed);
}

const char* to_string(CpuNumerics n) { return n == CpuNumerics::fast ? "fast" : "portable"; }

CpuNumerics parse_cpu_numerics(const std::string& s) {
  if (s == "fast") return CpuNumerics::fast;
  if (s == "portable") return CpuNumerics::portable;
  throw ConfigError("--numerics must be fast or portable, got '" + s + "'");
}

CpuNumerics cpu_numerics() {
  return static_cast<CpuNumerics>(g_numerics.load(std::memory_order_relaxed));
}

void set_cpu_numerics(CpuNumerics n) {
  g_numerics.store(static_cast<int>(n), std::memory_order_relaxed);
}

double detected_l3_bytes() {
#if defined(_SC_LEVEL3_CACHE_SIZE)
  static const double bytes = std::max(0.0, static_cast<double>(sysconf(_SC_LEVEL3_CACHE_SIZE)));
  return bytes;
#else
  return 0.0;
#endif
}

double spmm_cache_budget() {
  const double set = g_spmm_budget.load(std::memory_order_relaxed);
  if (set > 0.0) return set;
  // 64 MiB measured best on a host reporting 300 MiB of L3, 16 MiB (the floor) on an earlier one
  // (docs/benchmarks.md, "The SpMM's cache budget from the L3 size").
  constexpr double mib = 1 << 20;
  return std::clamp(detected_l3_bytes() / 4.0, 16.0 * mib, 64.0 * mib);
}

std::int64_t spmm_feature_block(std::int64_t rows_touched, std::int64_t f) {
  const double budget = spmm_cache_budget();
  const double row_bytes = 4.0 * static_cast<double>(std::max<std::int64_t>(rows_touched, 1));
  if (row_bytes * static_cast<double>(f) <= budget) return f;
  const auto fit = static_cast<std::int64_t>(budget / row_bytes);
  // A pass over the matrix gathers a row's columns in register groups of up to 128 floats (8
  // AVX-512 vectors; 16, 32 and 64 for the smaller groups), each group a pass over the entries
  // of its own: a block of 160 columns is two such passes, one of them gathering a quarter of the
  // bytes an entry. So a block is a whole number of the widest groups that fit, and blocks of 128
  // columns serve f = 256 in two full passes where 160 + 96 took four.
  std::int64_t group = 128;
  while (group > 16 && group > fit) group /= 2;
  return std::min(f, std::max<std::int64_t>(group, fit / group * group));
}

void set_spmm_cache_budget(double bytes) {
  g_spmm_budget.store(bytes > 0.0 ? bytes : 0.0, std::memory_order_relaxed);
}

}  // namespace halognn::kernels
