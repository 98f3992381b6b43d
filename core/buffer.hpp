#pragma once
/// @file buffer.hpp
/// Typed, owning, move-only arrays on a Device, and the dense and sparse matrices built on them.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/types.hpp"

namespace halognn {

/// An owning array of `size()` elements of T on one device, zero-initialised.
template <typename T>
class Buffer {
 public:
  Buffer() : dev_(cpu_device()) {}
  explicit Buffer(std::size_t n, DevicePtr dev = cpu_device()) : dev_(std::move(dev)), n_(n) {
    ptr_ = static_cast<T*>(dev_->alloc(n * sizeof(T)));
  }
  /// Copies a host vector onto `dev`.
  static Buffer from_host(std::span<const T> host, DevicePtr dev = cpu_device()) {
    Buffer b(host.size(), std::move(dev));
    if (!host.empty()) b.dev_->copy_from_host(b.ptr_, host.data(), host.size_bytes());
    return b;
  }
  Buffer(Buffer&& o) noexcept : dev_(std::move(o.dev_)), ptr_(std::exchange(o.ptr_, nullptr)),
                                 n_(std::exchange(o.n_, 0)) { o.dev_ = dev_; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      dev_ = o.dev_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  /// A deep copy on `dev` (same device by default).
  Buffer clone(DevicePtr dev = nullptr) const {
    if (!dev) dev = dev_;
    Buffer b(n_, dev);
    if (n_ == 0) return b;
    if (dev_->is_host() && dev->is_host()) dev->copy(b.ptr_, ptr_, bytes());
    else if (dev_->is_host()) dev->copy_from_host(b.ptr_, ptr_, bytes());
    else if (dev->is_host()) dev_->copy_to_host(b.ptr_, ptr_, bytes());
    else {
      GNN_ASSERT(dev.get() == dev_.get(), "copies between two GPUs go through the host");
      dev->copy(b.ptr_, ptr_, bytes());
    }
    return b;
  }
  /// Copies the contents to a host vector (works for any device).
  std::vector<T> to_host() const {
    std::vector<T> v(n_);
    if (n_) dev_->copy_to_host(v.data(), ptr_, bytes());
    return v;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }
  bool empty() const noexcept { return n_ == 0; }
  const Device& device() const noexcept { return *dev_; }
  const DevicePtr& device_ptr() const noexcept { return dev_; }
  /// Host-only element access (asserts the buffer is on the CPU).
  std::span<T> host() {
    GNN_ASSERT(dev_->is_host(), "host access to a device buffer");
    return {ptr_, n_};
  }
  std::span<const T> host() const {
    GNN_ASSERT(dev_->is_host(), "host access to a device buffer");
    return {ptr_, n_};
  }
  void zero() {
    if (n_) dev_->memset_zero(ptr_, bytes());
  }

 private:
  void release() noexcept {
    if (ptr_) dev_->free(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }
  DevicePtr dev_;
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

/// Non-owning row-major dense view (leading dimension = cols).
struct DenseView {
  float* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  float* row(std::int64_t i) const noexcept { return data + i * cols; }
  DenseView rows_range(std::int64_t begin, std::int64_t end) const noexcept {
    return {data + begin * cols, end - begin, cols};
  }
};

/// Non-owning read-only row-major dense view.
struct ConstDenseView {
  const float* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  ConstDenseView() = default;
  ConstDenseView(const float* d, std::int64_t r, std::int64_t c) : data(d), rows(r), cols(c) {}
  ConstDenseView(DenseView v) : data(v.data), rows(v.rows), cols(v.cols) {}  // NOLINT
  const float* row(std::int64_t i) const noexcept { return data + i * cols; }
  ConstDenseView rows_range(std::int64_t begin, std::int64_t end) const noexcept {
    return {data + begin * cols, end - begin, cols};
  }
};

/// A rank's local rows of one matrix (a layer input, or its gradient): the owned rows, then the
/// halo rows, as two views. They are one matrix's two row ranges, or stored apart where the
/// trainer lets layers share one buffer of halo rows (docs/training.md "Halo rows shared by layers").
struct LocalRows {
  DenseView owned;
  DenseView halo;
  LocalRows() = default;
  LocalRows(DenseView owned_rows, DenseView halo_rows) : owned(owned_rows), halo(halo_rows) {}
  /// The first `num_owned` rows of `whole`, and the rest.
  static LocalRows of(DenseView whole, std::int64_t num_owned) {
    return {whole.rows_range(0, num_owned), whole.rows_range(num_owned, whole.rows)};
  }
  std::int64_t rows() const noexcept { return owned.rows + halo.rows; }
  std::int64_t cols() const noexcept { return owned.cols; }
  /// Whether the halo rows follow the owned rows in memory (one matrix).
  bool contiguous() const noexcept {
    return halo.rows == 0 || halo.data == owned.data + owned.rows * owned.cols;
  }
};

/// Owning row-major float32 matrix on one device, zero-initialised.
class Matrix {
 public:
  Matrix() = default;
  Matrix(std::int64_t rows, std::int64_t cols, DevicePtr dev = cpu_device())
      : buf_(static_cast<std::size_t>(rows * cols), std::move(dev)), rows_(rows), cols_(cols) {}
  static Matrix from_host(std::int64_t rows, std::int64_t cols, std::span<const float> host,
                          DevicePtr dev = cpu_device()) {
    GNN_ASSERT(static_cast<std::int64_t>(host.size()) == rows * cols, "size mismatch");
    Matrix m;
    m.buf_ = Buffer<float>::from_host(host, std::move(dev));
    m.rows_ = rows;
    m.cols_ = cols;
    return m;
  }
  Matrix clone(DevicePtr dev = nullptr) const {
    Matrix m;
    m.buf_ = buf_.clone(std::move(dev));
    m.rows_ = rows_;
    m.cols_ = cols_;
    return m;
  }
  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  std::int64_t size() const noexcept { return rows_ * cols_; }
  float* data() noexcept { return buf_.data(); }
  const float* data() const noexcept { return buf_.data(); }
  const Device& device() const noexcept { return buf_.device(); }
  const DevicePtr& device_ptr() const noexcept { return buf_.device_ptr(); }
  DenseView view() noexcept { return {data(), rows_, cols_}; }
  ConstDenseView view() const noexcept { return {data(), rows_, cols_}; }
  ConstDenseView cview() const noexcept { return {data(), rows_, cols_}; }
  /// Host-only element access.
  float& operator()(std::int64_t i, std::int64_t j) { return buf_.host()[i * cols_ + j]; }
  float operator()(std::int64_t i, std::int64_t j) const { return buf_.host()[i * cols_ + j]; }
  std::span<float> host() { return buf_.host(); }
  std::span<const float> host() const { return buf_.host(); }
  std::vector<float> to_host() const { return buf_.to_host(); }
  void zero() { buf_.zero(); }

 private:
  Buffer<float> buf_;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
};

/// Non-owning CSR view with 32-bit offsets and local column ids. `val == nullptr` means every
/// stored entry is 1. Row i's entries are col[row_ptr[i] .. row_ptr[i+1]).
struct CsrView {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t nnz = 0;
  const std::int32_t* row_ptr = nullptr;
  const LocalId* col = nullptr;
  const float* val = nullptr;
};

/// Sparsified features (core/data/feature_sparsify.hpp) as a kernel input, all arrays on the
/// kernel's device: the rows x cols matrix whose row i is zero except at column
/// slot_base[s] + pos[i * slots + s], which holds codebook[s], for s < slots (a row's columns are
/// distinct). With drop_p > 0 the matrix is that of dropout_forward(drop_key, row_ids, drop_p) of
/// it: entry (i, j) is kept, times 1/(1-drop_p), iff CounterRng(drop_key).uniform(row_ids[i], j)
/// >= drop_p; row_ids may be null when drop_p == 0.
struct CompactView {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t slots = 0;
  const std::uint8_t* pos = nullptr;
  const float* codebook = nullptr;
  const std::int32_t* slot_base = nullptr;
  float drop_p = 0.0f;
  RngKey drop_key{};
  const GlobalId* row_ids = nullptr;
  /// The first `n` rows (positions are row-major, so a prefix is a view).
  CompactView top_rows(std::int64_t n) const {
    CompactView v = *this;
    v.rows = n;
    return v;
  }
};

/// Owning CSR matrix on one device (local ids; nnz < 2^31).
class CsrMatrix {
 public:
  CsrMatrix() = default;
  /// Copies host arrays onto `dev`; `val` may be empty (all ones).
  CsrMatrix(std::int64_t rows, std::int64_t cols, std::span<const std::int32_t> row_ptr,
            std::span<const LocalId> col, std::span<const float> val, DevicePtr dev = cpu_device())
      : rows_(rows), cols_(cols),
        row_ptr_(Buffer<std::int32_t>::from_host(row_ptr, dev)),
        col_(Buffer<LocalId>::from_host(col, dev)),
        val_(Buffer<float>::from_host(val, dev)) {
    GNN_ASSERT(static_cast<std::int64_t>(row_ptr.size()) == rows + 1, "row_ptr size");
    GNN_ASSERT(val.empty() || val.size() == col.size(), "val size");
  }
  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t cols() const noexcept { return cols_; }
  std::int64_t nnz() const noexcept { return static_cast<std::int64_t>(col_.size()); }
  CsrView view() const noexcept {
    return {rows_, cols_, nnz(), row_ptr_.data(), col_.data(), val_.empty() ? nullptr : val_.data()};
  }
  const Buffer<std::int32_t>& row_ptr() const noexcept { return row_ptr_; }
  const Buffer<LocalId>& col() const noexcept { return col_; }
  const Buffer<float>& val() const noexcept { return val_; }

 private:
  std::int64_t rows_ = 0, cols_ = 0;
  Buffer<std::int32_t> row_ptr_;
  Buffer<LocalId> col_;
  Buffer<float> val_;
};

}  // namespace halognn
