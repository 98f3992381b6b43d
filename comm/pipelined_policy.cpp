#include "comm/pipelined_policy.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {

PipelinedPolicy::PipelinedPolicy(const PolicyConfig& cfg, HaloExchange& ex, LocalId num_owned,
                                 LocalId num_halo, const std::vector<std::int64_t>& widths,
                                 DevicePtr dev)
    : ExchangePolicy(ex, num_owned, static_cast<int>(widths.size()), cfg.seed),
      sync_every_(cfg.sync_every), smoothing_(cfg.smoothing) {
  GNN_CHECK_CONFIG(sync_every_ >= 0, "--sync-every must be non-negative");
  GNN_CHECK_CONFIG(smoothing_ >= 0 && smoothing_ < 1, "--smoothing must be in [0, 1)");
  layers_.resize(widths.size());
  // Layer 0's halo rows are features, exchanged once by the trainer: no state for it.
  for (std::size_t l = 1; l < widths.size(); ++l) {
    const std::int64_t w = widths[l];
    Layer& s = layers_[l];
    s.used = Matrix(num_halo, w, dev);
    s.arriving = Matrix(num_halo, w, dev);
    s.grad_arriving = Matrix(num_owned, w, dev);
    if (smoothing_ > 0) s.grad_smooth = Matrix(num_owned, w, dev);
  }
}

PipelinedPolicy::~PipelinedPolicy() {
  // A pending request must not be destroyed; finish what is in flight (errors no longer matter).
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) {
    try {
      drain(l);
    } catch (...) {
    }
  }
}

bool PipelinedPolicy::synchronous_epoch() const {
  return epoch_ == 0 || (sync_every_ > 0 && epoch_ % sync_every_ == 0);
}

void PipelinedPolicy::drain(int layer) {
  Layer& s = layers_[static_cast<std::size_t>(layer)];
  s.rows_in_flight.wait();
  s.grads_in_flight.wait();
  s.rows_unconsumed = s.grads_unconsumed = false;
  // Rows or gradients that arrived but will not be used are dropped: a synchronous epoch
  // replaces them with fresh ones.
  if (s.grad_arriving.size() > 0) s.grad_arriving.zero();
}

void PipelinedPolicy::forward(int layer, LocalRows x) {
  Layer& s = layers_[static_cast<std::size_t>(layer)];
  const Device& dev = s.used.device();
  const DenseView halo_rows = x.halo;
  if (synchronous_epoch()) {
    drain(layer);
    s.used_epoch = epoch_;
    ex_.start_forward(layer, epoch_, seed_, x.owned, s.used.view()).wait();
    kernels::copy(dev, s.used.view(), halo_rows);
    ages_.add(layer, Direction::forward, 0, halo_rows.rows);
    return;
  }
  if (s.rows_unconsumed) {
    s.rows_in_flight.wait();
    s.rows_unconsumed = false;
    if (smoothing_ > 0 && s.used_epoch >= 0) {
      // PipeGCN's moving average: h = gamma * h_used + (1 - gamma) * h_received.
      kernels::axpby(dev, s.used.size(), 1.0f - smoothing_, s.arriving.data(), smoothing_,
                     s.used.data());
    } else {
      // The arrived rows become the used ones; the old buffer receives the next epoch's rows.
      std::swap(s.used, s.arriving);
    }
    s.used_epoch = s.rows_posted_epoch;
  }
  kernels::copy(dev, s.used.view(), halo_rows);
  ages_.add(layer, Direction::forward, static_cast<int>(epoch_ - s.used_epoch), halo_rows.rows);
  s.rows_in_flight = ex_.start_forward(layer, epoch_, seed_, x.owned, s.arriving.view());
  s.rows_posted_epoch = epoch_;
  s.rows_unconsumed = true;
}

void PipelinedPolicy::backward(int layer, LocalRows gx) {
  Layer& s = layers_[static_cast<std::size_t>(layer)];
  if (synchronous_epoch()) {
    drain(layer);
    exchange_gradients_now(layer, gx);
    return;
  }
  const Device& dev = s.grad_arriving.device();
  const DenseView g_own = gx.owned;
  if (s.grads_unconsumed) {
    s.grads_in_flight.wait();
    s.grads_unconsumed = false;
    if (smoothing_ > 0) {
      kernels::axpby(dev, s.grad_smooth.size(), 1.0f - smoothing_, s.grad_arriving.data(),
                     smoothing_, s.grad_smooth.data());
      kernels::axpy(dev, 1.0f, s.grad_smooth.view(), g_own);
    } else {
      kernels::axpy(dev, 1.0f, s.grad_arriving.view(), g_own);
    }
    // These gradients were computed one epoch ago.
    ages_.add(layer, Direction::backward, 1, ex_.receiving_side(Direction::backward).total());
  }
  s.grad_arriving.zero();
  s.grads_in_flight = ex_.start_backward(layer, epoch_, seed_, gx.halo, s.grad_arriving.view());
  s.grads_unconsumed = true;
}

void PipelinedPolicy::poll() {
  for (Layer& s : layers_) {
    s.rows_in_flight.test();
    s.grads_in_flight.test();
  }
}

std::size_t PipelinedPolicy::state_bytes() const {
  std::size_t bytes = 0;
  for (const Layer& s : layers_)
    bytes += static_cast<std::size_t>(s.used.size() + s.arriving.size() + s.grad_arriving.size() +
                                      s.grad_smooth.size()) * sizeof(float);
  return bytes;
}

void PipelinedPolicy::save_state(StateWriter& w) {
  for (std::size_t l = 1; l < layers_.size(); ++l) {
    Layer& s = layers_[l];
    // Whatever is in flight was posted in the epoch just finished: let it arrive (the next epoch
    // would wait for it anyway) and save it as arrived but not yet used.
    s.rows_in_flight.wait();
    s.grads_in_flight.wait();
    StateWriter lw = w.sub("layer" + std::to_string(l));
    lw.put("used", s.used);
    lw.put_int("used_epoch", s.used_epoch);
    lw.put_int("rows_posted_epoch", s.rows_posted_epoch);
    lw.put_int("rows_unconsumed", s.rows_unconsumed);
    lw.put_int("grads_unconsumed", s.grads_unconsumed);
    if (s.rows_unconsumed) lw.put("arriving", s.arriving);
    if (s.grads_unconsumed) lw.put("grad_arriving", s.grad_arriving);
    if (smoothing_ > 0) lw.put("grad_smooth", s.grad_smooth);
  }
}

void PipelinedPolicy::load_state(const StateReader& r) {
  for (std::size_t l = 1; l < layers_.size(); ++l) {
    Layer& s = layers_[l];
    const StateReader lr = r.sub("layer" + std::to_string(l));
    lr.get("used", s.used);
    s.used_epoch = lr.get_int("used_epoch");
    s.rows_posted_epoch = lr.get_int("rows_posted_epoch");
    s.rows_unconsumed = lr.get_int("rows_unconsumed") != 0;
    s.grads_unconsumed = lr.get_int("grads_unconsumed") != 0;
    if (s.rows_unconsumed) lr.get("arriving", s.arriving);
    if (s.grads_unconsumed) lr.get("grad_arriving", s.grad_arriving);
    else s.grad_arriving.zero();
    if (smoothing_ > 0) lr.get("grad_smooth", s.grad_smooth);
    // Nothing is in flight in a restored policy: what was is in `arriving` / `grad_arriving`.
    s.rows_in_flight = Request();
    s.grads_in_flight = Request();
  }
}

void PipelinedPolicy::finish() {
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) drain(l);
}

}  // namespace halognn
