#pragma once
/// @file error.hpp
/// One exception hierarchy for the whole project. Every error carries a one-line message; input
/// errors name the offending file. Tools catch `Error` at `main`, print `what()` on one line and
/// exit non-zero (on every MPI rank).
#include <sstream>
#include <stdexcept>
#include <string>

namespace halognn {

/// Base of every error halognn throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A file (dataset, partition, config) is missing, malformed or inconsistent.
class InputError : public Error {
 public:
  /// @param path  the file (or directory) at fault
  /// @param what  the problem, without the path
  InputError(const std::string& path, const std::string& what) : Error(path + ": " + what) {}
};

/// A user-supplied option is invalid.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// An MPI call returned an error code.
class MpiError : public Error {
 public:
  using Error::Error;
};

/// A CUDA / cuSPARSE / cuBLAS / NCCL call failed.
class CudaError : public Error {
 public:
  using Error::Error;
};

/// The requested backend or feature was not compiled into this build.
class NotCompiled : public Error {
 public:
  explicit NotCompiled(const std::string& what)
      : Error(what + " is not available: this build of halognn has no CUDA backend "
                     "(reconfigure with -DGNN_CUDA=ON on a machine with nvcc and NCCL)") {}
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace halognn

/// Throws halognn::Error with file:line when `cond` is false (an internal invariant).
#define GNN_ASSERT(cond, ...)                                                         \
  do {                                                                                \
    if (!(cond))                                                                      \
      throw ::halognn::Error(::halognn::detail::concat(__FILE__, ":", __LINE__,      \
                                                       ": assertion `", #cond,       \
                                                       "` failed: ", __VA_ARGS__));  \
  } while (0)

/// Throws halognn::InputError(path, message) when `cond` is false.
#define GNN_CHECK_INPUT(cond, path, ...)                                              \
  do {                                                                                \
    if (!(cond)) throw ::halognn::InputError((path), ::halognn::detail::concat(__VA_ARGS__)); \
  } while (0)

/// Throws halognn::ConfigError when `cond` is false.
#define GNN_CHECK_CONFIG(cond, ...)                                                   \
  do {                                                                                \
    if (!(cond)) throw ::halognn::ConfigError(::halognn::detail::concat(__VA_ARGS__)); \
  } while (0)
