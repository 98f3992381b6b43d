// Halo exchange over MPI on random partitions: forward fills halo rows with the owners' rows,
// backward adds halo gradients into the owners' rows, several exchanges can be in flight, and the
// bytes recorded equal the codec's sizes and what the transport moved. Runs at any rank count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "comm/halo_exchange.hpp"
#include "comm/halo_plan.hpp"
#include "comm/transport.hpp"
#include "compress/codec.hpp"
#include "core/kernels/kernels.hpp"
#include "test/comm/checking_codec.hpp"
#include "test/comm/random_partition.hpp"

namespace halognn {
namespace {

using test::feature_value;
using test::gradient_value;

struct Scenario {
  test::RandomGraph graph;
  LocalPartition part;
  std::shared_ptr<const HaloPlan> plan;
};

Scenario make_setup(std::uint64_t seed, GlobalId n, Rank parts, Rank rank, int degree,
                 bool isolate_rank0 = false) {
  Scenario s;
  s.graph = test::make_random_graph(seed, n, parts, degree, isolate_rank0);
  s.part = test::local_partition_of(s.graph, rank);
  s.plan = std::make_shared<const HaloPlan>(HaloPlan::build(s.part, cpu_device()));
  return s;
}

Matrix owned_features(const LocalPartition& p, std::uint64_t seed, std::int64_t f) {
  Matrix m(p.num_owned, f);
  for (LocalId i = 0; i < p.num_owned; ++i)
    for (std::int64_t j = 0; j < f; ++j) m(i, j) = feature_value(seed, p.global_ids[i], j);
  return m;
}

Matrix nan_matrix(std::int64_t rows, std::int64_t f) {
  Matrix m(rows, f);
  for (float& x : m.host()) x = std::numeric_limits<float>::quiet_NaN();
  return m;
}

Matrix halo_gradients(const LocalPartition& p, std::uint64_t seed, std::int64_t f) {
  Matrix m(p.num_halo, f);
  for (LocalId h = 0; h < p.num_halo; ++h)
    for (std::int64_t j = 0; j < f; ++j)
      m(h, j) = gradient_value(seed, p.rank, p.global_ids[p.num_owned + h], j);
  return m;
}

std::int64_t global_sum(std::int64_t x) {
  std::int64_t out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

/// Halo rows that differ from the owner's feature row (summed over ranks).
std::int64_t halo_mismatches(const LocalPartition& p, const Matrix& halo, std::uint64_t seed) {
  std::int64_t bad = 0;
  for (LocalId h = 0; h < p.num_halo; ++h)
    for (std::int64_t j = 0; j < halo.cols(); ++j)
      if (halo(h, j) != feature_value(seed, p.global_ids[p.num_owned + h], j)) ++bad;
  return global_sum(bad);
}

/// Owned gradient entries that differ from initial + the sum of every holder's halo gradient
/// (summed over ranks). Values are multiples of 1/256, so the sums are exact in any order.
std::int64_t gradient_mismatches(const test::RandomGraph& g, const LocalPartition& p,
                                 const Matrix& owned_grad, std::uint64_t init_seed,
                                 std::uint64_t grad_seed) {
  std::int64_t bad = 0;
  for (LocalId i = 0; i < p.num_owned; ++i) {
    const GlobalId v = p.global_ids[i];
    for (std::int64_t j = 0; j < owned_grad.cols(); ++j) {
      float expected = feature_value(init_seed, v, j);
      for (Rank q = 0; q < g.parts; ++q)
        if (test::in_halo_of(g, q, v)) expected += gradient_value(grad_seed, q, v, j);
      if (owned_grad(i, j) != expected) ++bad;
    }
  }
  return global_sum(bad);
}

class HaloExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport = make_mpi_transport(MPI_COMM_WORLD);
    rank = transport->rank();
    size = transport->size();
  }
  std::unique_ptr<Transport> transport;
  Rank rank = 0, size = 1;
};

TEST_F(HaloExchangeTest, ForwardFillsEveryHaloRowWithItsOwnersRow) {
  for (std::uint64_t seed : {1u, 2u, 3u})
    for (std::int64_t f : {1, 5, 16}) {
      Scenario s = make_setup(seed, 300, size, rank, 3);
      TrafficCounter traffic;
      HaloExchange ex(s.plan, *transport, traffic);
      Matrix owned = owned_features(s.part, seed, f);
      Matrix halo = nan_matrix(s.part.num_halo, f);
      Request r = ex.start_forward(0, 0, seed, owned.cview(), halo.view());
      EXPECT_TRUE(r.pending());
      r.wait();
      EXPECT_FALSE(r.pending());
      EXPECT_EQ(halo_mismatches(s.part, halo, seed), 0) << "seed " << seed << ", F " << f;
    }
}

TEST_F(HaloExchangeTest, BackwardAddsEveryHaloGradientIntoItsOwnersRow) {
  for (std::uint64_t seed : {4u, 5u})
    for (std::int64_t f : {1, 7}) {
      Scenario s = make_setup(seed, 300, size, rank, 4);
      TrafficCounter traffic;
      HaloExchange ex(s.plan, *transport, traffic);
      Matrix halo_grad = halo_gradients(s.part, seed, f);
      Matrix owned_grad = owned_features(s.part, seed + 100, f);
      Request r = ex.start_backward(0, 0, seed, halo_grad.cview(), owned_grad.view());
      r.wait();
      EXPECT_EQ(gradient_mismatches(s.graph, s.part, owned_grad, seed + 100, seed), 0)
          << "seed " << seed << ", F " << f;
    }
}

TEST_F(HaloExchangeTest, SeveralLayersInFlightCompleteInAnyOrder) {
  const std::uint64_t seed = 9;
  Scenario s = make_setup(seed, 400, size, rank, 3);
  TrafficCounter traffic;
  HaloExchange ex(s.plan, *transport, traffic);
  const std::vector<std::int64_t> widths = {8, 3, 5};
  std::vector<Matrix> owned, halo, halo_grad, owned_grad;
  std::vector<Request> reqs;
  for (std::size_t l = 0; l < widths.size(); ++l) {
    owned.push_back(owned_features(s.part, seed, widths[l]));
    halo.push_back(nan_matrix(s.part.num_halo, widths[l]));
    halo_grad.push_back(halo_gradients(s.part, seed + l, widths[l]));
    owned_grad.push_back(owned_features(s.part, seed + 50, widths[l]));
  }
  for (std::size_t l = 0; l < widths.size(); ++l) {
    const int layer = static_cast<int>(l);
    reqs.push_back(ex.start_forward(layer, 3, seed, owned[l].cview(), halo[l].view()));
    reqs.push_back(ex.start_backward(layer, 3, seed, halo_grad[l].cview(), owned_grad[l].view()));
  }
  // A second forward exchange of layer 0 while the first is still in flight gets its own
  // buffers and matches in posting order.
  Matrix halo_again = nan_matrix(s.part.num_halo, widths[0]);
  reqs.push_back(ex.start_forward(0, 4, seed, owned[0].cview(), halo_again.view()));
  for (auto it = reqs.rbegin(); it != reqs.rend(); ++it) it->wait();
  for (std::size_t l = 0; l < widths.size(); ++l) {
    EXPECT_EQ(halo_mismatches(s.part, halo[l], seed), 0) << "layer " << l;
    EXPECT_EQ(gradient_mismatches(s.graph, s.part, owned_grad[l], seed + 50, seed + l), 0)
        << "layer " << l;
  }
  EXPECT_EQ(halo_mismatches(s.part, halo_again, seed), 0);
}

TEST_F(HaloExchangeTest, SharedWorkspacesServeEveryLayerWithTheLargestExchangesMemory) {
  const std::uint64_t seed = 11;
  Scenario s = make_setup(seed, 400, size, rank, 3);
  const std::vector<std::int64_t> widths = {8, 3, 5};
  TrafficCounter traffic_own, traffic_shared;
  HaloExchange own(s.plan, *transport, traffic_own), shared(s.plan, *transport, traffic_shared);
  std::vector<HaloExchange::Shape> shapes;
  for (std::size_t l = 0; l < widths.size(); ++l) {
    shapes.push_back({static_cast<int>(l), Direction::forward, widths[l]});
    shapes.push_back({static_cast<int>(l), Direction::backward, widths[l]});
  }
  shared.share_workspaces(shapes);
  EXPECT_EQ(shared.workspace_bytes(), 0u);  // allocated at the first exchange, not before
  for (HaloExchange* ex : {&own, &shared}) {
    for (std::size_t l = 0; l < widths.size(); ++l) {
      const int layer = static_cast<int>(l);
      Matrix owned = owned_features(s.part, seed, widths[l]);
      Matrix halo = nan_matrix(s.part.num_halo, widths[l]);
      ex->start_forward(layer, 0, seed, owned.cview(), halo.view()).wait();
      EXPECT_EQ(halo_mismatches(s.part, halo, seed), 0) << "layer " << l;
      Matrix halo_grad = halo_gradients(s.part, seed + l, widths[l]);
      Matrix owned_grad = owned_features(s.part, seed + 50, widths[l]);
      ex->start_backward(layer, 0, seed, halo_grad.cview(), owned_grad.view()).wait();
      EXPECT_EQ(gradient_mismatches(s.graph, s.part, owned_grad, seed + 50, seed + l), 0)
          << "layer " << l;
    }
  }
  // Per (layer, direction) the buffers add up; shared, the set is the largest exchange's, here
  // the widest layer's (8 columns of fp32), and the rows are lent: forward, the S sent slots
  // are gathered into the message and the R received ones land in the halo rows themselves;
  // backward, the R halo gradients are sent from where they are and the S received ones
  // added from the message. So S rows in both directions, and no row buffer (fp32 blocks are
  // the rows: RawRowCodecsNeedNoRowBuffers).
  const std::size_t sends = static_cast<std::size_t>(s.plan->send().total());
  ASSERT_TRUE(s.plan->recv().is_identity());
  const std::size_t row = 4 * 8;
  const std::size_t widest = row * sends;
  EXPECT_EQ(shared.workspace_bytes(), widest);
  if (sends + static_cast<std::size_t>(s.plan->recv().total()) > 0) {
    EXPECT_LT(shared.workspace_bytes(), own.workspace_bytes());
  }
  EXPECT_EQ(traffic_shared.total().total(), traffic_own.total().total());
  // Two exchanges in flight at once: the second gets its own buffers; one wider than any
  // registered shape grows the set.
  Matrix owned_a = owned_features(s.part, seed, 8), owned_b = owned_features(s.part, seed, 12);
  Matrix halo_a = nan_matrix(s.part.num_halo, 8), halo_b = nan_matrix(s.part.num_halo, 12);
  Request a = shared.start_forward(0, 1, seed, owned_a.cview(), halo_a.view());
  Request b = shared.start_forward(1, 1, seed, owned_b.cview(), halo_b.view());
  b.wait();
  a.wait();
  EXPECT_EQ(halo_mismatches(s.part, halo_a, seed), 0);
  EXPECT_EQ(halo_mismatches(s.part, halo_b, seed), 0);
  Matrix halo_c = nan_matrix(s.part.num_halo, 12);
  shared.start_forward(2, 2, seed, owned_b.cview(), halo_c.view()).wait();
  EXPECT_EQ(halo_mismatches(s.part, halo_c, seed), 0);
}

TEST_F(HaloExchangeTest, RawRowCodecsNeedNoRowBuffers) {
  // fp32 blocks are the rows themselves: the forward gathers the sent slots straight into the
  // message bytes and the backward scatters the received ones straight from them, so a (layer,
  // direction) holds its blocks only; so does a codec with an encoding (q8) on the CPU, where it
  // encodes the sent rows straight from the source and adds the received ones straight into
  // theirs (elsewhere it holds the gathered rows forward and the decoded rows backward).
  const std::uint64_t seed = 12;
  Scenario s = make_setup(seed, 300, size, rank, 3);
  const std::int64_t w = 6;
  const SlotMap& out = s.plan->send();
  const SlotMap& in = s.plan->recv();
  ASSERT_TRUE(make_codec("fp32")->raw_rows());
  ASSERT_FALSE(make_codec("q8")->raw_rows());
  ASSERT_TRUE(make_codec("q8")->gathers(*cpu_device()));
  ASSERT_TRUE(make_codec("q8")->scatters(*cpu_device()));
  ASSERT_TRUE(s.plan->send().rows_distinct_per_peer());
  for (const char* name : {"fp32", "q8"}) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Codec> codec = make_codec(name);
    TrafficCounter traffic;
    HaloExchange ex(s.plan, *transport, traffic);
    ex.set_codec(0, Direction::forward, codec);
    ex.set_codec(0, Direction::backward, codec);
    Matrix owned = owned_features(s.part, seed, w);
    Matrix halo = nan_matrix(s.part.num_halo, w);
    ex.start_forward(0, 0, seed, owned.cview(), halo.view()).wait();
    Matrix halo_grad = halo_gradients(s.part, seed, w);
    Matrix owned_grad = owned_features(s.part, seed + 50, w);
    ex.start_backward(0, 0, seed, halo_grad.cview(), owned_grad.view()).wait();
    if (codec->raw_rows()) {
      EXPECT_EQ(halo_mismatches(s.part, halo, seed), 0);
      EXPECT_EQ(gradient_mismatches(s.graph, s.part, owned_grad, seed + 50, seed), 0);
    }
    // Forward S slots out and R in, backward the reverse; in one buffer per direction, whose
    // received blocks start at the next multiple of 64 bytes after the sent ones.
    std::size_t s_bytes = 0, r_bytes = 0;
    for (std::size_t k = 0; k < out.num_peers(); ++k) s_bytes += codec->encoded_size(out.count(k), w).total();
    for (std::size_t k = 0; k < in.num_peers(); ++k) r_bytes += codec->encoded_size(in.count(k), w).total();
    auto aligned = [](std::size_t sent, std::size_t received) {
      return received > 0 ? (sent + 63) / 64 * 64 + received : sent;
    };
    const std::size_t blocks = aligned(s_bytes, r_bytes) + aligned(r_bytes, s_bytes);
    const std::size_t row = sizeof(float) * static_cast<std::size_t>(w);
    // Gathered rows: forward the S sent slots (unless the identity), backward the R halo slots
    // (unless the identity), neither when the codec reads them through the slot rows itself
    // (Codec::gathers: the CPU q codecs); decoded rows: backward the S slots it accumulates,
    // unless the codec adds them through the slot rows itself (Codec::scatters).
    const auto n_out = static_cast<std::size_t>(out.total()), n_in = static_cast<std::size_t>(in.total());
    const std::size_t gathered = codec->gathers(*cpu_device())
                                     ? 0
                                     : (out.is_identity() ? 0 : n_out) + (in.is_identity() ? 0 : n_in);
    const std::size_t decoded = codec->scatters(*cpu_device()) ? 0 : n_out;
    const std::size_t rows = codec->raw_rows() ? 0 : row * (gathered + decoded);
    EXPECT_EQ(ex.workspace_bytes(), blocks + rows);
  }
}

