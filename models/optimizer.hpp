#pragma once
/// @file optimizer.hpp
/// Adam and SGD over a list of parameters. Weight decay follows Kipf & Welling: an L2 term
/// weight_decay * w added to the gradient (Adam's `decoupled` switches to AdamW). Biases, GIN's
/// eps and layer-norm scales (names ending in ".bias", ".eps" or ".scale") are not decayed unless
/// decay_biases is set;
/// set_weight_decay overrides the rate per parameter (e.g. Kipf's "first layer only"). The
/// learning rate can change between steps (set_lr: learning-rate schedules).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/data/state_io.hpp"
#include "core/kernels/kernels.hpp"
#include "models/layer.hpp"

namespace halognn {

struct OptimizerConfig {
  enum class Kind { adam, sgd };
  Kind kind = Kind::adam;
  float lr = 0.01f;
  float weight_decay = 0.0f;
  bool decay_biases = false;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  ///< Adam
  bool decoupled = false;                           ///< Adam: AdamW-style decay
  float momentum = 0.0f;                            ///< SGD
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Sets every parameter's gradient to zero (layers accumulate into them).
  virtual void zero_grad() = 0;
  /// One update from the current gradients (all-reduced by the caller).
  virtual void step() = 0;
  /// Overrides the weight decay of one parameter (must be one this optimiser updates).
  virtual void set_weight_decay(const Parameter* p, float weight_decay) = 0;
  /// The L2 penalty whose gradient the weight decay adds: sum over parameters of
  /// decay / 2 * sum of w^2 (0 with decoupled decay, which is not the gradient of a loss term).
  virtual double l2_penalty() const = 0;
  /// Updates applied so far.
  virtual std::int64_t steps() const = 0;
  /// The learning rate of the following steps (a schedule sets it before each step).
  virtual void set_lr(float lr) = 0;
  virtual float lr() const = 0;
  /// Checkpoints: the step count and the per-parameter state (Adam: "m/<name>", "v/<name>"; SGD
  /// with momentum: "velocity/<name>"), named by the parameters' names.
  virtual void save_state(StateWriter& w) const = 0;
  /// Restores what save_state wrote; every array must exist with this run's shapes.
  virtual void load_state(const StateReader& r) = 0;
};

/// The state (moments, momentum) lives on `dev`, where the parameters must already be (layers
/// move them there in prepare()).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          std::vector<Parameter*> params, DevicePtr dev);

}  // namespace halognn
