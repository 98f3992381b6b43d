// GPU training: P ranks equal 1 rank (DESIGN.md "Correctness anchors"), and GPU training follows
// CPU training. Skipped without a GPU. With fewer GPUs than ranks, ranks share a GPU and use the
// MPI transport (NCCL refuses two ranks on one GPU); otherwise the NCCL transport is tested too.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <vector>

#include "comm/transport.hpp"
#include "test/training/training_fixture.hpp"

namespace halognn {
namespace {

std::vector<double> train_losses(const TrainConfig& cfg, LocalPartition part, Transport& transport,
                                 DevicePtr dev) {
  Trainer trainer(cfg, std::move(part), transport, std::move(dev));
  std::vector<double> loss;
  for (int e = 0; e < cfg.epochs; ++e) loss.push_back(trainer.run_epoch(e, false).loss);
  return loss;
}

/// The same on every rank: skipping on some ranks only would leave the others in collectives.
bool any_rank_without_gpu() {
  int none = cuda_device_count() == 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&none, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

class GpuExactness : public ::testing::TestWithParam<ModelKind> {};

// Tolerances: see test/training/exactness_test.cpp (1e-4: the runs differ only in summation
// order). GPU against CPU adds fused multiply-adds and library summation orders on top; 20 Adam
// steps keep that within 1e-3 relative, while a wrong kernel moves the loss by 1e-2 or more.
TEST_P(GpuExactness, PRankGpuTrainingEqualsOneRankGpuTrainingAndFollowsTheCpu) {
  if (any_rank_without_gpu()) GTEST_SKIP() << "no CUDA device visible";
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int gpus = cuda_device_count();
  const DevicePtr gpu = cuda_device(rank % gpus);
  const Dataset ds = testing::small_dataset();
  const TrainConfig cfg = testing::small_config(GetParam());

  auto mpi = make_mpi_transport(MPI_COMM_WORLD);
  const std::vector<double> staged = train_losses(cfg, testing::partition_of(ds, size, rank), *mpi, gpu);
  std::vector<double> nccl;
  if (gpus >= size) {
    auto t = make_nccl_transport(MPI_COMM_WORLD, gpu);
    nccl = train_losses(cfg, testing::partition_of(ds, size, rank), *t, gpu);
  }
  auto self = make_mpi_transport(MPI_COMM_SELF);
  const std::vector<double> single = train_losses(cfg, testing::partition_of(ds, 1, 0), *self, gpu);
  const std::vector<double> on_cpu =
      train_losses(cfg, testing::partition_of(ds, 1, 0), *self, cpu_device());

  ASSERT_EQ(staged.size(), single.size());
  for (std::size_t e = 0; e < single.size(); ++e) {
    EXPECT_NEAR(staged[e], single[e], 1e-4 * std::fabs(single[e])) << "mpi transport, epoch " << e;
    if (!nccl.empty()) {
      EXPECT_NEAR(nccl[e], single[e], 1e-4 * std::fabs(single[e])) << "nccl transport, epoch " << e;
    }
    EXPECT_NEAR(single[e], on_cpu[e], 1e-3 * std::fabs(on_cpu[e])) << "GPU vs CPU, epoch " << e;
  }
  EXPECT_LT(single.back(), 0.9 * single.front());  // training made progress
}

INSTANTIATE_TEST_SUITE_P(Models, GpuExactness,
                         ::testing::Values(ModelKind::gcn, ModelKind::sage, ModelKind::gat),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(NcclTransport, RefusesACpuDevice) {
  if (any_rank_without_gpu()) GTEST_SKIP() << "no CUDA device visible";
  EXPECT_THROW(make_nccl_transport(MPI_COMM_WORLD, cpu_device()), ConfigError);
}

}  // namespace
}  // namespace halognn
