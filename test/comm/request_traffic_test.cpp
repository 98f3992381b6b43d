// Request semantics and byte accounting, without MPI.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "comm/request.hpp"
#include "comm/traffic.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

/// Completes after `polls` calls to test(); wait() completes at once.
class CountdownOperation final : public Request::Operation {
 public:
  explicit CountdownOperation(int polls, int* waits = nullptr) : polls_(polls), waits_(waits) {}
  bool test() override { return polls_-- <= 1; }
  void wait() override {
    if (waits_) ++*waits_;
  }
  std::string describe() const override { return "countdown"; }

 private:
  int polls_;
  int* waits_;
};

class FailingOperation final : public Request::Operation {
 public:
  bool test() override { throw Error("peer vanished"); }
  void wait() override { throw Error("peer vanished"); }
  std::string describe() const override { return "failing"; }
};

TEST(Request, DefaultConstructedIsNotPendingAndWaitIsANoOp) {
  Request r;
  EXPECT_FALSE(r.pending());
  EXPECT_TRUE(r.test());
  r.wait();
}

TEST(Request, WaitRunsTheCompletionStepExactlyOnce) {
  int completions = 0, waits = 0;
  Request r(std::make_unique<CountdownOperation>(5, &waits), [&] { ++completions; });
  EXPECT_TRUE(r.pending());
  r.wait();
  r.wait();
  EXPECT_FALSE(r.pending());
  EXPECT_TRUE(r.test());
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(completions, 1);
}

TEST(Request, TestPollsUntilCompleteAndThenCompletesOnce) {
  int completions = 0;
  Request r(std::make_unique<CountdownOperation>(3), [&] { ++completions; });
  EXPECT_FALSE(r.test());
  EXPECT_FALSE(r.test());
  EXPECT_EQ(completions, 0);
  EXPECT_TRUE(r.test());
  EXPECT_TRUE(r.test());
  r.wait();
  EXPECT_EQ(completions, 1);
}

// progress() moves the operation on but leaves the completion step to wait() (the overlapped
// backward: the step adds into gradient rows still being computed), and a failure it meets
// propagates like test()'s.
TEST(Request, ProgressAdvancesWithoutCompleting) {
  int completions = 0, waits = 0;
  Request r(std::make_unique<CountdownOperation>(2, &waits), [&] { ++completions; });
  EXPECT_FALSE(r.progress());
  EXPECT_TRUE(r.progress());  // the operation is done ...
  EXPECT_TRUE(r.progress());
  EXPECT_TRUE(r.pending());   // ... but the request is not
  EXPECT_EQ(completions, 0);
  r.wait();
  EXPECT_EQ(completions, 1);
  EXPECT_FALSE(r.pending());
  EXPECT_TRUE(r.progress());
  EXPECT_TRUE(Request().progress());
  Request failing(std::make_unique<FailingOperation>());
  EXPECT_THROW(failing.progress(), Error);
  EXPECT_FALSE(failing.pending());
}

TEST(Request, MovedFromRequestIsNotPending) {
  int completions = 0;
  Request a(std::make_unique<CountdownOperation>(1), [&] { ++completions; });
  Request b = std::move(a);
  EXPECT_FALSE(a.pending());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.pending());
  Request c;
  c = std::move(b);
  EXPECT_FALSE(b.pending());  // NOLINT(bugprone-use-after-move)
  c.wait();
  EXPECT_EQ(completions, 1);
}

TEST(Request, CompletionOnlyRequestCompletesOnWait) {
  int completions = 0;
  Request r(nullptr, [&] { ++completions; });
  EXPECT_TRUE(r.pending());
  EXPECT_TRUE(r.test());
  EXPECT_EQ(completions, 1);
}

