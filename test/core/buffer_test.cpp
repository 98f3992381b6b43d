#include <gtest/gtest.h>

#include <string>

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

// Asking for a GPU that cannot be had is an error in every build: NotCompiled without the CUDA
// backend, a ConfigError naming the device count with the backend but no (such) GPU.
TEST(Device, AGpuThatCannotBeHadIsRefused) {
#ifdef GNN_HAVE_CUDA
  const int n = cuda_device_count();
  try {
    cuda_device(n);
    ADD_FAILURE() << "CUDA device " << n << " of " << n << " was handed out";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(n) + " CUDA device(s) are visible"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cuda_device(-1), ConfigError);
#else
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_THROW(cuda_device(0), NotCompiled);
#endif
}

}  // namespace
}  // namespace halognn
