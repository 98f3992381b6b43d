// Progress of a long step on a terminal: one line on stderr, rewritten in place while the step
// runs and erased when it ends; nothing at all when stderr is not a terminal (logs, CI).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace halognn {

class TerminalProgress {
 public:
  /// @param what  names the step ("sparsifying data/physics")
  explicit TerminalProgress(std::string what)
      : what_(std::move(what)), on_(::isatty(STDERR_FILENO) == 1) {}
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;
  ~TerminalProgress() { done(); }

  /// `done` of `total` rows; redraws at most four times a second.
  void update(std::int64_t done, std::int64_t total) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\r%s: %lld / %lld rows (%.0f%%)\033[K", what_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total),
                 total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
    std::fflush(stderr);
  }
  /// Erases the line (the step's report follows on stdout).
  void done() {
    if (!shown_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  std::string what_;
  bool on_ = false, shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace halognn
