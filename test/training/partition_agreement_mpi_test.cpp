// Start-up agreement of a partition across ranks: parts of one run agree; a part from another run,
// or send/receive counts that disagree between two ranks, are refused on every rank with a message
// naming the rank files, before any exchange could fail with MPI_ERR_TRUNCATE or hang.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "comm/mpi_env.hpp"
#include "partition/partition_io.hpp"
#include "training/partition_agreement.hpp"
#include "training_fixture.hpp"

namespace halognn {
namespace {

struct World {
  int rank = 0, size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

LocalPartition my_part(const World& w, std::uint64_t run) {
  const Dataset ds = testing::small_dataset();
  LocalPartition p = testing::partition_of(ds, w.size, w.rank);
  p.run_id = run;
  return p;
}

/// Runs the check as the tool does (collective_try): every rank gets the error; returns its text
/// on this rank ("" when none).
std::string agreement_error(const LocalPartition& p) {
  try {
    collective_try(MPI_COMM_WORLD, [&] { check_partition_agreement(MPI_COMM_WORLD, p, "parts/x/"); });
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(PartitionAgreement, PartsOfOneRunAgree) {
  const World w;
  EXPECT_EQ(agreement_error(my_part(w, 42)), "");
}

TEST(PartitionAgreement, APartOfAnotherRunIsRefusedOnEveryRank) {
  const World w;
  if (w.size < 2) GTEST_SKIP() << "needs two ranks";
  const std::string msg = agreement_error(my_part(w, w.rank == w.size - 1 ? 43 : 42));
  const std::string file = "parts/x/" + partition_file_name(w.size - 1);
  EXPECT_NE(msg.find(file + ": is from partition run 000000000000002b but rank 0's "
                            "parts/x/part-00000.bin is from run 000000000000002a"),
            std::string::npos)
      << msg;
}

TEST(PartitionAgreement, SendAndReceiveCountsThatDisagreeNameBothFiles) {
  const World w;
  if (w.size < 2) GTEST_SKIP() << "needs two ranks";
  LocalPartition p = my_part(w, 42);
  // Rank 0 sends one row fewer to its first peer than that peer expects: what a rank file of
  // another partition with the same run id (a forged or buggy file) would do.
  Rank victim = -1;
  if (w.rank == 0) {
    ASSERT_FALSE(p.send.empty());
    victim = p.send[0].peer;
    p.send[0].rows.pop_back();
  }
  MPI_Bcast(&victim, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string msg = agreement_error(p);
  EXPECT_NE(msg.find("parts/x/" + partition_file_name(victim) + ": expects "), std::string::npos)
      << msg;
  EXPECT_NE(msg.find(" halo rows from rank 0 but parts/x/part-00000.bin sends "), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace halognn