TEST(Request, FailureInWaitPropagatesAndLeavesTheRequestDone) {
  int completions = 0;
  Request r(std::make_unique<FailingOperation>(), [&] { ++completions; });
  EXPECT_THROW(r.wait(), Error);
  EXPECT_FALSE(r.pending());
  EXPECT_EQ(completions, 0);
  Request s(std::make_unique<CountdownOperation>(1), [] { throw Error("decode failed"); });
  EXPECT_THROW(s.wait(), Error);
  EXPECT_FALSE(s.pending());
  s.wait();  // the completion step does not run again
}

TEST(RequestDeathTest, DestroyingAPendingRequestTerminates) {
  EXPECT_DEATH({ Request r(std::make_unique<CountdownOperation>(2)); }, "destroyed while pending");
  EXPECT_DEATH(
      {
        Request r(std::make_unique<CountdownOperation>(2));
        r = Request();
      },
      "overwritten");
}

TEST(TrafficCounter, SumsPayloadMetadataAndMessagesPerLayerAndDirection) {
  TrafficCounter t;
  t.add(0, Direction::forward, 1, 3, 100, 8);
  t.add(0, Direction::forward, 2, 2, 50, 0);
  t.add(2, Direction::backward, 1, 4, EncodedSize{30, 2});
  t.add(1, Direction::forward, 1, 0, 0, 0);  // zero-byte messages are never posted, so not counted
  EXPECT_EQ(t.num_layers(), 3);
  EXPECT_EQ(t.at(0, Direction::forward), (TrafficEntry{150, 8, 2, 5}));
  EXPECT_EQ(t.at(1, Direction::forward), TrafficEntry{});
  EXPECT_EQ(t.at(2, Direction::backward), (TrafficEntry{30, 2, 1, 4}));
  EXPECT_EQ(t.at(7, Direction::backward), TrafficEntry{});
  EXPECT_EQ(t.total(Direction::forward), (TrafficEntry{150, 8, 2, 5}));
  EXPECT_EQ(t.total(), (TrafficEntry{180, 10, 3, 9}));
  EXPECT_EQ(t.total().total(), 190u);
  // Per peer: bytes to each link.
  EXPECT_EQ(t.bytes_to(1, 0, Direction::forward), 108u);
  EXPECT_EQ(t.bytes_to(2, 0, Direction::forward), 50u);
  EXPECT_EQ(t.bytes_to(1, 2, Direction::backward), 32u);
  EXPECT_EQ(t.bytes_to(1, 1, Direction::forward), 0u);
  EXPECT_EQ(t.bytes_to(5, 0, Direction::forward), 0u);
  t.reset();
  EXPECT_EQ(t.bytes_to(1, 0, Direction::forward), 0u);
  EXPECT_EQ(t.total(), TrafficEntry{});
  EXPECT_EQ(t.num_layers(), 3);
}

TEST(TrafficCounter, WritesPerLayerJson) {
  TrafficCounter t(2);
  t.add(1, Direction::backward, 3, 5, 40, 4);
  const Json j = t.to_json();
  ASSERT_EQ(j.at("layers").size(), 2u);
  const Json& l1 = j.at("layers")[1];
  EXPECT_EQ(l1.at("layer").get<std::int64_t>(), 1);
  EXPECT_EQ(l1.at("bwd").at("payload").get<std::int64_t>(), 40);
  EXPECT_EQ(l1.at("bwd").at("metadata").get<std::int64_t>(), 4);
  EXPECT_EQ(l1.at("bwd").at("messages").get<std::int64_t>(), 1);
  EXPECT_EQ(l1.at("bwd").at("rows").get<std::int64_t>(), 5);
  EXPECT_EQ(l1.at("fwd").at("total").get<std::int64_t>(), 0);
  EXPECT_EQ(j.at("total").at("total").get<std::int64_t>(), 44);
  EXPECT_EQ(Json::parse(j.dump()).dump(), j.dump());
}

TEST(TrafficCounter, RejectsNegativeLayers) {
  TrafficCounter t;
  EXPECT_THROW(t.add(-1, Direction::forward, 1, 1, 1, 0), Error);
}

}  // namespace
}  // namespace halognn
