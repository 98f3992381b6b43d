#pragma once
/// @file request.hpp
/// A move-only handle of one asynchronous operation (a halo exchange, a transport exchange).
/// `wait()` blocks until the operation is complete and then runs its completion step (decoding
/// received rows, for example) exactly once; `test()` polls without blocking and runs the
/// completion step when it finds the operation complete. Destroying a request that is still
/// pending prints why and calls std::terminate: a pending receive writes into memory the caller
/// may already have freed, and a pending send leaves a peer blocked, so there is no safe silent
/// choice (c10d's AsyncWork and Ginkgo's mpi::request do the same).
#include <functional>
#include <memory>
#include <string>

namespace halognn {

class Request {
 public:
  /// The asynchronous part of a request, implemented by each transport (and by wrappers).
  class Operation {
   public:
    virtual ~Operation() = default;
    /// True when the operation has completed; progresses it. May be called again after true.
    virtual bool test() = 0;
    /// Blocks until the operation has completed. May be called again after completion.
    virtual void wait() = 0;
    /// One line naming the operation (and its peers), printed when a pending request is
    /// destroyed and by the communication watchdog (comm/watchdog.hpp) when wait() blocks too
    /// long. The watchdog calls it from its own thread while wait() runs, so it must only read
    /// what the constructor set.
    virtual std::string describe() const = 0;
  };

  /// A request that is not pending (nothing to wait for).
  Request() = default;
  /// @param op          the asynchronous part (nullptr: complete already)
  /// @param completion  run exactly once, after `op` has completed, by wait() or a successful test()
  explicit Request(std::unique_ptr<Operation> op, std::function<void()> completion = {});
  Request(Request&& other) noexcept;
  /// Overwriting a pending request terminates, like destroying it.
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  /// Terminates the process (after printing the operation's description) when still pending.
  ~Request();

  /// Blocks until complete and runs the completion step once. A no-op when not pending. If the
  /// operation or the completion step throws, the request is no longer pending and the exception
  /// propagates. The blocking part is watched by the communication watchdog, if one runs.
  void wait();
  /// Polls: returns true (after running the completion step) when complete, false otherwise.
  /// Always true when not pending.
  bool test();
  /// Progresses the operation without running the completion step (left to wait()): for a caller
  /// that must not see the completion's writes yet (a backward exchange adds into gradient rows
  /// the caller is still computing). Returns whether the operation has completed; always true
  /// when not pending.
  bool progress();
  /// True until wait() or test() has completed the operation.
  bool pending() const noexcept { return pending_; }

 private:
  void finish();
  std::unique_ptr<Operation> op_;
  std::function<void()> completion_;
  bool pending_ = false;
};

}  // namespace halognn
