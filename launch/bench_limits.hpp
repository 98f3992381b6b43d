#pragma once
/// @file bench_limits.hpp
/// What the benchmark programs share: best-of-n timing, seeded fill, and the STREAM triad that
/// measures the memory bandwidth the kernels and codecs are compared with.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"

namespace halognn::bench {

/// The fastest of `reps` runs of f, after one warm-up run (page faults, thread start-up).
template <typename F>
double best_seconds(int reps, F&& f) {
  f();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

/// p[i] = lo + a uniform draw in [0, 1) of the given stream (seeded, the same on every run).
inline void fill_random(float* p, std::int64_t n, std::uint64_t stream, float lo = -0.5f) {
  const CounterRng rng({3, RngPurpose::test, stream, 0});
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) p[i] = rng.uniform(static_cast<std::uint64_t>(i), 0) + lo;
}

/// STREAM triad a = b + s c over three arrays of n floats on `threads` threads, in GB/s (12 bytes
/// per element), the best of `reps` runs.
inline double triad_gbs(std::int64_t n, int threads, int reps) {
  std::vector<float> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size());
  fill_random(b.data(), n, 1);
  fill_random(c.data(), n, 2);
  float* pa = a.data();
  const float* pb = b.data();
  const float* pc = c.data();
  const float s = 3.0f;
  const double t = best_seconds(reps, [&] {
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (std::int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
  });
  return 12.0 * static_cast<double>(n) / t / 1e9;
}

}  // namespace halognn::bench
