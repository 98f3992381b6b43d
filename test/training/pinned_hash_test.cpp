// Pinned per-epoch losses of 4-rank runs: the exchange remodel (and any later refactoring) must
// not move them by one bit. A change that is meant to change the numbers (a new summation order,
// another GEMM) re-records the hashes here and says why in its commit. The runs use the portable
// kernel numerics (core/kernels/cpu_isa.hpp: no fused multiply-adds, the same operations at every
// vector width), so the hashes hold on any x86-64 CPU, with or without AVX-512.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "comm/transport.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

/// FNV-1a over the bytes of every per-epoch loss and evaluation score.
std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string run_hash(const TrainConfig& cfg, Transport& transport, int rank, int size) {
  Trainer trainer(cfg, testing::partition_of(testing::small_dataset(), size, rank), transport,
                  cpu_device());
  std::uint64_t h = 1469598103934665603ull;
  for (int e = 0; e < cfg.epochs; ++e) {
    const EpochMetrics m = trainer.run_epoch(e, /*evaluate=*/e % 4 == 3);
    h = fnv1a(h, &m.loss, sizeof m.loss);
    if (m.eval) {
      h = fnv1a(h, &m.eval->val, sizeof m.eval->val);
      h = fnv1a(h, &m.eval->test, sizeof m.eval->test);
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

TrainConfig pinned_config() {
  TrainConfig cfg = testing::small_config(ModelKind::sage);
  cfg.layers = 3;
  cfg.hidden = 16;
  cfg.epochs = 12;
  return cfg;
}

struct Pinned {
  const char* name;
  void (*apply)(TrainConfig&);
  const char* hash;
};

// Recorded on 4 ranks, one OpenMP thread each, portable numerics, with the locality-ordered
// partitions of training_fixture.hpp and the multi-versioned GEMM/SpMM (2026-11-22; the hashes
// before them were recorded with ascending-id partitions and Eigen's GEMM). The thread count is
// part of the pin: some reductions (the loss, column sums of the GAT kernels) sum in an order
// that depends on it. The three q1 hashes were re-recorded on 2026-11-23 when layers >= 1 began
// to drop out in place after ReLU (Trainer::dropout_in_place): the ReLU backward now reads the
// dropped rows, so a dropped entry's gradient is zero after the exchange too, where a lossy
// backward codec had turned the senders' zeros into quantization noise (the chain rule applies
// the mask to the sum of the local and the received gradients; exact codecs are unchanged, as the
// fp32 hash shows). They were re-recorded again on 2026-11-29 when the q codecs' format moved to
// 16 random bits a value and grid positions through the scale's reciprocal (docs/codecs.md).
const Pinned kPinned[] = {
    {"sync_fp32", [](TrainConfig&) {}, "6def4d154c6ee46f"},
    {"sync_q1", [](TrainConfig& c) { c.codec = "q1"; }, "74652957c3b375a9"},
    {"pipelined_q1_sync_every_5",
     [](TrainConfig& c) {
       c.codec = "q1";
       c.exchange = ExchangeMode::pipelined;
       c.sync_every = 5;
     },
     "9607274fb84456a7"},
    {"pipelined_q1_sync_every_5_smoothing_0.9",
     [](TrainConfig& c) {
       c.codec = "q1";
       c.exchange = ExchangeMode::pipelined;
       c.sync_every = 5;
       c.smoothing = 0.9f;
     },
     "b682c5a32f697f45"},
};

TEST(PinnedLosses, FourRankRunsReproduceTheirRecordedHashes) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) GTEST_SKIP() << "the hashes are recorded for 4 ranks";
  omp_set_num_threads(1);
  kernels::set_cpu_numerics(kernels::CpuNumerics::portable);
  auto world = make_mpi_transport(MPI_COMM_WORLD);
  // Every instruction set this CPU has stands in for a CPU that has only that one (CI's may lack
  // AVX-512): the hashes must not depend on it.
  for (int isa = 0; isa <= static_cast<int>(kernels::detected_cpu_isa()); ++isa) {
    kernels::set_cpu_isa_limit(static_cast<kernels::CpuIsa>(isa));
    for (const Pinned& p : kPinned) {
      TrainConfig cfg = pinned_config();
      p.apply(cfg);
      EXPECT_EQ(run_hash(cfg, *world, rank, size), p.hash)
          << p.name << " with " << kernels::to_string(kernels::cpu_isa());
    }
  }
  kernels::set_cpu_isa_limit(kernels::CpuIsa::avx512);
  kernels::set_cpu_numerics(kernels::CpuNumerics::fast);
}

}  // namespace
}  // namespace halognn
