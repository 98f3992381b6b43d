#pragma once
// This process's rank and the job's size in MPI_COMM_WORLD, for MPI tests (after MPI_Init).
#include <mpi.h>

namespace halognn::testing {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

}  // namespace halognn::testing
