#include "models/optimizer.hpp"

#include <cmath>
#include <string_view>

#include "core/error.hpp"

namespace halognn {
namespace {

bool ends_with(std::string_view n, std::string_view suffix) {
  return n.size() >= suffix.size() && n.substr(n.size() - suffix.size()) == suffix;
}

/// Biases, GIN's eps (a scalar offset, not a weight) and layer-norm scales are not decayed unless
/// decay_biases.
bool is_bias(const Parameter& p) {
  const std::string_view n = p.name;
  return n == "bias" || ends_with(n, ".bias") || ends_with(n, ".eps") || ends_with(n, ".scale");
}

class OptimizerBase : public Optimizer {
 public:
  OptimizerBase(const OptimizerConfig& cfg, std::vector<Parameter*> params, DevicePtr dev)
      : cfg_(cfg), params_(std::move(params)), dev_(std::move(dev)) {
    GNN_CHECK_CONFIG(cfg.lr > 0, "learning rate must be positive, got ", cfg.lr);
    GNN_CHECK_CONFIG(cfg.weight_decay >= 0, "weight decay must be non-negative, got ",
                     cfg.weight_decay);
    for (const Parameter* p : params_) {
      GNN_ASSERT(
          p->value.device_ptr().get() == dev_.get() && p->grad.device_ptr().get() == dev_.get(),
          "parameter ", p->name, " is not on the optimiser's device (call prepare first)");
      GNN_ASSERT(p->grad.rows() == p->value.rows() && p->grad.cols() == p->value.cols(),
                 "parameter ", p->name, " has a gradient of another shape");
      decay_.push_back(is_bias(*p) && !cfg.decay_biases ? 0.0f : cfg.weight_decay);
    }
  }
  void zero_grad() override {
    for (Parameter* p : params_) p->grad.zero();
  }
  void set_weight_decay(const Parameter* p, float weight_decay) override {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (params_[i] == p) {
        decay_[i] = weight_decay;
        return;
      }
    }
    throw ConfigError("set_weight_decay: parameter " + p->name + " is not optimised here");
  }
  double l2_penalty() const override {
    if (cfg_.decoupled) return 0.0;
    double penalty = 0;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (decay_[i] == 0.0f) continue;
      double sq = 0;
      for (const float w : params_[i]->value.to_host()) sq += static_cast<double>(w) * w;
      penalty += 0.5 * static_cast<double>(decay_[i]) * sq;
    }
    return penalty;
  }
  std::int64_t steps() const override { return steps_; }
  void set_lr(float lr) override {
    GNN_CHECK_CONFIG(lr >= 0 && std::isfinite(lr), "learning rate must be non-negative, got ", lr);
    cfg_.lr = lr;
  }
  float lr() const override { return cfg_.lr; }

 protected:
  /// The step count and, per parameter, `state[i]` under "<what>/<parameter name>".
  void save_common(StateWriter& w, const char* what, const std::vector<Matrix>& state) const {
    w.put_int("steps", steps_);
    for (std::size_t i = 0; i < state.size(); ++i) w.sub(what).put(params_[i]->name, state[i]);
  }
  void load_common(const StateReader& r, const char* what, std::vector<Matrix>& state) {
    const std::int64_t steps = r.get_int("steps");
    GNN_CHECK_INPUT(steps >= 0, r.origin(), "negative optimiser step count ", steps);
    for (std::size_t i = 0; i < state.size(); ++i) r.sub(what).get(params_[i]->name, state[i]);
    steps_ = steps;
  }

  OptimizerConfig cfg_;
  std::vector<Parameter*> params_;
  std::vector<float> decay_;
  DevicePtr dev_;
  std::int64_t steps_ = 0;
};

class Adam final : public OptimizerBase {
 public:
  Adam(const OptimizerConfig& cfg, std::vector<Parameter*> params, DevicePtr dev)
      : OptimizerBase(cfg, std::move(params), std::move(dev)) {
    for (const Parameter* p : params_) {
      m_.emplace_back(p->value.rows(), p->value.cols(), dev_);
      v_.emplace_back(p->value.rows(), p->value.cols(), dev_);
    }
  }
  void step() override {
    ++steps_;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Parameter& p = *params_[i];
      kernels::AdamParams ap{cfg_.lr, cfg_.beta1, cfg_.beta2, cfg_.eps, decay_[i], cfg_.decoupled};
      kernels::adam_step(*dev_, p.value.size(), p.value.data(), p.grad.data(), m_[i].data(),
                         v_[i].data(), ap, steps_);
    }
  }
  void save_state(StateWriter& w) const override {
    save_common(w, "m", m_);
    for (std::size_t i = 0; i < v_.size(); ++i) w.sub("v").put(params_[i]->name, v_[i]);
  }
  void load_state(const StateReader& r) override {
    load_common(r, "m", m_);
    for (std::size_t i = 0; i < v_.size(); ++i) r.sub("v").get(params_[i]->name, v_[i]);
  }

 private:
  std::vector<Matrix> m_, v_;
};

class Sgd final : public OptimizerBase {
 public:
  Sgd(const OptimizerConfig& cfg, std::vector<Parameter*> params, DevicePtr dev)
      : OptimizerBase(cfg, std::move(params), std::move(dev)) {
    GNN_CHECK_CONFIG(cfg.momentum >= 0 && cfg.momentum < 1, "momentum must be in [0, 1), got ",
                     cfg.momentum);
    if (cfg.momentum > 0) {
      for (const Parameter* p : params_)
        momentum_.emplace_back(p->value.rows(), p->value.cols(), dev_);
    }
  }
  void step() override {
    ++steps_;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Parameter& p = *params_[i];
      kernels::sgd_step(*dev_, p.value.size(), p.value.data(), p.grad.data(),
                        momentum_.empty() ? nullptr : momentum_[i].data(), cfg_.lr, cfg_.momentum,
                        decay_[i]);
    }
  }
  void save_state(StateWriter& w) const override { save_common(w, "velocity", momentum_); }
  void load_state(const StateReader& r) override { load_common(r, "velocity", momentum_); }

 private:
  std::vector<Matrix> momentum_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          std::vector<Parameter*> params, DevicePtr dev) {
  GNN_ASSERT(dev, "make_optimizer: no device");
  if (cfg.kind == OptimizerConfig::Kind::sgd) {
    return std::make_unique<Sgd>(cfg, std::move(params), std::move(dev));
  }
  return std::make_unique<Adam>(cfg, std::move(params), std::move(dev));
}

}  // namespace halognn
