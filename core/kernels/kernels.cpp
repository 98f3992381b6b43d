// Dispatch of every kernel on the device kind: cpu -> reference::, cuda -> cuda:: (which are
// NotCompiled stubs in a build without the CUDA backend, so callers need no #ifdef).
#include "core/kernels/kernels.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/kernels/cuda/cuda_kernels.hpp"
#include "core/kernels/reference/reference_kernels.hpp"

namespace halognn::kernels {

#define GNN_KERNEL(R, name, params, args)                    \
  R name(const Device& dev, GNN_KERNEL_PARAMS params) {      \
    if (dev.kind() == DeviceKind::cuda) return cuda::name args; \
    return reference::name args;                             \
  }
#include "core/kernels/kernel_list.inc"
#undef GNN_KERNEL

CsrMatrix dense_to_csr(const DevicePtr& dev, ConstDenseView x) {
  const std::int64_t rows = x.rows, cols = x.cols;
  std::vector<std::int32_t> row_ptr(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<LocalId> col;
  std::vector<float> val;
  // A host x is read in place; a device x crosses in row blocks of about 64 MiB.
  const std::int64_t block =
      dev->is_host() ? std::max<std::int64_t>(rows, 1)
                     : std::max<std::int64_t>(1, (std::int64_t{64} << 20) /
                                                     std::max<std::int64_t>(cols * 4, 1));
  std::vector<float> stage;
  std::vector<std::int64_t> count;
  for (std::int64_t b0 = 0; b0 < rows; b0 += block) {
    const std::int64_t b1 = std::min(rows, b0 + block), n = b1 - b0;
    const float* base = x.row(b0);
    if (!dev->is_host()) {
      stage.resize(static_cast<std::size_t>(n * cols));
      dev->copy_to_host(stage.data(), base, stage.size() * sizeof(float));
      base = stage.data();
    }
    // Count per row in parallel, prefix-sum in 64 bits (to catch offset overflow), then fill.
    count.assign(static_cast<std::size_t>(n), 0);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float* r = base + i * cols;
      std::int64_t c = 0;
      for (std::int64_t j = 0; j < cols; ++j) c += r[j] != 0.0f;
      count[static_cast<std::size_t>(i)] = c;
    }
    std::int64_t offset = row_ptr[static_cast<std::size_t>(b0)];
    for (std::int64_t i = 0; i < n; ++i) {
      offset += count[static_cast<std::size_t>(i)];
      GNN_CHECK_CONFIG(offset <= std::numeric_limits<std::int32_t>::max(),
                       "dense_to_csr: 2^31 or more non-zeros do not fit 32-bit CSR offsets");
      row_ptr[static_cast<std::size_t>(b0 + i + 1)] = static_cast<std::int32_t>(offset);
    }
    col.resize(static_cast<std::size_t>(offset));
    val.resize(static_cast<std::size_t>(offset));
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float* r = base + i * cols;
      std::int64_t k = row_ptr[static_cast<std::size_t>(b0 + i)];
      for (std::int64_t j = 0; j < cols; ++j) {
        if (r[j] == 0.0f) continue;
        col[static_cast<std::size_t>(k)] = static_cast<LocalId>(j);
        val[static_cast<std::size_t>(k)] = r[j];
        ++k;
      }
    }
  }
  return CsrMatrix(rows, cols, row_ptr, col, val, dev);
}

}  // namespace halognn::kernels
