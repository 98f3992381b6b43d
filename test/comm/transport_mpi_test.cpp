// The MPI transport's exchange and collectives, GNN_CHECK_MPI, and the error-agreement helper.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport = make_mpi_transport(MPI_COMM_WORLD);
    rank = transport->rank();
    size = transport->size();
    ASSERT_GE(size, 2) << "register these tests with 2 or more ranks";
  }
  std::unique_ptr<Transport> transport;
  Rank rank = 0, size = 1;
};

TEST_F(TransportTest, ReportsNameRankAndSize) {
  int r = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  EXPECT_EQ(transport->name(), "mpi");
  EXPECT_EQ(transport->rank(), r);
  EXPECT_EQ(transport->size(), n);
  EXPECT_GE(transport->max_tag(), 32767);
}

TEST_F(TransportTest, ExchangeMovesBytesAroundARingAndCountsThem) {
  // Each rank sends (rank+1)*100 + 3 bytes to its right neighbour and two messages with the same
  // tag to its left one (which must arrive in posting order).
  const Rank right = (rank + 1) % size, left = (rank + size - 1) % size;
  auto fill = [](Rank from, std::size_t n, int salt) {
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = static_cast<std::byte>((from * 31 + static_cast<int>(i) * 7 + salt) & 0xff);
    return v;
  };
  const auto to_right = fill(rank, static_cast<std::size_t>(rank + 1) * 100 + 3, 0);
  const auto to_left_a = fill(rank, 50, 1), to_left_b = fill(rank, 60, 2);
  std::vector<std::byte> from_left(static_cast<std::size_t>(left + 1) * 100 + 3);
  std::vector<std::byte> from_right_a(50), from_right_b(60), empty;
  transport->reset_counters();
  // With two ranks left == right: both messages of a tag then go to the same peer.
  PeerBytes sends1[] = {{right, to_right}};
  PeerBytesMut recvs1[] = {{left, from_left}};
  Request first = transport->exchange(sends1, recvs1, 5);
  PeerBytes sends2[] = {{left, to_left_a}, {left, to_left_b}, {right, empty}};
  PeerBytesMut recvs2[] = {{right, from_right_a}, {right, from_right_b}, {left, empty}};
  Request second = transport->exchange(sends2, recvs2, 6);
  while (!second.test()) {
  }
  first.wait();
  EXPECT_EQ(from_left, fill(left, from_left.size(), 0));
  EXPECT_EQ(from_right_a, fill(right, 50, 1));
  EXPECT_EQ(from_right_b, fill(right, 60, 2));
  EXPECT_EQ(transport->bytes_sent(), to_right.size() + 110);
}

TEST_F(TransportTest, ExchangeRejectsBadTagsAndPeers) {
  std::vector<std::byte> buf(4);
  PeerBytes sends[] = {{size, buf}};
  EXPECT_THROW(transport->exchange(sends, {}, 0), Error);
  EXPECT_THROW(transport->exchange({}, {}, -1), Error);
  EXPECT_EQ(transport->bytes_sent(), 0u);
}

TEST_F(TransportTest, AllReducesSumAndMaximiseOverRanks) {
  std::vector<float> f(1000);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(rank + 1) * static_cast<float>(i % 7);
  transport->all_reduce_sum(*cpu_device(), f.data(), f.size());
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  for (std::size_t i = 0; i < f.size(); ++i) ASSERT_EQ(f[i], ranks_sum * static_cast<float>(i % 7));

  double d[2] = {0.5 * rank, -1.0 * rank};
  transport->all_reduce_sum(d, 2);
  EXPECT_DOUBLE_EQ(d[0], 0.25 * size * (size - 1));
  EXPECT_DOUBLE_EQ(d[1], -0.5 * size * (size - 1));

  double m[2] = {static_cast<double>(rank), -static_cast<double>(rank)};
  transport->all_reduce_max(m, 2);
  EXPECT_EQ(m[0], size - 1);
  EXPECT_EQ(m[1], 0.0);

  std::int64_t big[2] = {std::int64_t{1} << 40, rank};
  transport->all_reduce_sum(big, 2);
  EXPECT_EQ(big[0], (std::int64_t{1} << 40) * size);
  EXPECT_EQ(big[1], size * (size - 1) / 2);
  EXPECT_EQ(transport->collective_bytes(), 1000 * 4 + 16 + 16 + 16u);
  transport->barrier();
}

TEST(MpiCheck, FailingCallThrowsMpiErrorNamingCallFileAndReason) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int size = 0, value = 1;
  MPI_Comm_size(comm, &size);
  try {
    GNN_CHECK_MPI(MPI_Send(&value, 1, MPI_INT, size + 3, 0, comm));
    ADD_FAILURE() << "sending to a rank that does not exist succeeded";
  } catch (const MpiError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("MPI_Send"), std::string::npos) << what;
    EXPECT_NE(what.find("transport_mpi_test.cpp"), std::string::npos) << what;
    EXPECT_NE(what.find("rank"), std::string::npos) << what;  // MPI's reason: invalid rank
  }
  MPI_Comm_free(&comm);
}

TEST(MpiEnv, LeavesAnAlreadyInitialisedMpiAloneAndReportsRankAndSize) {
  int argc = 1;
  char name[] = "test";
  char* args[] = {name, nullptr};
  char** argv = args;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    MpiEnv env(argc, argv);
    EXPECT_EQ(env.rank(), rank);
    EXPECT_EQ(env.size(), size);
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  EXPECT_EQ(finalized, 0);  // it did not initialise MPI, so it does not finalise it
}

TEST(AgreeOrThrow, ReturnsWhenNoRankFailed) {
  EXPECT_NO_THROW(agree_or_throw(MPI_COMM_WORLD, nullptr));
  int calls = 0;
  EXPECT_NO_THROW(collective_try(MPI_COMM_WORLD, [&] { ++calls; }));
  EXPECT_EQ(calls, 1);
}

TEST(AgreeOrThrow, OneFailingRankMakesEveryRankThrowWithItsMessage) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Rank bad = size - 1;
  try {
    collective_try(MPI_COMM_WORLD, [&] {
      if (rank == bad) throw InputError("part-" + std::to_string(bad) + ".bin", "bad magic\nnumber");
    });
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const RemoteError& e) {
    EXPECT_NE(rank, bad);
    EXPECT_EQ(e.origin(), bad);
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(bad) + " failed: part-" +
                                         std::to_string(bad) + ".bin: bad magic number");
  } catch (const InputError& e) {
    EXPECT_EQ(rank, bad);  // the failing rank gets its own exception back
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos);
  }
}

TEST(AgreeOrThrow, TheLowestFailingRankSpeaksForAll) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::exception_ptr mine;
  if (rank >= 1) mine = std::make_exception_ptr(ConfigError("rank " + std::to_string(rank) + " unhappy"));
  try {
    agree_or_throw(MPI_COMM_WORLD, mine);
    ADD_FAILURE() << "no exception";
  } catch (const RemoteError& e) {
    EXPECT_EQ(rank, 0);
    EXPECT_EQ(std::string(e.what()), "rank 1 failed: rank 1 unhappy");
  } catch (const ConfigError& e) {
    EXPECT_GE(rank, 1);
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(rank) + " unhappy");
  }
}

}  // namespace
}  // namespace halognn
