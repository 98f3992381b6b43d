#pragma once
/// @file partition_agreement.hpp
/// Start-up checks of a partition across ranks: what no rank can see in its own file. Run once
/// every rank has read its part (read_local_partition) and before the first exchange, so a mixed-up
/// partition directory is refused with one line naming the files instead of failing later with a
/// raw MPI error (MPI_ERR_TRUNCATE) or a hang in the middle of training.
#include <string>

#include <mpi.h>

#include "partition/local_partition.hpp"

namespace halognn {

/// Collective over `comm`, where rank r holds part r of the partition in `dir`. Checks that
/// - every part comes from the same halognn-partition run as rank 0's (run ids agree);
/// - the owned rows of all parts add up to the graph's node count;
/// - for every pair (p, q), the rows p sends to q are as many as the rows q receives from p.
/// Throws InputError naming the rank files involved on the ranks that find a problem; call it
/// inside collective_try so that every rank fails with the message. Its collectives are watched
/// by the communication watchdog.
void check_partition_agreement(MPI_Comm comm, const LocalPartition& part, const std::string& dir);

}  // namespace halognn
