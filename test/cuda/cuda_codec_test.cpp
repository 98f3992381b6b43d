// The GPU codecs write the CPU codecs' bytes exactly, and decode them to the same floats
// (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compress/codec.hpp"
#include "test/cuda/cuda_test_util.hpp"

namespace halognn {
namespace {

class CudaCodecs : public test::CudaTest {
 protected:
  /// Encodes `x` with `codec` on both devices; expects identical bytes and identical decodes.
  void check_identical(const Codec& codec, const Matrix& x, const std::vector<GlobalId>& ids,
                       const CodecContext& base) {
    SCOPED_TRACE(codec.name() + " on " + std::to_string(x.rows()) + "x" + std::to_string(x.cols()));
    const std::size_t bytes = codec.encoded_size(x.rows(), x.cols()).total();
    CodecContext ctx = base;
    ctx.row_ids = ids.data();
    std::vector<std::byte> cpu_bytes(bytes);
    codec.encode(*cpu, x.view(), ctx, cpu_bytes);

    const Matrix xg = up(x);
    const Buffer<GlobalId> idsg = up(ids);
    // Offset by 3 bytes inside a larger buffer: peer blocks start at arbitrary byte offsets.
    Buffer<std::byte> outg(bytes + 3, gpu);
    CodecContext gctx = base;
    gctx.row_ids = idsg.data();
    codec.encode(*gpu, xg.view(), gctx, std::span<std::byte>(outg.data() + 3, bytes));
    const std::vector<std::byte> gpu_all = outg.to_host();
    ASSERT_EQ(std::memcmp(gpu_all.data() + 3, cpu_bytes.data(), bytes), 0) << "encoded bytes differ";

    Matrix y(x.rows(), x.cols()), yg(x.rows(), x.cols(), gpu);
    codec.decode(*cpu, cpu_bytes, ctx, y.view());
    codec.decode(*gpu, std::span<const std::byte>(outg.data() + 3, bytes), gctx, yg.view());
    test::expect_equal(yg.to_host(), y.to_host(), "decoded rows");
  }
};

std::vector<GlobalId> row_ids(std::int64_t n) {
  std::vector<GlobalId> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[i] = 5 * i + 3;
  return ids;
}

TEST_F(CudaCodecs, EveryCodecWritesTheSameBytesOnGpuAndCpu) {
  CodecContext base;
  base.seed = 1234;
  base.epoch = 7;
  base.layer = 1;
  base.direction = Direction::backward;
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {37, 13}, {1, 1}, {5, 0}, {0, 9}, {64, 128}, {3, 1001}};
  for (const std::string name : {"fp32", "fp16", "bf16", "q8", "q4", "q2", "q1", "q8-fp16meta",
                                 "q1-fp16meta", "q4-bf16meta", "q2-bf16meta"}) {
    const std::unique_ptr<Codec> codec = make_codec(name);
    for (const auto& [rows, cols] : shapes) {
      Matrix x = test::random_matrix(rows, cols, 100 + cols);
      // A constant row, a row with -0 and +0, and a row of large values.
      if (rows >= 3 && cols > 0) {
        for (std::int64_t j = 0; j < cols; ++j) {
          x(0, j) = 0.25f;
          x(1, j) = (j % 2) ? 0.0f : -0.0f;
          x(2, j) *= 3.0e4f;
        }
      }
      check_identical(*codec, x, row_ids(rows), base);
    }
  }
}

TEST_F(CudaCodecs, DifferentSeedsGiveDifferentStochasticBytes) {
  const std::unique_ptr<Codec> codec = make_codec("q1");
  const Matrix x = test::random_matrix(16, 64, 7);
  const std::vector<GlobalId> ids = row_ids(16);
  const Matrix xg = up(x);
  const Buffer<GlobalId> idsg = up(ids);
  const std::size_t bytes = codec->encoded_size(16, 64).total();
  std::vector<std::vector<std::byte>> out;
  for (const std::uint64_t seed : {1u, 2u}) {
    CodecContext ctx;
    ctx.seed = seed;
    ctx.row_ids = idsg.data();
    Buffer<std::byte> b(bytes, gpu);
    codec->encode(*gpu, xg.view(), ctx, std::span<std::byte>(b.data(), bytes));
    out.push_back(b.to_host());
  }
  EXPECT_NE(out[0], out[1]);  // so the identical-bytes test above is not comparing constants
}

TEST_F(CudaCodecs, NonFiniteInputGivesTheCpuErrorMessage) {
  Matrix x = test::random_matrix(4, 6, 8);
  x(2, 3) = std::numeric_limits<float>::infinity();
  const std::vector<GlobalId> ids = row_ids(4);
  for (const std::string name : {"q2", "fp16"}) {
    const std::unique_ptr<Codec> codec = make_codec(name);
    const std::size_t bytes = codec->encoded_size(4, 6).total();
    CodecContext ctx;
    ctx.row_ids = ids.data();
    std::vector<std::byte> host(bytes);
    std::string cpu_msg, gpu_msg;
    try {
      codec->encode(*cpu, x.view(), ctx, host);
    } catch (const Error& e) {
      cpu_msg = e.what();
    }
    const Matrix xg = up(x);
    const Buffer<GlobalId> idsg = up(ids);
    Buffer<std::byte> b(bytes, gpu);
    ctx.row_ids = idsg.data();
    try {
      codec->encode(*gpu, xg.view(), ctx, std::span<std::byte>(b.data(), bytes));
    } catch (const Error& e) {
      gpu_msg = e.what();
    }
    EXPECT_FALSE(cpu_msg.empty());
    EXPECT_EQ(gpu_msg, cpu_msg);
  }
}

}  // namespace
}  // namespace halognn
