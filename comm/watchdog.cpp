#include "comm/watchdog.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace halognn {
namespace {

using Clock = std::chrono::steady_clock;

/// The scopes open in this process (any thread), guarded by `mutex`. The watchdog thread
/// describes them with the mutex held, so a scope cannot end (and its operation be destroyed)
/// while it is being described.
struct Registry {
  std::mutex mutex;
  std::vector<const BlockingScope*> open;
};

Registry& registry() {
  static Registry r;
  return r;
}

/// True while a watchdog is running; scopes register only then.
std::atomic<bool> g_watching{false};
/// The one CommWatchdog that exists (started or not).
std::atomic<CommWatchdog*> g_instance{nullptr};

}  // namespace

BlockingScope::BlockingScope(const char* what, long long count) noexcept
    : what_(what), count_(count) {
  enter();
}

BlockingScope::BlockingScope(const Request::Operation& op) noexcept : op_(&op) { enter(); }

void BlockingScope::enter() noexcept {
  if (!g_watching.load(std::memory_order_acquire)) return;
  since_ = Clock::now();
  Registry& r = registry();
  try {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.open.push_back(this);
    registered_ = true;
  } catch (...) {
    // Out of memory for one pointer: this wait goes unwatched rather than failing.
  }
}

BlockingScope::~BlockingScope() {
  if (!registered_) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = std::find(r.open.begin(), r.open.end(), this);
  if (it != r.open.end()) r.open.erase(it);
}

std::string BlockingScope::describe() const {
  if (op_) return op_->describe();
  std::string s = what_ ? what_ : "a blocking operation";
  if (count_ >= 0) s += " of " + std::to_string(count_) + " elements";
  return s;
}

CommWatchdog::CommWatchdog() {
  CommWatchdog* expected = nullptr;
  GNN_ASSERT(g_instance.compare_exchange_strong(expected, this),
             "only one CommWatchdog may exist at a time");
}

CommWatchdog::~CommWatchdog() {
  stop();
  g_instance.store(nullptr);
}

void CommWatchdog::start(double timeout_s, std::string program, Rank rank, OnTimeout on_timeout,
                         double poll_s) {
  stop();
  timeout_s_ = timeout_s;
  if (!(timeout_s > 0)) return;  // disabled (also NaN)
  program_ = std::move(program);
  rank_ = rank;
  on_timeout_ = on_timeout ? std::move(on_timeout) : OnTimeout(&CommWatchdog::abort_job);
  poll_s_ = poll_s > 0 ? poll_s : std::clamp(timeout_s / 10, 0.01, 1.0);
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_requested_ = false;
  }
  g_watching.store(true, std::memory_order_release);
  thread_ = std::thread([this] { run(); });
}

void CommWatchdog::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_requested_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
  g_watching.store(false, std::memory_order_release);
}

std::string CommWatchdog::message_for(const std::vector<const BlockingScope*>& open,
                                      double blocked_s) const {
  std::string what;
  for (const BlockingScope* s : open) {
    if (!what.empty()) what += " > ";
    what += s->describe();
  }
  char timing[160];
  std::snprintf(timing, sizeof timing, " has been blocked for %.1f s (communication timeout %g s, "
                "--comm-timeout)", blocked_s, timeout_s_);
  std::string msg = program_ + ": rank " + std::to_string(rank_) + ": " + what + timing +
                    ": a rank is stopped, deadlocked or never posted its side; aborting every rank";
  std::replace_if(msg.begin(), msg.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return msg;
}

void CommWatchdog::run() {
  const auto timeout = std::chrono::duration<double>(timeout_s_);
  const auto poll = std::chrono::duration<double>(poll_s_);
  std::unique_lock<std::mutex> stop_lock(stop_mutex_);
  while (!stop_cv_.wait_for(stop_lock, poll, [this] { return stop_requested_; })) {
    std::string message;
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      if (r.open.empty()) continue;
      std::vector<const BlockingScope*> open = r.open;
      std::stable_sort(open.begin(), open.end(), [](const BlockingScope* a, const BlockingScope* b) {
        return a->since() < b->since();
      });
      const auto blocked = Clock::now() - open.front()->since();
      if (blocked < timeout) continue;
      message = message_for(open, std::chrono::duration<double>(blocked).count());
    }
    // Fire once; the default action does not return.
    stop_lock.unlock();
    on_timeout_(message);
    return;
  }
}

void CommWatchdog::abort_job(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  // MPI_Abort is called from this thread while the stalled one sits inside MPI; should the
  // library not cope, SIGALRM (default action: terminate) still ends the process.
  ::alarm(10);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, kWatchdogExitCode);
  std::_Exit(kWatchdogExitCode);
}

}  // namespace halognn
