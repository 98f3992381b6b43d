// The fp16 and bf16 codecs: every value rounded to nearest even into a 16-bit float.
#include <algorithm>
#include <cstring>
#include <vector>

#include "compress/codec_cuda.hpp"
#include "compress/codec_util.hpp"
#include "compress/float16.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/simd.hpp"

namespace halognn {
namespace {


enum class Half : std::uint8_t { fp16, bf16 };

/// |f| + 0.5f, the one float operation of half_nearest.
inline float abs_plus_half(float f) { return f16::bits_float(f16::float_bits(f) & 0x7FFFFFFFu) + 0.5f; }

/// f16::float_to_half(f) (round to nearest even) without branches, so that a compiler converts
/// many values at once (SIMD); every float gives the same bits as the scalar function:
/// - normal results (|f| in [2^-14, 65520)): the scalar fast path's integer rounding;
/// - subnormal results and zero (|f| < 2^-14): `sum` = abs_plus_half(f) rounds |f| to a
///   multiple of 2^-24 (the ulp of 0.5f) to nearest even in one IEEE addition, and the
///   mantissa of the sum is the binary16 bit pattern (1024 for a carry into the smallest normal,
///   which is its pattern too); float32 subnormal inputs round to 0 either way, so
///   denormals-are-zero modes do not matter;
/// - |f| >= 65520 and inf give inf (0x7C00), NaN gives the quiet NaN 0x7E00, signs kept.
inline std::uint16_t half_nearest(float f, float sum) {
  const std::uint32_t bits = f16::float_bits(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  const std::uint32_t normal = (abs - (112u << 23) + 0xFFFu + ((abs >> 13) & 1u)) >> 13;
  const std::uint32_t subnormal = f16::float_bits(sum) - 0x3F000000u;
  std::uint32_t r = abs < 0x38800000u ? subnormal : normal;
  r = abs >= 0x477FF000u ? 0x7C00u : r;
  r = abs > 0x7F800000u ? 0x7E00u : r;
  return static_cast<std::uint16_t>(sign | r);
}

/// f16::float_to_bf16(f) (round to nearest even) without branches.
inline std::uint16_t bf16_nearest(float f) {
  const std::uint32_t bits = f16::float_bits(f);
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (bits >> 16) | 0x0040u;
  return static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

/// Elements converted per step: a stack buffer of this many 16-bit values is copied to the
/// (possibly unaligned) output.
constexpr std::int64_t kStep = 2048;

#define HALOGNN_ISA_BODY "compress/half_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

/// convert_step and widen of the CPU's instruction set.
template <Half kind>
struct HalfLoops {
  bool (*convert)(const float*, std::int64_t, std::uint16_t*);
  void (*widen)(const std::uint16_t*, std::int64_t, float*);
  static HalfLoops pick() {
    switch (kernels::cpu_isa()) {
      case kernels::CpuIsa::avx512: return {isa_avx512::convert_step<kind>, isa_avx512::widen<kind>};
      case kernels::CpuIsa::avx2: return {isa_avx2::convert_step<kind>, isa_avx2::widen<kind>};
      case kernels::CpuIsa::sse2: break;
    }
    return {isa_sse2::convert_step<kind>, isa_sse2::widen<kind>};
  }
};

/// Rows cross as 16-bit floats, row-major, two little-endian bytes per value; no metadata.
/// Finite values too large for fp16 (|x| >= 65520) become +-inf, as IEEE rounding prescribes.
template <Half kind>
class HalfCodec final : public Codec {
 public:
  std::string name() const override { return kind == Half::fp16 ? "fp16" : "bf16"; }
  bool lossless() const override { return false; }
  EncodedSize encoded_size(std::int64_t rows, std::int64_t cols) const override {
    return {static_cast<std::size_t>(rows * cols) * sizeof(std::uint16_t), 0};
  }

  void encode(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
              std::span<std::byte> out) const override {
    if (dev.kind() == DeviceKind::cuda) return encode_on_gpu(dev, rows, ctx, out);
    codec_detail::check_call(*this, dev, out.size(), rows.rows, rows.cols, "encode");
    // The block is contiguous: convert it as one flat array, then name the first bad row.
    const std::int64_t n = rows.rows * rows.cols;
    const float* src = rows.data;
    std::byte* dst = out.data();
    const std::int64_t steps = (n + kStep - 1) / kStep;
    const auto convert_step = HalfLoops<kind>::pick().convert;
    bool any_bad = false;
#pragma omp parallel for schedule(static) reduction(|| : any_bad) \
    if (n >= codec_detail::kParallelMinElements)
    for (std::int64_t t = 0; t < steps; ++t) {
      const std::int64_t k0 = t * kStep, len = std::min(kStep, n - k0);
      alignas(64) std::uint16_t buf[kStep];
      const bool bad = convert_step(src + k0, len, buf);
      std::memcpy(dst + k0 * 2, buf, static_cast<std::size_t>(len) * 2);
      any_bad = any_bad || bad;
    }
    if (any_bad) throw_bad_row(rows, ctx);
  }

  bool gathers(const Device& dev) const override { return dev.is_host(); }

  void encode_gathered(const Device& dev, ConstDenseView src, const LocalId* index,
                       std::int64_t count, const CodecContext& ctx,
                       std::span<std::byte> out) const override {
    const codec_detail::BlockRows rows(src, index, count);
    codec_detail::check_call(*this, dev, out.size(), count, src.cols, "encode");
    // Row by row (each row is contiguous in src), kStep values at a time: every value is
    // converted on its own, so the bytes are those of the gathered block.
    const std::int64_t cols = src.cols;
    const auto convert_step = HalfLoops<kind>::pick().convert;
    bool any_bad = false;
#pragma omp parallel for schedule(static) reduction(|| : any_bad) \
    if (count * cols >= codec_detail::kParallelMinElements)
    for (std::int64_t i = 0; i < count; ++i) {
      const float* row = rows.row(i);
      std::byte* dst = out.data() + i * cols * 2;
      for (std::int64_t k0 = 0; k0 < cols; k0 += kStep) {
        const std::int64_t len = std::min(kStep, cols - k0);
        alignas(64) std::uint16_t buf[kStep];
        const bool bad = convert_step(row + k0, len, buf);
        std::memcpy(dst + k0 * 2, buf, static_cast<std::size_t>(len) * 2);
        any_bad = any_bad || bad;
      }
    }
    if (any_bad) throw_bad_row(rows, ctx);
  }

  bool scatters(const Device& dev) const override { return dev.is_host(); }

  void decode_scattered(const Device& dev, std::span<const std::byte> in, const CodecContext&,
                        DenseView dst, const LocalId* index, std::int64_t count) const override {
    codec_detail::check_call(*this, dev, in.size(), count, dst.cols, "decode");
    // Row by row, kStep values at a time widened into a buffer on the stack, then added.
    const std::int64_t cols = dst.cols;
    const auto widen = HalfLoops<kind>::pick().widen;
#pragma omp parallel for schedule(static) if (count * cols >= codec_detail::kParallelMinElements)
    for (std::int64_t i = 0; i < count; ++i) {
      const std::byte* src = in.data() + i * cols * 2;
      float* row = dst.row(index[i]);
      for (std::int64_t k0 = 0; k0 < cols; k0 += kStep) {
        const std::int64_t len = std::min(kStep, cols - k0);
        alignas(64) std::uint16_t buf[kStep];  // the wire bytes need not be 2-byte aligned
        alignas(64) float wide[kStep];
        std::memcpy(buf, src + 2 * k0, static_cast<std::size_t>(len) * 2);
        widen(buf, len, wide);
        codec_detail::add_row(wide, row + k0, len);
      }
    }
  }

  void decode(const Device& dev, std::span<const std::byte> in, const CodecContext&,
              DenseView rows) const override {
    if (dev.kind() == DeviceKind::cuda) {
      GNN_ASSERT(in.size() == encoded_size(rows.rows, rows.cols).total(), "codec ", name(),
                 ": decode buffer has ", in.size(), " bytes");
      return codec_cuda::half_decode(kind == Half::bf16, in, rows);
    }
    codec_detail::check_call(*this, dev, in.size(), rows.rows, rows.cols, "decode");
    const std::int64_t n = rows.rows * rows.cols;
    const std::byte* src = in.data();
    float* dst = rows.data;
    const auto widen = HalfLoops<kind>::pick().widen;
    const std::int64_t steps = (n + kStep - 1) / kStep;
#pragma omp parallel for schedule(static) if (n >= codec_detail::kParallelMinElements)
    for (std::int64_t t = 0; t < steps; ++t) {
      const std::int64_t k0 = t * kStep, len = std::min(kStep, n - k0);
      alignas(64) std::uint16_t buf[kStep];  // the wire bytes need not be 2-byte aligned
      std::memcpy(buf, src + 2 * k0, static_cast<std::size_t>(len) * 2);
      widen(buf, len, dst + k0);
    }
  }

 private:
  /// Throws the error of the first row with a non-finite value (the caller found one).
  [[noreturn]] void throw_bad_row(const codec_detail::BlockRows& rows,
                                  const CodecContext& ctx) const {
    std::vector<std::uint8_t> bad(static_cast<std::size_t>(rows.rows), 0);
    for (std::int64_t i = 0; i < rows.rows; ++i)
      bad[static_cast<std::size_t>(i)] =
          codec_detail::first_non_finite(rows.row(i), rows.cols) >= 0 ? 1 : 0;
    codec_detail::throw_first_non_finite(*this, rows, ctx, bad);
    throw Error("codec " + name() + ": a non-finite value was reported but not found");
  }

  /// The GPU path (compress/codecs_cuda.cu), byte-identical to the CPU path; a non-finite value
  /// is reported by encoding a host copy, which throws the CPU path's message.
  void encode_on_gpu(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
                     std::span<std::byte> out) const {
    GNN_ASSERT(out.size() == encoded_size(rows.rows, rows.cols).total(), "codec ", name(),
               ": encode buffer has ", out.size(), " bytes");
    if (codec_cuda::half_encode(kind == Half::bf16, rows, out)) return;
    std::vector<float> host(static_cast<std::size_t>(rows.rows * rows.cols));
    dev.copy_to_host(host.data(), rows.data, host.size() * sizeof(float));
    std::vector<GlobalId> ids;
    CodecContext host_ctx = ctx;
    if (ctx.row_ids) {
      ids.resize(static_cast<std::size_t>(rows.rows));
      dev.copy_to_host(ids.data(), ctx.row_ids, ids.size() * sizeof(GlobalId));
      host_ctx.row_ids = ids.data();
    }
    std::vector<std::byte> host_out(out.size());
    encode(*cpu_device(), ConstDenseView(host.data(), rows.rows, rows.cols), host_ctx, host_out);
    GNN_ASSERT(false, "codec ", name(), ": the GPU found a non-finite value the CPU codec did not");
  }
};

}  // namespace

std::unique_ptr<Codec> make_fp16_codec() { return std::make_unique<HalfCodec<Half::fp16>>(); }
std::unique_ptr<Codec> make_bf16_codec() { return std::make_unique<HalfCodec<Half::bf16>>(); }

}  // namespace halognn
