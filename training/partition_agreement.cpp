#include "training/partition_agreement.hpp"

#include <cstdint>
#include <vector>

#include "comm/mpi_env.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"
#include "partition/partition_io.hpp"

namespace halognn {
namespace {

std::string rank_file(const std::string& dir, Rank r) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/" + partition_file_name(r);
}

}  // namespace

void check_partition_agreement(MPI_Comm comm, const LocalPartition& part, const std::string& dir) {
  int rank = 0, size = 1;
  GNN_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  GNN_CHECK_MPI(MPI_Comm_size(comm, &size));
  GNN_ASSERT(part.rank == rank && part.num_parts == size, "part ", part.rank, " of ",
             part.num_parts, " checked on rank ", rank, " of ", size);
  const std::string mine = rank_file(dir, rank);

  // Run ids: each rank checked its file against its manifest; this catches ranks that read
  // different copies of the directory (node-local disks).
  std::vector<std::uint64_t> runs(static_cast<std::size_t>(size));
  std::int64_t owned = part.num_owned;
  std::vector<std::int64_t> send_to(static_cast<std::size_t>(size), 0);
  std::vector<std::int64_t> sent_to_me(static_cast<std::size_t>(size), 0);
  for (const PeerRows& pr : part.send) send_to[static_cast<std::size_t>(pr.peer)] =
      static_cast<std::int64_t>(pr.rows.size());
  {
    BlockingScope blocked("start-up partition check (run ids, node counts, send/receive counts)");
    GNN_CHECK_MPI(MPI_Allgather(&part.run_id, 1, MPI_UINT64_T, runs.data(), 1, MPI_UINT64_T, comm));
    GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &owned, 1, MPI_INT64_T, MPI_SUM, comm));
    // sent_to_me[p] = rows rank p sends to this rank.
    GNN_CHECK_MPI(MPI_Alltoall(send_to.data(), 1, MPI_INT64_T, sent_to_me.data(), 1, MPI_INT64_T,
                               comm));
  }
  GNN_CHECK_INPUT(runs[static_cast<std::size_t>(rank)] == runs[0], mine, "is from partition run ",
                  format_run_id(runs[static_cast<std::size_t>(rank)]), " but rank 0's ",
                  rank_file(dir, 0), " is from run ", format_run_id(runs[0]),
                  " (the ranks read different partition directories; re-run halognn-partition)");
  GNN_CHECK_INPUT(owned == part.global_num_nodes, mine, "the parts own ", owned,
                  " nodes together but the graph has ", part.global_num_nodes,
                  " (rank files of different partitions mixed up; re-run halognn-partition)");

  std::vector<std::int64_t> recv_from(static_cast<std::size_t>(size), 0);
  for (const PeerRows& pr : part.recv) recv_from[static_cast<std::size_t>(pr.peer)] =
      static_cast<std::int64_t>(pr.rows.size());
  for (int p = 0; p < size; ++p) {
    const std::int64_t sent = sent_to_me[static_cast<std::size_t>(p)];
    const std::int64_t expected = recv_from[static_cast<std::size_t>(p)];
    GNN_CHECK_INPUT(sent == expected, mine, "expects ", expected, " halo rows from rank ", p,
                    " but ", rank_file(dir, p), " sends ", sent,
                    " (rank files of different partitions mixed up; re-run halognn-partition)");
  }
}

}  // namespace halognn