TEST_F(HaloExchangeTest, PollingWithTestCompletesTheExchange) {
  const std::uint64_t seed = 10;
  Scenario s = make_setup(seed, 200, size, rank, 3);
  TrafficCounter traffic;
  HaloExchange ex(s.plan, *transport, traffic);
  Matrix owned = owned_features(s.part, seed, 4);
  Matrix halo = nan_matrix(s.part.num_halo, 4);
  Request r = ex.start_forward(1, 0, seed, owned.cview(), halo.view());
  while (!r.test()) {
  }
  EXPECT_FALSE(r.pending());
  EXPECT_TRUE(r.test());
  r.wait();  // waiting on a completed request is a no-op
  Request moved = std::move(r);
  EXPECT_FALSE(moved.pending());
  EXPECT_FALSE(r.pending());  // NOLINT(bugprone-use-after-move): moved-from is not pending
  EXPECT_EQ(halo_mismatches(s.part, halo, seed), 0);
}

TEST_F(HaloExchangeTest, TrafficEqualsCodecSizesAndTransportBytes) {
  const std::uint64_t seed = 11;
  Scenario s = make_setup(seed, 300, size, rank, 3);
  TrafficCounter traffic;
  HaloExchange ex(s.plan, *transport, traffic);
  auto checking = std::make_shared<const test::CheckingCodec>();
  ex.set_codec(1, Direction::forward, checking);
  ex.set_codec(1, Direction::backward, checking);
  const std::int64_t f = 6;
  transport->reset_counters();
  for (int layer : {0, 1}) {
    Matrix owned = owned_features(s.part, seed, f);
    Matrix halo = nan_matrix(s.part.num_halo, f);
    ex.start_forward(layer, 2, seed, owned.cview(), halo.view()).wait();
    EXPECT_EQ(halo_mismatches(s.part, halo, seed), 0) << "layer " << layer;
    Matrix halo_grad = halo_gradients(s.part, seed, f);
    Matrix owned_grad = owned_features(s.part, seed + 1, f);
    ex.start_backward(layer, 2, seed, halo_grad.cview(), owned_grad.view()).wait();
    EXPECT_EQ(gradient_mismatches(s.graph, s.part, owned_grad, seed + 1, seed), 0);
  }
  const HaloPlan& plan = *s.plan;
  for (int layer : {0, 1}) {
    const Codec& codec = ex.codec(layer, Direction::forward);
    TrafficEntry fwd, bwd;
    for (std::size_t k = 0; k < plan.send().num_peers(); ++k) {
      const EncodedSize e = codec.encoded_size(plan.send().count(k), f);
      fwd.payload += e.payload;
      fwd.metadata += e.metadata;
      fwd.messages += e.total() > 0 ? 1 : 0;
      fwd.rows += e.total() > 0 ? static_cast<std::uint64_t>(plan.send().count(k)) : 0;
    }
    for (std::size_t k = 0; k < plan.recv().num_peers(); ++k) {
      const EncodedSize e = codec.encoded_size(plan.recv().count(k), f);
      bwd.payload += e.payload;
      bwd.metadata += e.metadata;
      bwd.messages += e.total() > 0 ? 1 : 0;
      bwd.rows += e.total() > 0 ? static_cast<std::uint64_t>(plan.recv().count(k)) : 0;
    }
    EXPECT_EQ(traffic.at(layer, Direction::forward), fwd) << "layer " << layer;
    EXPECT_EQ(traffic.at(layer, Direction::backward), bwd) << "layer " << layer;
  }
  EXPECT_EQ(traffic.at(0, Direction::forward).metadata, 0u);   // fp32 has no metadata
  if (plan.send().num_peers() > 0) {
    EXPECT_GT(traffic.at(1, Direction::forward).metadata, 0u);
  }
  EXPECT_EQ(traffic.total().total(), transport->bytes_sent());

  // Over all ranks, every forward block has a backward mirror of the same shape.
  TrafficCounter global = traffic.sum_over_ranks(*transport);
  EXPECT_EQ(global.num_layers(), 2);
  for (int layer : {0, 1})
    EXPECT_EQ(global.at(layer, Direction::forward), global.at(layer, Direction::backward));
}

