#pragma once
/// @file state_io.hpp
/// Named arrays for checkpoints and saved models (training/checkpoint.hpp): whoever owns state
/// (the trainer, the optimiser, an exchange policy) writes it into a StateWriter under names of
/// its own, below a prefix ("optimizer/m/layer0.weight", "policy/layer1/used"), and reads it
/// back from a StateReader, which checks every name, type and shape against what the reading
/// run expects. The arrays become the members of an `.npz` file (core/data/zip.hpp), so numpy
/// reads a checkpoint too. Errors are InputError naming the file (the reader's origin) and the
/// array.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/buffer.hpp"
#include "core/data/npy.hpp"

namespace halognn {

using StateArrays = std::map<std::string, NpyArray>;

class StateWriter {
 public:
  explicit StateWriter(StateArrays& out, std::string prefix = {})
      : out_(&out), prefix_(std::move(prefix)) {}
  /// A writer whose names go below `prefix() + name + "/"`.
  StateWriter sub(std::string_view name) const;

  /// A matrix (copied from its device) as a float32 array of shape (rows, cols).
  void put(std::string_view name, const Matrix& m);
  /// One-dimensional arrays.
  void put(std::string_view name, std::span<const float> v);
  void put(std::string_view name, std::span<const std::int64_t> v);
  void put(std::string_view name, std::span<const std::uint8_t> v);
  /// Scalars (0-d arrays): int64, float64, a string (unicode).
  void put_int(std::string_view name, std::int64_t v);
  void put_double(std::string_view name, double v);
  void put_string(std::string_view name, std::string_view v);

  const std::string& prefix() const { return prefix_; }

 private:
  void add(std::string_view name, NpyArray a);
  StateArrays* out_;
  std::string prefix_;
};

class StateReader {
 public:
  /// @param origin  the file the arrays came from, named in every error
  StateReader(const StateArrays& in, std::string origin, std::string prefix = {})
      : in_(&in), origin_(std::move(origin)), prefix_(std::move(prefix)) {}
  StateReader sub(std::string_view name) const;

  bool has(std::string_view name) const;
  /// Copies a float32 (rows, cols) array into `m`'s buffer (on its device); the shapes must be
  /// equal.
  void get(std::string_view name, Matrix& m) const;
  /// One-dimensional arrays of exactly `n` elements.
  std::vector<float> get_floats(std::string_view name, std::size_t n) const;
  std::vector<std::int64_t> get_ints(std::string_view name, std::size_t n) const;
  std::vector<std::uint8_t> get_bytes(std::string_view name, std::size_t n) const;
  /// Scalars written by put_int / put_double / put_string.
  std::int64_t get_int(std::string_view name) const;
  double get_double(std::string_view name) const;
  std::string get_string(std::string_view name) const;
  /// The shape of an array (for messages and checks).
  const std::vector<std::int64_t>& shape(std::string_view name) const;

  const std::string& origin() const { return origin_; }

 private:
  const NpyArray& find(std::string_view name, NpyType type) const;
  const NpyArray& find_vector(std::string_view name, NpyType type, std::size_t n) const;
  std::string full(std::string_view name) const { return prefix_ + std::string(name); }
  const StateArrays* in_;
  std::string origin_, prefix_;
};

/// "(3, 16)": a shape as numpy prints it.
std::string format_shape(const std::vector<std::int64_t>& shape);

}  // namespace halognn
