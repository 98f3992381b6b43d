// Block distributions and the byte all-to-all of the distributed partitioner (dist_exchange.hpp).
#include "partition/dist_exchange.hpp"

#include <algorithm>
#include <numeric>

#include "comm/mpi_env.hpp"

namespace halognn::dist {

std::int64_t block_begin(std::int64_t n, Rank k, Rank r) {
  // n * r can exceed 2^63 only for n > 2^53 with huge K; use 128-bit arithmetic anyway.
  return static_cast<std::int64_t>(static_cast<__int128>(n) * r / k);
}

Rank block_owner(std::int64_t n, Rank k, std::int64_t v) {
  // The largest r with block_begin(r) <= v.
  Rank r = static_cast<Rank>(static_cast<__int128>(v) * k / std::max<std::int64_t>(n, 1));
  while (r + 1 < k && block_begin(n, k, r + 1) <= v) ++r;
  while (r > 0 && block_begin(n, k, r) > v) --r;
  return r;
}

namespace {
/// Bytes per rank and round of a point-to-point exchange: MPI counts are int.
constexpr std::int64_t kChunkBytes = std::int64_t{1} << 30;
}  // namespace

std::vector<std::byte> exchange(MPI_Comm comm, const std::vector<std::vector<std::byte>>& send,
                                std::uint64_t& sent) {
  int k = 1, me = 0;
  MPI_Comm_size(comm, &k);
  MPI_Comm_rank(comm, &me);
  std::vector<std::int64_t> send_n(static_cast<std::size_t>(k)), recv_n(send_n.size());
  for (int d = 0; d < k; ++d) send_n[d] = static_cast<std::int64_t>(send[d].size());
  GNN_CHECK_MPI(MPI_Alltoall(send_n.data(), 1, MPI_INT64_T, recv_n.data(), 1, MPI_INT64_T, comm));
  std::vector<std::int64_t> at(static_cast<std::size_t>(k) + 1, 0);
  for (int s = 0; s < k; ++s) at[s + 1] = at[s] + recv_n[s];
  std::vector<std::byte> out(static_cast<std::size_t>(at[k]));
  std::vector<MPI_Request> reqs;
  reqs.reserve(static_cast<std::size_t>(2 * k) + static_cast<std::size_t>(at[k] / kChunkBytes) +
               static_cast<std::size_t>(std::accumulate(send_n.begin(), send_n.end(), std::int64_t{0}) / kChunkBytes));
  for (int s = 0; s < k; ++s) {
    if (s == me) continue;
    for (std::int64_t off = 0, c = 0; off < recv_n[s]; off += kChunkBytes, ++c) {
      reqs.emplace_back();
      GNN_CHECK_MPI(MPI_Irecv(out.data() + at[s] + off,
                              static_cast<int>(std::min(kChunkBytes, recv_n[s] - off)), MPI_BYTE,
                              s, static_cast<int>(c), comm, &reqs.back()));
    }
  }
  for (int d = 0; d < k; ++d) {
    if (d == me) continue;
    for (std::int64_t off = 0, c = 0; off < send_n[d]; off += kChunkBytes, ++c) {
      reqs.emplace_back();
      GNN_CHECK_MPI(MPI_Isend(send[d].data() + off,
                              static_cast<int>(std::min(kChunkBytes, send_n[d] - off)), MPI_BYTE,
                              d, static_cast<int>(c), comm, &reqs.back()));
    }
    sent += static_cast<std::uint64_t>(send_n[d]);
  }
  if (send_n[me] > 0) std::memcpy(out.data() + at[me], send[me].data(), send[me].size());
  GNN_CHECK_MPI(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
  return out;
}

}  // namespace halognn::dist
