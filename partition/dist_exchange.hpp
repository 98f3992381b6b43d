#pragma once
/// @file dist_exchange.hpp
/// The MPI building blocks of the distributed partitioner (distributed_partition.hpp) and of its
/// multilevel scheme (dist_multilevel.hpp): block distributions of ids over ranks, an
/// all-to-all of byte buffers with 64-bit sizes, and typed packing into and out of those buffers.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <mpi.h>

#include "core/types.hpp"

namespace halognn::dist {

/// The block distribution of n items over k ranks: rank r holds [r n / k, (r+1) n / k).
std::int64_t block_begin(std::int64_t n, Rank k, Rank r);

/// The rank whose block holds item v.
Rank block_owner(std::int64_t n, Rank k, std::int64_t v);

/// All-to-all of variable-size byte buffers with 64-bit sizes: send[d] goes to rank d; returns
/// what every rank sent this one, concatenated in rank order. Adds the bytes sent to other ranks
/// to `sent`. Collective over `comm`.
std::vector<std::byte> exchange(MPI_Comm comm, const std::vector<std::vector<std::byte>>& send,
                                std::uint64_t& sent);

/// Appends the bytes of `v` to `buf`.
template <typename T>
void put(std::vector<std::byte>& buf, const T* v, std::size_t n) {
  const auto* b = reinterpret_cast<const std::byte*>(v);
  buf.insert(buf.end(), b, b + n * sizeof(T));
}
template <typename T>
void put(std::vector<std::byte>& buf, T v) {
  put(buf, &v, 1);
}

/// Reads typed values from a received byte stream.
class Cursor {
 public:
  explicit Cursor(const std::vector<std::byte>& b) : b_(b) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T>
  void get(T* out, std::size_t n) {
    std::memcpy(out, b_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }
  bool done() const { return at_ >= b_.size(); }

 private:
  const std::vector<std::byte>& b_;
  std::size_t at_ = 0;
};

}  // namespace halognn::dist