TEST_F(HaloExchangeTest, RankWithoutPeersTakesPartWithoutSending) {
  const std::uint64_t seed = 12;
  Scenario s = make_setup(seed, 200, size, rank, 3, /*isolate_rank0=*/true);
  if (rank == 0) {
    EXPECT_EQ(s.plan->send().num_peers(), 0u);
    EXPECT_EQ(s.plan->recv().num_peers(), 0u);
  }
  TrafficCounter traffic(2);
  HaloExchange ex(s.plan, *transport, traffic);
  transport->reset_counters();
  Matrix owned = owned_features(s.part, seed, 3);
  Matrix halo = nan_matrix(s.part.num_halo, 3);
  ex.start_forward(0, 0, seed, owned.cview(), halo.view()).wait();
  Matrix halo_grad = halo_gradients(s.part, seed, 3);
  Matrix owned_grad = owned_features(s.part, seed + 1, 3);
  ex.start_backward(0, 0, seed, halo_grad.cview(), owned_grad.view()).wait();
  EXPECT_EQ(halo_mismatches(s.part, halo, seed), 0);
  EXPECT_EQ(gradient_mismatches(s.graph, s.part, owned_grad, seed + 1, seed), 0);
  if (rank == 0) {
    EXPECT_EQ(traffic.total().messages, 0u);
    EXPECT_EQ(transport->bytes_sent(), 0u);
  }
  EXPECT_EQ(traffic.sum_over_ranks(*transport).num_layers(), 2);
}

