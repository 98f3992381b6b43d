#pragma once
/// @file watchdog.hpp
/// The communication watchdog: no rank waits forever. Every blocking communication step (a
/// Request's wait(), a transport's blocking collective, the start-up agreement, MPI_Finalize)
/// opens a BlockingScope for as long as it blocks. A CommWatchdog, once started, runs one
/// background thread that wakes a few times per timeout; when a scope has been open for longer
/// than the timeout, it reports one line naming the rank and the operation (outermost scope
/// first, e.g. "halo exchange of layer 1 forward on rank 0 > mpi exchange ... receives from 1")
/// and takes the job down. A rank that is stopped, deadlocked, or whose peer never posts the
/// matching side therefore ends the whole job within the timeout plus one polling interval.
///
/// The hook is generic: a new transport operation is covered as soon as it is waited on through
/// Request::wait(), and a new blocking collective by opening a BlockingScope around it. The clock
/// measures time blocked in one operation, i.e. how far the slowest peer lags behind, not the
/// length of an epoch. PyTorch c10d's watchdog thread (ProcessGroupNCCL) is the model: a timeout
/// there aborts the communicators and ends the process.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/request.hpp"
#include "core/types.hpp"

namespace halognn {

/// Exit status of a process ended by the watchdog (also the MPI_Abort error code).
inline constexpr int kWatchdogExitCode = 3;

/// Marks the calling thread as blocked in one operation until the scope ends. Costs one atomic
/// load when no watchdog is running. Scopes nest (the watchdog names all open ones).
class BlockingScope {
 public:
  /// @param what   a description with static storage duration ("MPI_Barrier")
  /// @param count  elements involved (printed as "of N elements"), or -1
  explicit BlockingScope(const char* what, long long count = -1) noexcept;
  /// The operation is described lazily, by the watchdog thread and only when it fires, so its
  /// describe() must be safe to call while wait() runs (see Request::Operation::describe).
  explicit BlockingScope(const Request::Operation& op) noexcept;
  BlockingScope(const BlockingScope&) = delete;
  BlockingScope& operator=(const BlockingScope&) = delete;
  ~BlockingScope();

  /// One line: the static text and count, or the operation's describe().
  std::string describe() const;
  std::chrono::steady_clock::time_point since() const { return since_; }

 private:
  void enter() noexcept;
  const char* what_ = nullptr;
  long long count_ = -1;
  const Request::Operation* op_ = nullptr;
  std::chrono::steady_clock::time_point since_{};
  bool registered_ = false;
};

/// The process-wide watchdog. Construct one (idle) before MPI is initialised so that it outlives
/// MPI_Finalize; start() it once the timeout is known. At most one exists at a time.
class CommWatchdog {
 public:
  /// Called once, on the watchdog thread, with the one-line message (no trailing newline).
  using OnTimeout = std::function<void(const std::string& message)>;

  CommWatchdog();
  /// Stops the thread (scopes still open are no longer watched).
  ~CommWatchdog();
  CommWatchdog(const CommWatchdog&) = delete;
  CommWatchdog& operator=(const CommWatchdog&) = delete;

  /// Starts watching. `timeout_s` <= 0 leaves the watchdog disabled.
  /// @param program     prefix of the message ("halognn-train")
  /// @param rank        named in the message
  /// @param on_timeout  what to do; default: abort_job (print, MPI_Abort, exit kWatchdogExitCode)
  /// @param poll_s      how often the thread looks (default: timeout / 10, within [0.01, 1] s)
  void start(double timeout_s, std::string program, Rank rank, OnTimeout on_timeout = {},
             double poll_s = 0);
  /// Stops watching (idempotent); start() may be called again.
  void stop();
  bool running() const { return thread_.joinable(); }
  double timeout_s() const { return timeout_s_; }

  /// The default action: prints the message on stderr, then ends every rank (MPI_Abort on
  /// MPI_COMM_WORLD when MPI is initialised, else std::_Exit), with status kWatchdogExitCode. An
  /// alarm ends the process should MPI_Abort itself hang.
  static void abort_job(const std::string& message);

 private:
  void run();
  std::string message_for(const std::vector<const BlockingScope*>& open, double blocked_s) const;

  double timeout_s_ = 0;
  double poll_s_ = 1;
  std::string program_;
  Rank rank_ = 0;
  OnTimeout on_timeout_;
  std::thread thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
};

}  // namespace halognn
