#include "comm/request.hpp"

#include <cstdio>
#include <exception>
#include <utility>

#include "comm/watchdog.hpp"

namespace halognn {

Request::Request(std::unique_ptr<Operation> op, std::function<void()> completion)
    : op_(std::move(op)), completion_(std::move(completion)), pending_(true) {}

Request::Request(Request&& other) noexcept
    : op_(std::move(other.op_)), completion_(std::move(other.completion_)),
      pending_(std::exchange(other.pending_, false)) {}

Request& Request::operator=(Request&& other) noexcept {
  if (this == &other) return *this;
  if (pending_) {
    // Overwriting a pending request would drop it exactly like destroying it.
    std::fprintf(stderr, "halognn: a pending request (%s) was overwritten; terminating\n",
                 op_ ? op_->describe().c_str() : "completion only");
    std::terminate();
  }
  op_ = std::move(other.op_);
  completion_ = std::move(other.completion_);
  pending_ = std::exchange(other.pending_, false);
  return *this;
}

Request::~Request() {
  if (!pending_) return;
  // We cannot throw from a destructor, and neither waiting (a failed peer would hang us) nor
  // walking away (MPI would write into freed memory) is safe.
  std::fprintf(stderr,
               "halognn: a request (%s) was destroyed while pending%s; call wait() before "
               "dropping it. Terminating.\n",
               op_ ? op_->describe().c_str() : "completion only",
               std::uncaught_exceptions() > 0 ? " during exception unwinding" : "");
  std::terminate();
}

void Request::finish() {
  // Not pending any more whatever happens next: the completion step runs at most once, even if
  // it throws.
  pending_ = false;
  auto completion = std::move(completion_);
  completion_ = nullptr;
  op_.reset();
  if (completion) completion();
}

void Request::wait() {
  if (!pending_) return;
  if (op_) {
    try {
      BlockingScope blocked(*op_);
      op_->wait();
    } catch (...) {
      pending_ = false;
      completion_ = nullptr;
      op_.reset();
      throw;
    }
  }
  finish();
}

bool Request::progress() {
  if (!pending_ || !op_) return true;
  try {
    return op_->test();
  } catch (...) {
    pending_ = false;
    completion_ = nullptr;
    op_.reset();
    throw;
  }
}

bool Request::test() {
  if (!pending_) return true;
  if (!progress()) return false;
  finish();
  return true;
}

}  // namespace halognn
