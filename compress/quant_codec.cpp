// The stochastic b-bit codecs (Sylvie): q8, q4, q2, q1 with fp32, fp16 or bf16 metadata.
// Wire layout of a rows x cols block (docs/codecs.md is the specification):
//   metadata: rows pairs (lo, scale), row by row, each value 4 (fp32) or 2 (fp16/bf16) bytes LE;
//   payload:  the rows*cols b-bit integers in row-major order, packed LSB-first into bytes
//             (element k occupies bits [k*b, k*b + b) of the payload), padding bits zero.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "compress/codec_cuda.hpp"
#include "compress/codec_util.hpp"
#include "compress/quant_math.hpp"

namespace halognn {
namespace {


using quant::MetaFormat;
using quant::RowGrid;

/// Elements per parallel work item: a multiple of 8, so every item starts on a byte boundary
/// for every width and two items never share a byte.
constexpr std::int64_t kChunk = 8192;

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

/// Reads row i's grid from the metadata bytes.
RowGrid read_grid(const std::byte* meta, std::int64_t i, MetaFormat m) {
  RowGrid g;
  if (m == MetaFormat::f32) {
    std::memcpy(&g.lo, meta + i * 8, 4);
    std::memcpy(&g.scale, meta + i * 8 + 4, 4);
    return g;
  }
  std::uint16_t lo, scale;
  std::memcpy(&lo, meta + i * 4, 2);
  std::memcpy(&scale, meta + i * 4 + 2, 2);
  g.lo = quant::meta16_value(lo, m);
  g.scale = quant::meta16_value(scale, m);
  return g;
}

/// Elements whose Philox words are generated in one batch (64 blocks of four): small enough
/// to stay in L1 next to the chunk's q values, large enough to amortise the loop set-up.
constexpr std::int64_t kBatch = 256;

/// The q values of row elements [c, end) into q[0, end - c), for a row with scale != 0.
/// Two SIMD-friendly loops per batch: the Philox words of every block the batch touches
/// (CounterRng::blocks), then quant::quantize_word per element.
HALOGNN_SIMD_CLONES void quantize_run(const float* src, std::int64_t c, std::int64_t end,
                                      RowGrid g, float levels_f, const CounterRng& rng,
                                      std::uint64_t item, std::uint32_t* q) {
  alignas(64) std::uint32_t words[kBatch];
  for (std::int64_t s = c; s < end;) {
    const std::int64_t base = s & ~std::int64_t{3};  // first element of s's Philox block
    const std::int64_t stop = std::min(end, base + kBatch);
    rng.blocks(item, static_cast<std::uint64_t>(base) >> 2, (stop - base + 3) >> 2, words);
    const std::uint32_t* w = words + (s - base);
    const float* h = src + s;
    std::uint32_t* out = q + (s - c);
    const std::int64_t len = stop - s;
    for (std::int64_t j = 0; j < len; ++j) out[j] = quant::quantize_word(h[j], g, levels_f, w[j]);
    s = stop;
  }
}

/// Packs `n` q values into ceil(n * kBits / 8) bytes, LSB-first; q must hold a multiple of
/// 8 / kBits values past n that this zero-fills (the padding bits of the last byte).
template <int kBits>
void pack(std::uint32_t* q, std::int64_t n, std::uint8_t* dst) {
  constexpr int per_byte = 8 / kBits;
  const std::int64_t bytes = (n * kBits + 7) / 8;
  for (std::int64_t k = n; k < bytes * per_byte; ++k) q[k] = 0;
  for (std::int64_t b = 0; b < bytes; ++b) {
    std::uint32_t acc = 0;
    for (int t = 0; t < per_byte; ++t) acc |= q[b * per_byte + t] << (t * kBits);
    dst[b] = static_cast<std::uint8_t>(acc);
  }
}

/// Packs elements [k0, k1) of the block (k = row * cols + column) into the payload: the q
/// values of the chunk first (row run by row run), then the bits.
template <int kBits>
void encode_chunk(ConstDenseView rows, const RowGrid* grids, const GlobalId* ids,
                  const CounterRng& rng, std::int64_t k0, std::int64_t k1, std::uint8_t* payload) {
  constexpr std::uint32_t levels = (1u << kBits) - 1u;
  alignas(64) std::uint32_t q[kChunk];  // 32-bit lanes: the q loop vectorises without narrowing
  const std::int64_t cols = rows.cols;
  std::int64_t r = k0 / cols, c = k0 % cols;
  for (std::int64_t k = k0; k < k1;) {
    const std::int64_t end = std::min(cols, c + (k1 - k));
    const RowGrid g = grids[r];
    if (g.scale == 0.0f)
      std::fill(q + (k - k0), q + (k - k0) + (end - c), 0u);  // constant row: all lo
    else
      quantize_run(rows.row(r), c, end, g, static_cast<float>(levels), rng,
                   static_cast<std::uint64_t>(ids[r]), q + (k - k0));
    k += end - c;
    c = end;
    if (c == cols) {
      ++r;
      c = 0;
    }
  }
  pack<kBits>(q, k1 - k0, payload + k0 * kBits / 8);
}

/// Minimum and maximum of a row and whether every value is finite. The comparisons run on
/// integer keys that order finite floats like their values (negative floats get their magnitude
/// bits flipped), because integer min/max reductions vectorise while float ones need
/// -ffinite-math-only. NaNs get keys too but are caught by the finiteness test; -0 orders below
/// +0 here, and make_grid maps a zero bound to +0 either way.
struct RowRange {
  float lo = 0.0f, hi = 0.0f;
  bool finite = true;
};

/// The order-preserving key of a float's bits, and its inverse (the same map).
inline std::int32_t order_key(std::uint32_t bits) {
  const auto negative_mask = static_cast<std::uint32_t>(static_cast<std::int32_t>(bits) >> 31);
  return static_cast<std::int32_t>(bits ^ (negative_mask >> 1));
}

HALOGNN_SIMD_CLONES RowRange row_range(const float* src, std::int64_t cols) {
  RowRange out;
  if (cols == 0) return out;  // an empty row gets the constant grid (0, 0)
  std::int32_t lo = order_key(f16::float_bits(src[0])), hi = lo;
  std::uint32_t bad = 0;
  for (std::int64_t j = 0; j < cols; ++j) {
    const std::uint32_t bits = f16::float_bits(src[j]);
    const std::int32_t key = order_key(bits);
    lo = key < lo ? key : lo;
    hi = key > hi ? key : hi;
    bad |= (bits & 0x7F800000u) == 0x7F800000u ? 1u : 0u;
  }
  out.lo = f16::bits_float(static_cast<std::uint32_t>(order_key(static_cast<std::uint32_t>(lo))));
  out.hi = f16::bits_float(static_cast<std::uint32_t>(order_key(static_cast<std::uint32_t>(hi))));
  out.finite = bad == 0;
  return out;
}

/// Unpacks elements [k0, k1) from the payload into rows.
template <int kBits>
void decode_chunk(const std::uint8_t* payload, const std::byte* meta, MetaFormat m,
                  std::int64_t k0, std::int64_t k1, DenseView rows) {
  constexpr std::uint32_t mask = (1u << kBits) - 1u;
  const std::int64_t cols = rows.cols;
  const std::uint8_t* src = payload + k0 * kBits / 8;
  std::uint32_t acc = 0;
  int left = 0;
  std::int64_t r = k0 / cols, c = k0 % cols;
  for (std::int64_t k = k0; k < k1;) {
    const std::int64_t end = std::min(cols, c + (k1 - k));
    const RowGrid g = read_grid(meta, r, m);
    float* dst = rows.row(r);
    for (std::int64_t j = c; j < end; ++j) {
      if (left == 0) {
        acc = *src++;
        left = 8;
      }
      dst[j] = quant::decode_value(acc & mask, g);
      acc >>= kBits;
      left -= kBits;
    }
    k += end - c;
    c = end;
    if (c == cols) {
      ++r;
      c = 0;
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
    codec_detail::check_call(*this, dev, out.size(), rows.rows, rows.cols, "encode");
    const std::int64_t n_rows = rows.rows, cols = rows.cols;
    if (n_rows == 0) return;
    if (!ctx.row_ids)
      throw Error("codec " + name() + ": encode needs the global row ids (CodecContext::row_ids)");
    const std::uint32_t levels = (1u << bits_) - 1u;
    const std::size_t meta_bytes = encoded_size(n_rows, cols).metadata;
    std::byte* meta = out.data();
    auto* payload = reinterpret_cast<std::uint8_t*>(out.data() + meta_bytes);

    // Pass 1: per-row range, grid and metadata. Failures are recorded and reported for the
    // smallest failing row after the loop (no exceptions inside the parallel region).
    std::vector<RowGrid> grids(static_cast<std::size_t>(n_rows));
    std::vector<std::uint8_t> status(static_cast<std::size_t>(n_rows), 0);  // 1 non-finite, 2+ grid
    bool any_bad = false;
#pragma omp parallel for schedule(static) reduction(|| : any_bad) \
    if (n_rows * cols >= codec_detail::kParallelMinElements)
    for (std::int64_t i = 0; i < n_rows; ++i) {
      const RowRange range = row_range(rows.row(i), cols);
      if (!range.finite) {
        status[i] = 1;
        any_bad = true;
        continue;
      }
      std::uint16_t lo_bits, scale_bits;
      const auto st = quant::make_grid(range.lo, range.hi, levels, meta_, grids[i], lo_bits, scale_bits);
      if (st != quant::GridStatus::ok) {
        status[i] = static_cast<std::uint8_t>(1 + static_cast<int>(st));
        any_bad = true;
        continue;
      }
      if (meta_ == MetaFormat::f32) {
        std::memcpy(meta + i * 8, &grids[i].lo, 4);
        std::memcpy(meta + i * 8 + 4, &grids[i].scale, 4);
      } else {
        std::memcpy(meta + i * 4, &lo_bits, 2);
        std::memcpy(meta + i * 4 + 2, &scale_bits, 2);
      }
    }
    if (any_bad) throw_row_error(rows, ctx, status);

    // Pass 2: the payload, in byte-aligned chunks of elements.
    const CounterRng rng(quant::quantize_key(ctx.seed, ctx.epoch, ctx.layer,
                                             static_cast<std::uint32_t>(ctx.direction)));
    const std::int64_t n = n_rows * cols;
    const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= codec_detail::kParallelMinElements)
    for (std::int64_t t = 0; t < chunks; ++t) {
      const std::int64_t k0 = t * kChunk, k1 = std::min(n, k0 + kChunk);
      switch (bits_) {
        case 8: encode_chunk<8>(rows, grids.data(), ctx.row_ids, rng, k0, k1, payload); break;
        case 4: encode_chunk<4>(rows, grids.data(), ctx.row_ids, rng, k0, k1, payload); break;
        case 2: encode_chunk<2>(rows, grids.data(), ctx.row_ids, rng, k0, k1, payload); break;
        default: encode_chunk<1>(rows, grids.data(), ctx.row_ids, rng, k0, k1, payload); break;
      }
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
    const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= codec_detail::kParallelMinElements)
    for (std::int64_t t = 0; t < chunks; ++t) {
      const std::int64_t k0 = t * kChunk, k1 = std::min(n, k0 + kChunk);
      switch (bits_) {
        case 8: decode_chunk<8>(payload, meta, meta_, k0, k1, rows); break;
        case 4: decode_chunk<4>(payload, meta, meta_, k0, k1, rows); break;
        case 2: decode_chunk<2>(payload, meta, meta_, k0, k1, rows); break;
        default: decode_chunk<1>(payload, meta, meta_, k0, k1, rows); break;
      }
    }
  }

 private:
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

  /// Throws for the smallest block row whose status is not ok.
  void throw_row_error(ConstDenseView rows, const CodecContext& ctx,
                       const std::vector<std::uint8_t>& status) const {
    std::vector<std::uint8_t> non_finite(status.size(), 0);
    for (std::int64_t i = 0; i < rows.rows; ++i) {
      if (status[i] == 0) continue;
      if (status[i] == 1) {
        non_finite[i] = 1;
        codec_detail::throw_first_non_finite(*this, rows, ctx, non_finite);
      }
      const float* src = rows.row(i);
      const float lo = *std::min_element(src, src + rows.cols);
      const float hi = *std::max_element(src, src + rows.cols);
      const auto st = static_cast<quant::GridStatus>(status[i] - 1);
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
      throw Error("codec " + name() + ": cannot quantize " + codec_detail::row_label(ctx, i) +
                  ": " + why + (meta_ == MetaFormat::f32 ? "" : " (the fp32-metadata codec q" +
                                std::to_string(bits_) + " may fit)"));
    }
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
