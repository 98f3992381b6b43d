#pragma once
/// @file rng.hpp
/// Counter-based random numbers (Philox-4x32-10, Salmon et al., SC'11). A value is a pure
/// function of (key, counter): no state advances, so the same (seed, purpose, epoch, layer,
/// global node id, index) gives the same number on any rank, at any rank count, on CPU or GPU.
/// That is what makes P-rank dropout equal 1-rank dropout and CPU/GPU quantization identical.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define GNN_HD __host__ __device__ __forceinline__
#else
#define GNN_HD inline
#endif

namespace halognn {

/// What a random stream is used for; part of the key so that streams never collide.
enum class RngPurpose : std::uint32_t {
  init_weights = 1,
  dropout = 2,
  quantize = 3,
  split = 4,
  generator = 5,
  partition = 6,
  refresh = 7,
  test = 8,
  sparsify = 9,
  grouping = 10,
  attention_dropout = 11,
  block_dropout = 12,  ///< the residual blocks' dropouts (models/residual_block.cpp)
};

/// A stream key: (seed, purpose, a, b) hashed into Philox's 64-bit key. `a` and `b` carry the
/// purpose's own coordinates (for example epoch and layer*2+direction).
struct RngKey {
  std::uint64_t seed = 0;
  RngPurpose purpose = RngPurpose::test;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
};

namespace detail {
GNN_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
GNN_HD void mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}
}  // namespace detail

namespace detail {
/// Blocks (lo + b, c1, c2, c3) for b in [0, count), lo + count <= 2^32, of the Philox key
/// (key0, key1) into out (4 words a block), for the CPU's instruction set (philox.cpp).
void philox_run_cpu(std::uint32_t key0, std::uint32_t key1, std::uint32_t lo, std::uint32_t c1,
                    std::uint32_t c2, std::uint32_t c3, std::int64_t count, std::uint32_t* out);
/// Blocks 0 .. per_item - 1 of each of items[0, n) into out, item after item, for the CPU's
/// instruction set.
void philox_items_cpu(std::uint32_t key0, std::uint32_t key1, const std::int64_t* items, std::int64_t n,
                      std::int64_t per_item, std::uint32_t* out);
/// Words j[s] of the stream of item (c2, c3) into out[s], for the CPU's instruction set.
void philox_words_at_cpu(std::uint32_t key0, std::uint32_t key1, std::uint32_t c2, std::uint32_t c3,
                         const std::uint64_t* j, std::int64_t count, std::uint32_t* out);
}  // namespace detail

