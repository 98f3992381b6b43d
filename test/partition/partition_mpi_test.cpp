// Each rank reads only its own part and exchanges the global ids of its send plans over MPI:
// what arrives must be exactly the global ids of the matching receive plan.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include "partition/partition_io.hpp"
#include "partition_fixtures.hpp"

namespace halognn {
namespace {

TEST(PartitionOverMpi, SendPlansDeliverExactlyTheHaloEachPeerExpects) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // One directory name for all ranks: rank 0's pid, broadcast.
  long long pid = ::getpid();
  MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("halognn-partition-mpi-" + std::to_string(pid)))
                              .string();
  const Dataset ds = test::make_dataset(test::geometric_edges(1200, 0.06, 4));
  if (rank == 0) {
    const GlobalGraph g = test::graph_of(ds);
    PartitionConfig cfg;
    cfg.parts = size;
    cfg.seed = 2;
    write_partition_dir(ds, g, assign_parts(g, cfg), cfg, dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const LocalPartition lp = read_local_partition(dir, rank, size);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);

  std::vector<std::vector<long long>> out(lp.send.size()), in(lp.recv.size());
  std::vector<MPI_Request> reqs;
  for (std::size_t k = 0; k < lp.recv.size(); ++k) {
    in[k].resize(lp.recv[k].rows.size());
    reqs.emplace_back();
    MPI_Irecv(in[k].data(), static_cast<int>(in[k].size()), MPI_LONG_LONG, lp.recv[k].peer, 7,
              MPI_COMM_WORLD, &reqs.back());
  }
  for (std::size_t k = 0; k < lp.send.size(); ++k) {
    for (LocalId r : lp.send[k].rows) out[k].push_back(lp.global_ids[r]);
    reqs.emplace_back();
    MPI_Isend(out[k].data(), static_cast<int>(out[k].size()), MPI_LONG_LONG, lp.send[k].peer, 7,
              MPI_COMM_WORLD, &reqs.back());
  }
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  std::int64_t halo = 0;
  for (std::size_t k = 0; k < lp.recv.size(); ++k) {
    const auto expected = test::gids_of(lp, lp.recv[k].rows);
    EXPECT_EQ(std::vector<GlobalId>(in[k].begin(), in[k].end()), expected)
        << "rank " << rank << " from " << lp.recv[k].peer;
    halo += static_cast<std::int64_t>(expected.size());
  }
  EXPECT_EQ(halo, lp.num_halo);
  if (size > 1) {
    EXPECT_GT(lp.num_halo, 0);
  }
  // Owned vertices cover the graph exactly once.
  long long owned = lp.num_owned, total = 0;
  MPI_Allreduce(&owned, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, ds.num_nodes);
}

}  // namespace
}  // namespace halognn
