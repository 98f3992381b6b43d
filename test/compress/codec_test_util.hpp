#pragma once
// Helpers shared by the codec tests.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "compress/codec.hpp"
#include "core/buffer.hpp"
#include "core/kernels/cpu_isa.hpp"

namespace halognn::test {

/// Global ids first, first+1, ... for a block of `n` rows.
inline std::vector<GlobalId> iota_ids(std::int64_t n, GlobalId first = 0) {
  std::vector<GlobalId> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

inline CodecContext make_ctx(const std::vector<GlobalId>& ids, std::int64_t epoch = 0,
                             std::uint64_t seed = 7, std::int32_t layer = 1,
                             Direction dir = Direction::forward) {
  CodecContext ctx;
  ctx.seed = seed;
  ctx.epoch = epoch;
  ctx.layer = layer;
  ctx.direction = dir;
  ctx.row_ids = ids.data();
  return ctx;
}

inline std::vector<std::byte> encode(const Codec& codec, ConstDenseView rows, const CodecContext& ctx) {
  std::vector<std::byte> out(codec.encoded_size(rows.rows, rows.cols).total());
  codec.encode(*cpu_device(), rows, ctx, out);
  return out;
}

inline Matrix decode(const Codec& codec, const std::vector<std::byte>& in, std::int64_t rows,
                     std::int64_t cols, const CodecContext& ctx) {
  Matrix m(rows, cols);
  codec.decode(*cpu_device(), in, ctx, m.view());
  return m;
}

/// Runs f(isa) once per instruction set of the multi-versioned loops that this CPU has, with the
/// loops limited to it (narrowest first), then lifts the limit again.
template <typename F>
void on_every_cpu_isa(F&& f) {
  const kernels::CpuIsa detected = kernels::detected_cpu_isa();
  for (const kernels::CpuIsa isa : {kernels::CpuIsa::sse2, kernels::CpuIsa::avx2, kernels::CpuIsa::avx512}) {
    if (isa > detected) continue;
    kernels::set_cpu_isa_limit(isa);
    f(isa);
  }
  kernels::set_cpu_isa_limit(detected);
}

}  // namespace halognn::test
