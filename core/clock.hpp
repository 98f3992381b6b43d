#pragma once
/// @file clock.hpp
/// The wall clock the tools and the trainer time their steps with.
#include <chrono>

namespace halognn {

using Clock = std::chrono::steady_clock;

/// Seconds elapsed since `t0`.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace halognn
