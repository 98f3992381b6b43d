#pragma once
/// @file mpi_env.hpp
/// MPI start-up helpers for tools and tests: RAII init/finalize, GNN_CHECK_MPI, and the
/// error-agreement pattern that turns a failure on any rank into an exception on every rank, so
/// that all ranks exit non-zero with one clear line instead of the healthy ranks hanging in the
/// next collective.
#include <exception>
#include <string>
#include <utility>

#include <mpi.h>

#include "core/error.hpp"
#include "core/types.hpp"

namespace halognn {

/// Initialises MPI (unless it already is) and finalises it on destruction (if it initialised it).
/// Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so GNN_CHECK_MPI sees error codes.
class MpiEnv {
 public:
  MpiEnv(int& argc, char**& argv);
  ~MpiEnv();
  MpiEnv(const MpiEnv&) = delete;
  MpiEnv& operator=(const MpiEnv&) = delete;
  Rank rank() const { return rank_; }
  Rank size() const { return size_; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }

 private:
  bool owns_ = false;
  Rank rank_ = 0;
  Rank size_ = 1;
};

/// The text MPI gives for an error code.
std::string mpi_error_string(int code);

/// Thrown on the ranks that did not fail themselves when another rank failed (see
/// agree_or_throw); `origin()` is the failing rank.
class RemoteError : public Error {
 public:
  RemoteError(Rank origin, const std::string& what) : Error(what), origin_(origin) {}
  Rank origin() const { return origin_; }

 private:
  Rank origin_;
};

/// Collective over `comm`: every rank passes its own failure (or nullptr). If no rank failed,
/// returns. Otherwise every rank throws: a failing rank rethrows its own exception, and the
/// others throw RemoteError("rank R failed: <its message>") for the lowest failing rank R, with
/// the message flattened to one line.
void agree_or_throw(MPI_Comm comm, const std::exception_ptr& local);

/// Runs `f` and then agree_or_throw: `collective_try(comm, [&] { load(...); })`.
template <typename F>
void collective_try(MPI_Comm comm, F&& f) {
  std::exception_ptr failure;
  try {
    std::forward<F>(f)();
  } catch (...) {
    failure = std::current_exception();
  }
  agree_or_throw(comm, failure);
}

/// A start-up failure that every rank of MPI_COMM_WORLD knows about (see startup_step).
struct StartupFailure {
  std::string what;
};

/// Runs one fallible start-up step of a tool on every rank; if it failed on any rank, every rank
/// throws StartupFailure (rank 0 holds its own message or the lowest failing rank's), so all ranks
/// exit non-zero and none is left waiting in a later collective.
template <typename F>
void startup_step(F&& f) {
  try {
    collective_try(MPI_COMM_WORLD, std::forward<F>(f));
  } catch (const std::exception& e) {
    throw StartupFailure{e.what()};
  }
}

}  // namespace halognn

/// Throws halognn::MpiError naming the call, MPI's error string, file and line when an MPI call
/// does not return MPI_SUCCESS (the communicator must use MPI_ERRORS_RETURN to get here).
#define GNN_CHECK_MPI(call)                                                              \
  do {                                                                                   \
    const int gnn_mpi_rc_ = (call);                                                      \
    if (gnn_mpi_rc_ != MPI_SUCCESS)                                                      \
      throw ::halognn::MpiError(::halognn::detail::concat(                               \
          __FILE__, ":", __LINE__, ": ", #call, " failed: ",                             \
          ::halognn::mpi_error_string(gnn_mpi_rc_)));                                    \
  } while (0)