TEST_F(HaloExchangeTest, ZeroWidthRowsPostNoMessages) {
  Scenario s = make_setup(13, 200, size, rank, 3);
  TrafficCounter traffic;
  HaloExchange ex(s.plan, *transport, traffic);
  transport->reset_counters();
  Matrix owned(s.part.num_owned, 0), halo(s.part.num_halo, 0);
  ex.start_forward(0, 0, 13, owned.cview(), halo.view()).wait();
  ex.start_backward(0, 0, 13, halo.cview(), owned.view()).wait();
  EXPECT_EQ(transport->bytes_sent(), 0u);
  EXPECT_EQ(traffic.total().messages, 0u);
}

TEST_F(HaloExchangeTest, CodecsSeeGlobalRowIdsAndDecodeWhatTheOwnerEncoded) {
  // Every codec that this build offers: the receiver re-encodes the owner's rows itself (with the
  // same context: the rows' global ids) and must get exactly what arrived.
  const std::uint64_t seed = 14;
  Scenario s = make_setup(seed, 300, size, rank, 3);
  const std::int64_t f = 9;
  int tried = 0;
  for (const char* name : {"fp32", "fp16", "bf16", "q8", "q4", "q2", "q1"}) {
    std::shared_ptr<const Codec> codec;
    try {
      codec = make_codec(name);
    } catch (const ConfigError&) {
      continue;  // not (yet) in this build
    }
    ++tried;
    TrafficCounter traffic;
    HaloExchange ex(s.plan, *transport, traffic);
    ex.set_codec(0, Direction::forward, codec);
    Matrix owned = owned_features(s.part, seed, f);
    Matrix halo = nan_matrix(s.part.num_halo, f);
    ex.start_forward(0, 5, seed, owned.cview(), halo.view()).wait();
    std::int64_t bad = 0;
    const HaloPlan& plan = *s.plan;
    for (std::size_t k = 0; k < plan.recv().num_peers(); ++k) {
      const auto gids = plan.recv().keys_host(k);
      const auto n = static_cast<std::int64_t>(gids.size());
      Matrix block(n, f), decoded(n, f);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < f; ++j) block(i, j) = feature_value(seed, gids[i], j);
      CodecContext ctx{seed, 5, 0, Direction::forward, gids.data()};
      std::vector<std::byte> bytes(codec->encoded_size(n, f).total());
      codec->encode(*cpu_device(), block.cview(), ctx, bytes);
      codec->decode(*cpu_device(), bytes, ctx, decoded.view());
      const std::int64_t off = plan.recv().offset(k);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < f; ++j)
          if (!(halo(off + i, j) == decoded(i, j))) ++bad;
    }
    EXPECT_EQ(global_sum(bad), 0) << "codec " << name;
  }
  EXPECT_GE(tried, 1);
}

TEST_F(HaloExchangeTest, MismatchedViewShapesAreRejected) {
  Scenario s = make_setup(15, 100, size, rank, 3);
  TrafficCounter traffic;
  HaloExchange ex(s.plan, *transport, traffic);
  Matrix owned(s.part.num_owned + 1, 2), halo(s.part.num_halo, 2);
  EXPECT_THROW(ex.start_forward(0, 0, 1, owned.cview(), halo.view()), Error);
  Matrix owned_ok(s.part.num_owned, 2), halo_wide(s.part.num_halo, 3);
  EXPECT_THROW(ex.start_forward(0, 0, 1, owned_ok.cview(), halo_wide.view()), Error);
  EXPECT_EQ(traffic.total().messages, 0u);
}

}  // namespace
}  // namespace halognn
