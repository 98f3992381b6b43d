#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/error.hpp"

namespace halognn {
namespace {

TEST(Buffer, IsZeroInitialisedAndMoveOnly) {
  Buffer<float> b(100);
  for (float x : b.host()) EXPECT_EQ(x, 0.0f);
  b.host()[3] = 2.0f;
  Buffer<float> c = std::move(b);
  EXPECT_EQ(c.size(), 100u);
  EXPECT_EQ(c.host()[3], 2.0f);
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move)
}

TEST(Matrix, CloneIsDeep) {
  Matrix m(3, 4);
  m(1, 2) = 5.0f;
  Matrix c = m.clone();
  c(1, 2) = 6.0f;
  EXPECT_EQ(m(1, 2), 5.0f);
  EXPECT_EQ(c.rows(), 3);
  EXPECT_EQ(c.cols(), 4);
}

TEST(Device, CudaWithoutTheBackendThrowsNotCompiled) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
#ifndef GNN_HAVE_CUDA
  EXPECT_THROW(cuda_device(0), NotCompiled);
#endif
}

}  // namespace
}  // namespace halognn
