// The CUDA device seam. The first two tests run on every machine of a CUDA build (they are what a
// build host without a GPU can check); the others need a GPU and skip without one.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "core/cuda/host_staging.hpp"
#include "test/cuda/cuda_test_util.hpp"

namespace halognn {
namespace {

TEST(CudaDeviceCount, IsANumberNotAnErrorEvenWithoutADriver) {
  int n = -1;
  EXPECT_NO_THROW(n = cuda_device_count());
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda_device_count(), n);  // a failed first query leaves no sticky error behind
}

TEST(CudaDeviceCount, AskingForAMissingDeviceIsAConfigError) {
  const int n = cuda_device_count();
  EXPECT_THROW(cuda_device(n), ConfigError);
  EXPECT_THROW(cuda_device(-1), ConfigError);
  // The staging device of the CPU is the CPU.
  EXPECT_EQ(host_staging_device(*cpu_device()).get(), cpu_device().get());
}

class CudaDeviceTest : public test::CudaTest {};

TEST_F(CudaDeviceTest, NameAllocationCopiesAndMemset) {
  EXPECT_EQ(gpu->kind(), DeviceKind::cuda);
  EXPECT_EQ(gpu->name().rfind("cuda:0 ", 0), 0u) << gpu->name();
  EXPECT_EQ(cuda_device(0).get(), gpu.get());  // one device object per GPU

  Buffer<int> b(1000, gpu);  // zero-initialised
  EXPECT_EQ(b.to_host(), std::vector<int>(1000, 0));
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 1);
  Buffer<int> c = Buffer<int>::from_host(std::span<const int>(v), gpu);
  EXPECT_EQ(c.to_host(), v);
  gpu->copy(b.data(), c.data(), 400 * sizeof(int));  // device to device
  gpu->memset_zero(c.data(), 1000 * sizeof(int));
  const std::vector<int> got = b.to_host();
  EXPECT_EQ(std::vector<int>(got.begin(), got.begin() + 400), std::vector<int>(v.begin(), v.begin() + 400));
  EXPECT_EQ(c.to_host(), std::vector<int>(1000, 0));
  const Buffer<int> host_copy = b.clone(cpu);
  EXPECT_EQ(host_copy.to_host(), got);
  EXPECT_EQ(gpu->alloc(0), nullptr);
  gpu->synchronize();
}

TEST_F(CudaDeviceTest, PeakAllocatedBytesIsTheHighWaterMarkOfLiveAllocations) {
  EXPECT_EQ(cpu->peak_allocated_bytes(), 0u);  // the CPU does not track it
  const std::size_t before = gpu->peak_allocated_bytes();
  const std::size_t big = before + (std::size_t{256} << 20);  // above any earlier peak
  {
    Buffer<std::byte> a(big, gpu);
    gpu->synchronize();
    EXPECT_GE(gpu->peak_allocated_bytes(), big);
  }
  gpu->synchronize();
  // Freed, the mark stays: it is a high-water mark, not the bytes in use.
  EXPECT_GE(gpu->peak_allocated_bytes(), big);
  EXPECT_LT(gpu->peak_allocated_bytes(), big + (std::size_t{64} << 20));
}

TEST_F(CudaDeviceTest, StagingMemoryIsPageLockedHostMemory) {
  const DevicePtr staging = host_staging_device(*gpu);
  EXPECT_TRUE(staging->is_host());
  EXPECT_NE(staging.get(), cpu_device().get());
  Buffer<float> h(256, staging);
  for (float& x : h.host()) x = 1.5f;
  Buffer<float> d(256, gpu);
  gpu->copy_from_host(d.data(), h.data(), h.bytes());
  EXPECT_EQ(d.to_host(), std::vector<float>(256, 1.5f));
}

}  // namespace
}  // namespace halognn
