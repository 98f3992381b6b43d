#pragma once
/// @file scratch.hpp
/// Grow-only, 64-byte aligned scratch memory for the CPU kernels (packed GEMM panels, per-thread
/// partial sums). Kernels run every layer of every epoch; allocating their scratch per call
/// would map and fault fresh pages each time. Each buffer belongs to one OS thread (OpenMP
/// threads included) and is reused by the next call on that thread; contents are not kept.
#include <cstddef>

#include "core/host_alloc.hpp"

namespace halognn::kernels::scratch {

/// One grow-only aligned block.
class Block {
 public:
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() { host_free(p_); }
  /// At least `bytes` bytes, 64-byte aligned (previous contents are lost on growth).
  void* get(std::size_t bytes) {
    if (bytes > size_) {
      host_free(p_);
      p_ = nullptr;
      size_ = 0;
      p_ = host_alloc(bytes);
      size_ = bytes;
    }
    return p_;
  }

 private:
  void* p_ = nullptr;
  std::size_t size_ = 0;
};

/// Scratch of the calling thread meant to be shared with its OpenMP team (e.g. a packed operand
/// every thread reads). Distinct from thread_floats' block.
inline float* shared_floats(std::size_t n) {
  thread_local Block block;
  return static_cast<float*>(block.get(n * sizeof(float)));
}

/// A second team-shared scratch of the calling thread, for an operand that lives while
/// shared_floats is in use (the GAT kernels' per-entry coefficients, read by an SpMM that copies
/// x's columns into shared_floats).
inline float* shared_floats_2(std::size_t n) {
  thread_local Block block;
  return static_cast<float*>(block.get(n * sizeof(float)));
}

/// Private scratch of the calling thread: n1 + n2 floats, the second part starting 64-byte
/// aligned at the returned pointer + round_up(n1, 16).
inline float* thread_floats(std::size_t n1, std::size_t n2 = 0) {
  thread_local Block block;
  return static_cast<float*>(block.get(((n1 + 15) / 16 * 16 + n2) * sizeof(float)));
}

/// Private scratch of the calling thread for doubles (per-thread partial sums).
inline double* thread_doubles(std::size_t n) {
  thread_local Block block;
  return static_cast<double*>(block.get(n * sizeof(double)));
}

}  // namespace halognn::kernels::scratch
