// The watchdog over real MPI: a rank whose peer posts its side late (here 1 s, standing in for a
// peer that never posts) is reported with the operation and the peer it waits for, both for an
// exchange (through Request::wait) and for a blocking collective of the MPI transport.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport.hpp"
#include "comm/watchdog.hpp"

namespace halognn {
namespace {

using namespace std::chrono_literals;

struct Recorder {
  std::mutex mutex;
  std::vector<std::string> messages;
  CommWatchdog::OnTimeout callback() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.push_back(m);
    };
  }
};

TEST(WatchdogMpi, AnExchangeWhosePeerDoesNotPostIsReportedWithThePeer) {
  auto t = make_mpi_transport(MPI_COMM_WORLD);
  const Rank rank = t->rank(), last = t->size() - 1;
  Recorder rec;
  {
    CommWatchdog dog;
    if (rank == 0) dog.start(0.3, "halognn-test", rank, rec.callback(), 0.02);
    std::vector<std::byte> buf(64, std::byte{7});
    if (rank == 0) {
      const PeerBytesMut recv{last, buf};
      t->exchange({}, std::span<const PeerBytesMut>(&recv, 1), 9).wait();
    } else if (rank == last) {
      std::this_thread::sleep_for(1s);
      const PeerBytes send{0, buf};
      t->exchange(std::span<const PeerBytes>(&send, 1), {}, 9).wait();
    }
  }
  t->barrier();
  if (rank != 0) return;
  ASSERT_EQ(rec.messages.size(), 1u);
  const std::string want = "halognn-test: rank 0: mpi exchange on rank 0, tag 9, sends to none, "
                           "receives from " + std::to_string(last) + " has been blocked for ";
  EXPECT_EQ(rec.messages[0].rfind(want, 0), 0u) << rec.messages[0];
}

TEST(WatchdogMpi, ACollectiveAPeerJoinsLateIsReported) {
  auto t = make_mpi_transport(MPI_COMM_WORLD);
  const Rank rank = t->rank(), last = t->size() - 1;
  Recorder rec;
  {
    CommWatchdog dog;
    if (rank == 0) dog.start(0.3, "halognn-test", rank, rec.callback(), 0.02);
    if (rank == last) std::this_thread::sleep_for(1s);
    double x[3] = {1, 2, 3};
    t->all_reduce_sum(x, 3);
    EXPECT_EQ(x[0], static_cast<double>(t->size()));
  }
  t->barrier();
  if (rank != 0) return;
  ASSERT_EQ(rec.messages.size(), 1u);
  EXPECT_NE(rec.messages[0].find("rank 0: all-reduce (sum, double) of 3 elements has been blocked"),
            std::string::npos)
      << rec.messages[0];
}

}  // namespace
}  // namespace halognn