/// The Philox-4x32 bijection with 10 rounds (Random123's philox4x32_10).
GNN_HD void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key[2],
                          std::uint32_t out[4]) {
  std::uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  std::uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    detail::mulhilo32(0xD2511F53u, c0, hi0, lo0);
    detail::mulhilo32(0xCD9E8D57u, c2, hi1, lo1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/// Philox-4x32-10 with a 64-bit key derived from an RngKey.
class CounterRng {
 public:
  GNN_HD explicit CounterRng(const RngKey& k) {
    std::uint64_t h = detail::splitmix64(k.seed);
    h = detail::splitmix64(h ^ static_cast<std::uint64_t>(k.purpose));
    h = detail::splitmix64(h ^ k.a);
    h = detail::splitmix64(h ^ k.b);
    key0_ = static_cast<std::uint32_t>(h);
    key1_ = static_cast<std::uint32_t>(h >> 32);
  }

  /// The two 32-bit words of the Philox key (for kernels that run the rounds themselves).
  GNN_HD std::uint32_t key_word(int i) const { return i == 0 ? key0_ : key1_; }

  /// Four 32-bit random words for counter (item, index): e.g. item = global node id,
  /// index = element / 4 within that node's row.
  GNN_HD void block(std::uint64_t item, std::uint64_t index, std::uint32_t out[4]) const {
    const std::uint32_t ctr[4] = {static_cast<std::uint32_t>(index),
                                  static_cast<std::uint32_t>(index >> 32),
                                  static_cast<std::uint32_t>(item),
                                  static_cast<std::uint32_t>(item >> 32)};
    const std::uint32_t key[2] = {key0_, key1_};
    philox4x32_10(ctr, key, out);
  }

  /// `count` consecutive blocks of one item: out[4*b .. 4*b+3] = block(item, index0 + b) for b in
  /// [0, count). Host only. The same words as block(), computed block-parallel in vector code of
  /// the CPU's instruction set (core/kernels/reference/philox.cpp).
  void blocks(std::uint64_t item, std::uint64_t index0, std::int64_t count, std::uint32_t* out) const {
    const std::uint32_t c2 = static_cast<std::uint32_t>(item), c3 = static_cast<std::uint32_t>(item >> 32);
    std::int64_t done = 0;
    while (done < count) {
      // Within one run the high word of the index is constant and the low word counts up.
      const std::uint64_t index = index0 + static_cast<std::uint64_t>(done);
      const std::uint32_t lo = static_cast<std::uint32_t>(index), c1 = static_cast<std::uint32_t>(index >> 32);
      const std::uint64_t room = 0x100000000ull - lo;
      const std::int64_t run = static_cast<std::uint64_t>(count - done) < room
                                   ? count - done : static_cast<std::int64_t>(room);
      detail::philox_run_cpu(key0_, key1_, lo, c1, c2, c3, run, out + 4 * done);
      done += run;
    }
  }

  /// Rows of at most this many values draw their words through item_blocks, in batches of at
  /// most kItemBatchWords words (16 KiB): the q encoders and dropout.
  static constexpr std::int64_t kItemRowMaxCols = 64;
  static constexpr std::int64_t kItemBatchWords = 4096;

  /// The first `per_item` blocks of each of n items (item r is static_cast<uint64_t>(items[r]), a
  /// global node id): out[4 * (r * per_item + b) .. + 3] = block(items[r], b). Host only. The same
  /// words as blocks() item by item, but the vector lanes hold blocks of several items, so short
  /// rows (fewer blocks than a vector has lanes) keep every lane busy.
  void item_blocks(const std::int64_t* items, std::int64_t n, std::int64_t per_item,
                   std::uint32_t* out) const {
    detail::philox_items_cpu(key0_, key1_, items, n, per_item, out);
  }

  /// One 32-bit word: element `j` of item `item`'s stream.
  GNN_HD std::uint32_t word(std::uint64_t item, std::uint64_t j) const {
    std::uint32_t w[4];
    block(item, j >> 2, w);
    return w[j & 3];
  }

  /// Words at scattered positions of one item's stream: out[s] = word(item, j[s]) for s in
  /// [0, count). Host only; computed in vector code of the CPU's instruction set (philox.cpp).
  void words_at(std::uint64_t item, const std::uint64_t* j, std::int64_t count, std::uint32_t* out) const {
    detail::philox_words_at_cpu(key0_, key1_, static_cast<std::uint32_t>(item),
                                static_cast<std::uint32_t>(item >> 32), j, count, out);
  }

  /// Uniform float in [0, 1) with 24 random bits: element `j` of item `item`'s stream.
  GNN_HD float uniform(std::uint64_t item, std::uint64_t j) const {
    return static_cast<float>(word(item, j) >> 8) * (1.0f / 16777216.0f);
  }

  /// Dropout's keep test in integers: uniform() of a word w is >= p exactly when
  /// (w >> 8) >= keep_threshold(p) (both sides times 2^24 are exact: a 24-bit integer, and a
  /// float scaled by a power of two), which vector code applies without a branch. Host only.
  static std::int32_t keep_threshold(float p) {
    return static_cast<std::int32_t>(std::ceil(p * 16777216.0f));
  }

  /// Inverted dropout's scale of a kept value, 1 / (1 - p) in float (0 for p = 1, where nothing
  /// is kept). Every dropout kernel scales by this one value, so their kept values agree bitwise.
  static float keep_scale(float p) { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }

  /// Uniform double in [0, 1) with 53 random bits (uses two words: 2j and 2j+1).
  GNN_HD double uniform_double(std::uint64_t item, std::uint64_t j) const {
    const std::uint64_t hi = word(item, 2 * j), lo = word(item, 2 * j + 1);
    return static_cast<double>(((hi << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
  }

 private:
  std::uint32_t key0_ = 0, key1_ = 0;
};

}  // namespace halognn
