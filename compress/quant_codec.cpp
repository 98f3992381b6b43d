// The stochastic b-bit codecs (Sylvie): q8, q4, q2, q1 with fp32, fp16 or bf16 metadata.
// Wire layout of a rows x cols block (docs/codecs.md is the specification):
//   metadata: rows pairs (lo, scale), row by row, each value 4 (fp32) or 2 (fp16/bf16) bytes LE;
//   payload:  the rows*cols b-bit integers in row-major order, packed LSB-first into bytes
//             (element k occupies bits [k*b, k*b + b) of the payload), padding bits zero.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "compress/codec_cuda.hpp"
#include "compress/codec_util.hpp"
#include "compress/quant_math.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/kernels/reference/simd.hpp"

namespace halognn {
namespace {


using quant::MetaFormat;
using quant::RowGrid;

/// Elements per parallel work item (about; whole rows, a multiple of 8 of them, so every item
/// starts on a byte boundary for every width and two items never share a byte).
constexpr std::int64_t kItemElements = 8192;

/// Philox words generated in one batch (two elements a word, so 512 elements): small enough to
/// stay in L1 next to the row's q values, large enough to amortise the call.
constexpr std::int64_t kWordBatch = 256;

/// Philox blocks of one row below which encode_rows draws the words of several rows at once
/// (CounterRng::item_blocks): 64 blocks are four AVX-512 vectors of them, the multiplications
/// that one vector round needs in flight.
constexpr std::int64_t kPhiloxBatchBlocks = 64;

const char* meta_suffix(MetaFormat m) {
  switch (m) {
    case MetaFormat::f32: return "";
    case MetaFormat::f16: return "-fp16meta";
    default: return "-bf16meta";
  }
}

const char* meta_name(MetaFormat m) { return m == MetaFormat::f16 ? "fp16" : "bf16"; }

std::string format_float(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

/// Writes row i's grid into the metadata bytes.
void write_grid(std::byte* meta, std::int64_t i, MetaFormat m, RowGrid g, std::uint16_t lo_bits,
                std::uint16_t scale_bits) {
  if (m == MetaFormat::f32) {
    std::memcpy(meta + i * 8, &g.lo, 4);
    std::memcpy(meta + i * 8 + 4, &g.scale, 4);
  } else {
    std::memcpy(meta + i * 4, &lo_bits, 2);
    std::memcpy(meta + i * 4 + 2, &scale_bits, 2);
  }
}

struct RowRange {
  float lo = 0.0f, hi = 0.0f;
  bool finite = true;
};

/// The order-preserving key of a float's bits, and its inverse (the same map): negative floats
/// get their magnitude bits flipped.
inline std::int32_t order_key(std::uint32_t bits) {
  const auto negative_mask = static_cast<std::uint32_t>(static_cast<std::int32_t>(bits) >> 31);
  return static_cast<std::int32_t>(bits ^ (negative_mask >> 1));
}

#define HALOGNN_ISA_BODY "compress/quant_rows.inc"
#include "core/kernels/reference/per_isa.inc"
#undef HALOGNN_ISA_BODY

/// The row loops of the CPU's instruction set for b = kBits.
template <int kBits>
struct RowLoops {
  using Encode = std::int64_t (*)(const codec_detail::BlockRows&, std::int64_t, std::int64_t,
                                  MetaFormat,
                                  const GlobalId*, const CounterRng&, std::byte*, std::uint8_t*,
                                  std::uint32_t*);
  using Decode = void (*)(const std::uint8_t*, const std::byte*, MetaFormat, std::int64_t,
                          std::int64_t, std::int64_t, float*);
  Encode encode;
  Decode decode;
  static RowLoops pick() {
    switch (kernels::cpu_isa()) {
      case kernels::CpuIsa::avx512: return {isa_avx512::encode_rows<kBits>, isa_avx512::decode_rows<kBits>};
      case kernels::CpuIsa::avx2: return {isa_avx2::encode_rows<kBits>, isa_avx2::decode_rows<kBits>};
      case kernels::CpuIsa::sse2: break;
    }
    return {isa_sse2::encode_rows<kBits>, isa_sse2::decode_rows<kBits>};
  }
};

/// Rows per parallel work item for rows of `cols` values: a multiple of 8, about kItemElements.
std::int64_t rows_per_item(std::int64_t cols) {
  return std::max<std::int64_t>(8, kItemElements / std::max<std::int64_t>(cols, 1) / 8 * 8);
}

/// Encodes a whole block with the loops of one width: items of whole rows in parallel, each in
/// one pass over its values. Returns the smallest row that cannot be encoded, or -1.
template <int kBits>
std::int64_t encode_block(const codec_detail::BlockRows& rows, MetaFormat m, const GlobalId* ids,
                          const CounterRng& rng, std::byte* meta, std::uint8_t* payload) {
  const auto loops = RowLoops<kBits>::pick();
  const std::int64_t per_item = rows_per_item(rows.cols);
  const std::int64_t items = (rows.rows + per_item - 1) / per_item;
  std::int64_t first_bad = rows.rows;
#pragma omp parallel reduction(min : first_bad) \
    if (rows.rows * rows.cols >= codec_detail::kParallelMinElements)
  {
    std::vector<std::uint32_t> q(static_cast<std::size_t>(per_item * rows.cols + 8));
#pragma omp for schedule(static)
    for (std::int64_t t = 0; t < items; ++t) {
      const std::int64_t r0 = t * per_item, r1 = std::min(rows.rows, r0 + per_item);
      const std::int64_t bad = loops.encode(rows, r0, r1, m, ids, rng, meta, payload, q.data());
      if (bad >= 0) first_bad = std::min(first_bad, bad);
    }
  }
  return first_bad < rows.rows ? first_bad : -1;
}

template <int kBits>
void decode_block(const std::uint8_t* payload, const std::byte* meta, MetaFormat m, DenseView rows) {
  const auto loops = RowLoops<kBits>::pick();
  const std::int64_t per_item = rows_per_item(rows.cols);
  const std::int64_t items = (rows.rows + per_item - 1) / per_item;
#pragma omp parallel for schedule(static) \
    if (rows.rows * rows.cols >= codec_detail::kParallelMinElements)
  for (std::int64_t t = 0; t < items; ++t) {
    const std::int64_t r0 = t * per_item;
    loops.decode(payload, meta, m, r0, std::min(rows.rows, r0 + per_item), rows.cols, rows.row(r0));
  }
}

/// decode_block added into rows of `dst` (block row i into dst.row(index[i]), the indices
/// distinct): each item decoded into a buffer of its own that stays in cache, then added.
template <int kBits>
void decode_block_scattered(const std::uint8_t* payload, const std::byte* meta, MetaFormat m,
                            const LocalId* index, std::int64_t count, DenseView dst) {
  const auto loops = RowLoops<kBits>::pick();
  const std::int64_t cols = dst.cols, per_item = rows_per_item(cols);
  const std::int64_t items = (count + per_item - 1) / per_item;
#pragma omp parallel if (count * cols >= codec_detail::kParallelMinElements)
  {
    std::vector<float> rows(static_cast<std::size_t>(per_item * cols));
#pragma omp for schedule(static)
    for (std::int64_t t = 0; t < items; ++t) {
      const std::int64_t r0 = t * per_item, r1 = std::min(count, r0 + per_item);
      loops.decode(payload, meta, m, r0, r1, cols, rows.data());
      for (std::int64_t i = r0; i < r1; ++i)
        codec_detail::add_row(rows.data() + (i - r0) * cols, dst.row(index[i]), cols);
    }
  }
}

/// Stochastic b-bit quantization with per-row (lo, scale); see quant_math.hpp for the arithmetic.
class QuantCodec final : public Codec {
 public:
  QuantCodec(int bits, MetaFormat meta) : bits_(bits), meta_(meta) {}

  std::string name() const override {
    std::string s = "q";
    s += std::to_string(bits_);
    s += meta_suffix(meta_);
    return s;
  }
  bool lossless() const override { return false; }
  EncodedSize encoded_size(std::int64_t rows, std::int64_t cols) const override {
    const auto bits_total = static_cast<std::size_t>(rows * cols) * static_cast<std::size_t>(bits_);
    return {(bits_total + 7) / 8,
            static_cast<std::size_t>(rows) * 2 * static_cast<std::size_t>(quant::meta_value_bytes(meta_))};
  }

  void encode(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
              std::span<std::byte> out) const override {
    if (dev.kind() == DeviceKind::cuda) return encode_on_gpu(dev, rows, ctx, out);
    encode_host(dev, rows, ctx, out);
  }

  bool gathers(const Device& dev) const override { return dev.is_host(); }

  void encode_gathered(const Device& dev, ConstDenseView src, const LocalId* index,
                       std::int64_t count, const CodecContext& ctx,
                       std::span<std::byte> out) const override {
    encode_host(dev, codec_detail::BlockRows(src, index, count), ctx, out);
  }

  bool scatters(const Device& dev) const override { return dev.is_host(); }

  void decode_scattered(const Device& dev, std::span<const std::byte> in, const CodecContext&,
                        DenseView dst, const LocalId* index, std::int64_t count) const override {
    codec_detail::check_call(*this, dev, in.size(), count, dst.cols, "decode");
    if (count * dst.cols == 0) return;
    const std::byte* meta = in.data();
    const auto* payload =
        reinterpret_cast<const std::uint8_t*>(in.data() + encoded_size(count, dst.cols).metadata);
    switch (bits_) {
      case 8: return decode_block_scattered<8>(payload, meta, meta_, index, count, dst);
      case 4: return decode_block_scattered<4>(payload, meta, meta_, index, count, dst);
      case 2: return decode_block_scattered<2>(payload, meta, meta_, index, count, dst);
      default: return decode_block_scattered<1>(payload, meta, meta_, index, count, dst);
    }
  }

  void decode(const Device& dev, std::span<const std::byte> in, const CodecContext&,
              DenseView rows) const override {
    if (dev.kind() == DeviceKind::cuda) {
      GNN_ASSERT(in.size() == encoded_size(rows.rows, rows.cols).total(), "codec ", name(),
                 ": decode buffer has ", in.size(), " bytes, the block needs ",
                 encoded_size(rows.rows, rows.cols).total());
      return codec_cuda::quant_decode(bits_, meta_, in, rows);
    }
    codec_detail::check_call(*this, dev, in.size(), rows.rows, rows.cols, "decode");
    const std::int64_t n = rows.rows * rows.cols;
    if (n == 0) return;
    const std::byte* meta = in.data();
    const auto* payload =
        reinterpret_cast<const std::uint8_t*>(in.data() + encoded_size(rows.rows, rows.cols).metadata);
    switch (bits_) {
      case 8: return decode_block<8>(payload, meta, meta_, rows);
      case 4: return decode_block<4>(payload, meta, meta_, rows);
      case 2: return decode_block<2>(payload, meta, meta_, rows);
      default: return decode_block<1>(payload, meta, meta_, rows);
    }
  }

 private:
  /// The CPU path, for a plain block and a gathered one alike.
  void encode_host(const Device& dev, const codec_detail::BlockRows& rows, const CodecContext& ctx,
                   std::span<std::byte> out) const {
    codec_detail::check_call(*this, dev, out.size(), rows.rows, rows.cols, "encode");
    const std::int64_t n_rows = rows.rows, cols = rows.cols;
    if (n_rows == 0) return;
    if (!ctx.row_ids)
      throw Error("codec " + name() + ": encode needs the global row ids (CodecContext::row_ids)");
    const std::size_t meta_bytes = encoded_size(n_rows, cols).metadata;
    std::byte* meta = out.data();
    auto* payload = reinterpret_cast<std::uint8_t*>(out.data() + meta_bytes);
    const CounterRng rng(quant::quantize_key(ctx.seed, ctx.epoch, ctx.layer,
                                             static_cast<std::uint32_t>(ctx.direction)));
    std::int64_t bad = -1;
    switch (bits_) {
      case 8: bad = encode_block<8>(rows, meta_, ctx.row_ids, rng, meta, payload); break;
      case 4: bad = encode_block<4>(rows, meta_, ctx.row_ids, rng, meta, payload); break;
      case 2: bad = encode_block<2>(rows, meta_, ctx.row_ids, rng, meta, payload); break;
      default: bad = encode_block<1>(rows, meta_, ctx.row_ids, rng, meta, payload); break;
    }
    if (bad >= 0) throw_row_error(rows, ctx, bad);
  }

  /// The GPU path (compress/codecs_cuda.cu): the same bytes as the CPU path. When a row cannot be
  /// encoded, the block is encoded again on a host copy, which throws the CPU path's message.
  void encode_on_gpu(const Device& dev, ConstDenseView rows, const CodecContext& ctx,
                     std::span<std::byte> out) const {
    const std::size_t expect = encoded_size(rows.rows, rows.cols).total();
    GNN_ASSERT(out.size() == expect, "codec ", name(), ": encode buffer has ", out.size(),
               " bytes, the ", rows.rows, " x ", rows.cols, " block needs ", expect);
    if (rows.rows == 0) return;
    if (!ctx.row_ids)
      throw Error("codec " + name() + ": encode needs the global row ids (CodecContext::row_ids)");
    if (codec_cuda::quant_encode(bits_, meta_, rows, ctx, out)) return;
    std::vector<float> host(static_cast<std::size_t>(rows.rows * rows.cols));
    std::vector<GlobalId> ids(static_cast<std::size_t>(rows.rows));
    dev.copy_to_host(host.data(), rows.data, host.size() * sizeof(float));
    dev.copy_to_host(ids.data(), ctx.row_ids, ids.size() * sizeof(GlobalId));
    std::vector<std::byte> host_out(expect);
    CodecContext host_ctx = ctx;
    host_ctx.row_ids = ids.data();
    encode(*cpu_device(), ConstDenseView(host.data(), rows.rows, rows.cols), host_ctx, host_out);
    GNN_ASSERT(false, "codec ", name(), ": the GPU rejected a block the CPU codec accepts");
  }

  /// Throws the error of block row i, the smallest one that cannot be encoded.
  [[noreturn]] void throw_row_error(const codec_detail::BlockRows& rows, const CodecContext& ctx,
                                    std::int64_t i) const {
    const float* src = rows.row(i);
    const RowRange range = isa_sse2::row_range(src, rows.cols);
    if (!range.finite) {
      std::vector<std::uint8_t> non_finite(static_cast<std::size_t>(rows.rows), 0);
      non_finite[static_cast<std::size_t>(i)] = 1;
      codec_detail::throw_first_non_finite(*this, rows, ctx, non_finite);
    }
    RowGrid g;
    std::uint16_t lo_bits, scale_bits;
    const auto st = quant::make_grid(range.lo, range.hi, (1u << bits_) - 1u, meta_, g, lo_bits, scale_bits);
    const float lo = range.lo, hi = range.hi;
    std::string why;
    if (st == quant::GridStatus::lo_overflow)
      why = "its minimum " + format_float(lo) + " is below the " + meta_name(meta_) +
            " metadata range";
    else if (st == quant::GridStatus::scale_overflow)
      why = "its range max - min = " + format_float(static_cast<double>(hi) - lo) +
            " needs a scale beyond the " +
            (meta_ == MetaFormat::f32 ? std::string("float32") : std::string(meta_name(meta_))) +
            " range";
    else
      why = "its range [" + format_float(lo) + ", " + format_float(hi) +
            "] overflows float32 when dequantized";
    throw Error("codec " + name() + ": cannot quantize " + codec_detail::row_label(ctx, i) + ": " +
                why + (meta_ == MetaFormat::f32 ? "" : " (the fp32-metadata codec q" +
                       std::to_string(bits_) + " may fit)"));
  }

  int bits_;
  MetaFormat meta_;
};

}  // namespace

std::unique_ptr<Codec> make_quant_codec(int bits, quant::MetaFormat meta) {
  GNN_ASSERT(bits == 1 || bits == 2 || bits == 4 || bits == 8, "quantization width ", bits);
  return std::make_unique<QuantCodec>(bits, meta);
}

}  // namespace halognn
