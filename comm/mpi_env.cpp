#include "comm/mpi_env.hpp"

#include <algorithm>
#include <vector>

#include "comm/watchdog.hpp"

namespace halognn {

MpiEnv::MpiEnv(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    GNN_CHECK_MPI(MPI_Init(&argc, &argv));
    owns_ = true;
  }
  GNN_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  GNN_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  GNN_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

MpiEnv::~MpiEnv() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Finalising synchronises with the other ranks: a stopped peer would hang it.
  BlockingScope blocked("MPI_Finalize");
  MPI_Finalize();
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len)) + " (code " + std::to_string(code) + ")";
}

namespace {

std::string one_line_message(const std::exception_ptr& e) {
  std::string msg;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    msg = ex.what();
  } catch (...) {
    msg = "unknown exception";
  }
  std::replace_if(msg.begin(), msg.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return msg;
}

}  // namespace

void agree_or_throw(MPI_Comm comm, const std::exception_ptr& local) {
  int rank = 0, size = 1;
  GNN_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  GNN_CHECK_MPI(MPI_Comm_size(comm, &size));
  BlockingScope blocked("start-up agreement (every rank reports whether its step failed)");
  // The lowest failing rank speaks for all; `size` means nobody failed.
  int mine = local ? rank : size;
  int first = size;
  GNN_CHECK_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;

  std::string msg = rank == first ? one_line_message(local) : std::string();
  int len = static_cast<int>(msg.size());
  GNN_CHECK_MPI(MPI_Bcast(&len, 1, MPI_INT, first, comm));
  std::vector<char> text(static_cast<std::size_t>(len));
  if (rank == first) std::copy(msg.begin(), msg.end(), text.begin());
  if (len > 0) GNN_CHECK_MPI(MPI_Bcast(text.data(), len, MPI_CHAR, first, comm));

  if (local) std::rethrow_exception(local);
  throw RemoteError(first, "rank " + std::to_string(first) + " failed: " +
                               std::string(text.begin(), text.end()));
}

}  // namespace halognn
