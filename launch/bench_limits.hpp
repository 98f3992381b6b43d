#pragma once
/// @file bench_limits.hpp
/// What the benchmark programs share: best-of-n timing, seeded fill, the STREAM triad that
/// measures the memory bandwidth the kernels and codecs are compared with, and the row reads
/// the SpMM's gathers are compared with.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/host_alloc.hpp"
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

/// The limit of a gather: rows index[0..reads) of a block of `rows` x `width` floats (width a
/// multiple of 16: whole 64-byte lines when the rows are), read in that order on `threads`
/// threads and nothing else computed or written; GB/s of rows read, the best of `reps` runs.
/// Given an SpMM's column indices it fetches exactly the lines that SpMM gathers, in its order
/// (what the graph's order leaves in cache stays there), so no SpMM that gathers x's rows runs
/// faster. One float of each line is added up, four rows at a time into four sums (no addition
/// waits on another), the rows kRowReadAhead reads ahead requested as the SpMM requests them:
/// what is measured is how fast the lines arrive, with as many reads in flight as a core holds.
constexpr std::int64_t kRowReadAhead = 32;
template <typename Index>
double row_read_gbs(const Index* index, std::int64_t reads, std::int64_t rows, std::int64_t width,
                    int threads, int reps) {
  // On huge pages where the kernels' arrays are (core/host_alloc.hpp): the TLB is not measured.
  const auto bytes = static_cast<std::size_t>(rows * width) * sizeof(float);
  const std::unique_ptr<float, void (*)(void*)> block(static_cast<float*>(host_alloc(bytes)),
                                                      host_free);
  fill_random(block.get(), rows * width, 5);
  const float* b = block.get();
  volatile float sink = 0;  // keeps the sums, and so the reads, from being optimised away
  const double t = best_seconds(reps, [&] {
    float total = 0;
    // Chunks of reads taken in turn, as the SpMM takes its row chunks: a thread slowed by the
    // machine's other work does not hold the others up.
    constexpr std::int64_t kChunk = 1 << 14;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+ : total)
    for (std::int64_t c = 0; c < (reads + kChunk - 1) / kChunk; ++c) {
      const std::int64_t lo = c * kChunk, hi = std::min(reads, lo + kChunk);
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      const auto row = [&](std::int64_t i) {
        return b + static_cast<std::int64_t>(index[i]) * width;
      };
      for (std::int64_t i = lo; i + 4 <= hi; i += 4) {
        if (i + kRowReadAhead + 4 <= hi) {
          for (int q = 0; q < 4; ++q)
            for (std::int64_t j = 0; j < width; j += 16)
              __builtin_prefetch(row(i + kRowReadAhead + q) + j, 0, 3);
        }
        const float *r0 = row(i), *r1 = row(i + 1), *r2 = row(i + 2), *r3 = row(i + 3);
        for (std::int64_t j = 0; j < width; j += 16) {
          s0 += r0[j];
          s1 += r1[j];
          s2 += r2[j];
          s3 += r3[j];
        }
      }
      for (std::int64_t i = lo + (hi - lo) / 4 * 4; i < hi; ++i)
        for (std::int64_t j = 0; j < width; j += 16) s0 += row(i)[j];
      total += (s0 + s1) + (s2 + s3);
    }
    sink = total;
  });
  return 4.0 * static_cast<double>(reads * width) / t / 1e9;
}

}  // namespace halognn::bench
