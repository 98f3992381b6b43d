// The communication watchdog without MPI: scopes held past the timeout fire it once with the
// rank and every open scope named; short scopes, a stopped watchdog and timeout 0 never fire it;
// Request::wait() is watched.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/request.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

using namespace std::chrono_literals;

/// Records what the watchdog reports instead of aborting.
struct Recorder {
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

/// wait() blocks for a while (a slow peer); test() is never complete.
class SlowOperation final : public Request::Operation {
 public:
  explicit SlowOperation(std::chrono::milliseconds d) : d_(d) {}
  bool test() override { return false; }
  void wait() override { std::this_thread::sleep_for(d_); }
  std::string describe() const override { return "slow exchange with rank 3"; }

 private:
  std::chrono::milliseconds d_;
};

TEST(CommWatchdog, AScopeHeldPastTheTimeoutFiresOnceNamingRankAndOperations) {
  Recorder rec;
  CommWatchdog dog;
  dog.start(0.1, "halognn-test", 5, rec.callback(), 0.01);
  {
    BlockingScope outer("outer step");
    BlockingScope inner("all-reduce (sum, double)", 4);
    std::this_thread::sleep_for(400ms);
  }
  dog.stop();
  const std::vector<std::string> m = rec.get();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].rfind("halognn-test: rank 5: outer step > all-reduce (sum, double) of 4 elements "
                       "has been blocked for ", 0), 0u) << m[0];
  EXPECT_NE(m[0].find("--comm-timeout"), std::string::npos) << m[0];
  EXPECT_EQ(m[0].find('\n'), std::string::npos);
}

TEST(CommWatchdog, ShortScopesNeverFire) {
  Recorder rec;
  CommWatchdog dog;
  dog.start(0.3, "halognn-test", 0, rec.callback(), 0.01);
  for (int i = 0; i < 20; ++i) {
    BlockingScope s("barrier");
    std::this_thread::sleep_for(20ms);  // 400 ms in all, but no single wait near 300 ms
  }
  dog.stop();
  EXPECT_TRUE(rec.get().empty());
}

TEST(CommWatchdog, ZeroTimeoutDisablesIt) {
  Recorder rec;
  CommWatchdog dog;
  dog.start(0, "halognn-test", 0, rec.callback(), 0.01);
  EXPECT_FALSE(dog.running());
  {
    BlockingScope s("barrier");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(rec.get().empty());
}

TEST(CommWatchdog, RequestWaitIsWatchedAndDescribedByItsOperation) {
  Recorder rec;
  CommWatchdog dog;
  dog.start(0.1, "halognn-test", 2, rec.callback(), 0.01);
  bool completed = false;
  Request r(std::make_unique<SlowOperation>(400ms), [&] { completed = true; });
  r.wait();
  dog.stop();
  EXPECT_TRUE(completed);
  const std::vector<std::string> m = rec.get();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].find("rank 2: slow exchange with rank 3 has been blocked"), std::string::npos)
      << m[0];
}

TEST(CommWatchdog, OnlyOneExistsAtATime) {
  CommWatchdog dog;
  EXPECT_THROW({ CommWatchdog second; }, Error);
}

}  // namespace
}  // namespace halognn
