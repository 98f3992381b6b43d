#pragma once
/// @file watchdog_recorder.hpp
/// A CommWatchdog callback for tests: records what the watchdog reports instead of aborting.
#include <mutex>
#include <string>
#include <vector>

#include "comm/watchdog.hpp"

namespace halognn::testing {

struct WatchdogRecorder {
  std::mutex mutex;
  std::vector<std::string> messages;
  CommWatchdog::OnTimeout callback() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.push_back(m);
    };
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages;
  }
};

}  // namespace halognn::testing
