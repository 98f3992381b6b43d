#include "comm/refresh_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {

std::vector<std::int32_t> choose_refresh(const std::vector<std::int64_t>& age,
                                         const std::vector<float>& importance, int s, double r,
                                         std::int64_t* forced) {
  GNN_ASSERT(age.size() == importance.size(), "ages and importances differ in length");
  std::vector<std::int32_t> chosen, rest;
  for (std::size_t i = 0; i < age.size(); ++i) {
    if (age[i] < 0 || age[i] >= s) chosen.push_back(static_cast<std::int32_t>(i));
    else rest.push_back(static_cast<std::int32_t>(i));
  }
  if (forced) *forced = static_cast<std::int64_t>(chosen.size());
  const auto take = static_cast<std::size_t>(std::ceil(r * static_cast<double>(rest.size()) - 1e-9));
  if (take > 0) {
    // Highest importance first; equal importance: the lower index (stable and rank-independent).
    std::stable_sort(rest.begin(), rest.end(), [&](std::int32_t a, std::int32_t b) {
      return importance[static_cast<std::size_t>(a)] > importance[static_cast<std::size_t>(b)];
    });
    chosen.insert(chosen.end(), rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(std::min(take, rest.size())));
    std::sort(chosen.begin(), chosen.end());
  }
  return chosen;
}

RefreshPolicy::RefreshPolicy(const PolicyConfig& cfg, HaloExchange& ex, LocalId num_owned,
                             const std::vector<std::int64_t>& widths, DevicePtr dev)
    : ExchangePolicy(ex, num_owned, static_cast<int>(widths.size()), cfg.seed),
      refresh_(cfg.refresh) {
  GNN_CHECK_CONFIG(refresh_.staleness_bound >= 1,
                   "--staleness-bound must be at least 1 (1: every row every epoch, exact)");
  GNN_CHECK_CONFIG(refresh_.fraction >= 0 && refresh_.fraction <= 1,
                   "--refresh-fraction must be in [0, 1]");
  const SlotMap& out = ex.sending_side(Direction::forward);
  const SlotMap& in = ex.receiving_side(Direction::forward);
  layers_.resize(widths.size());
  sent_.assign(widths.size(), {0, 0});
  sent_back_.assign(widths.size(), 0);
  for (std::size_t l = 1; l < widths.size(); ++l) {
    Layer& s = layers_[l];
    s.cache = Matrix(in.total(), widths[l], dev);
    s.received_epoch.assign(static_cast<std::size_t>(in.total()), -1);
    s.fresh.assign(static_cast<std::size_t>(in.total()), 0);
    s.sent_epoch.assign(static_cast<std::size_t>(out.total()), -1);
    s.importance.assign(static_cast<std::size_t>(out.total()), std::numeric_limits<float>::infinity());
    if (refresh_.by == RefreshConfig::By::change) s.last_sent = Matrix(out.total(), widths[l], dev);
    if (!refresh_.exact_backward) s.grad_slots = Matrix(out.total(), widths[l], dev);
  }
  // How many halo rows each receive slot unpacks into (the age histogram counts rows).
  for (std::size_t k = 0; k < in.num_peers(); ++k) {
    const SlotLink& l = in.link(k);
    for (std::int64_t g = 0; g < l.num_slots(); ++g)
      slot_rows_.push_back(l.ptr[static_cast<std::size_t>(g) + 1] - l.ptr[static_cast<std::size_t>(g)]);
  }
}

bool RefreshPolicy::synchronous_epoch() const {
  // Only an epoch that refreshes everything uses nothing old: epoch 0, or s = 1, or r = 1.
  return epoch_ == 0 || refresh_.staleness_bound == 1 || refresh_.fraction >= 1.0;
}

std::size_t RefreshPolicy::state_bytes() const {
  std::size_t bytes = 0;
  for (const Layer& s : layers_)
    bytes += static_cast<std::size_t>(s.cache.size() + s.last_sent.size() + s.grad_slots.size()) *
                 sizeof(float) +
             s.received_epoch.size() * sizeof(std::int64_t) + s.fresh.size() +
             s.sent_epoch.size() * sizeof(std::int64_t) + s.importance.size() * sizeof(float);
  return bytes;
}

void RefreshPolicy::forward(int layer, LocalRows x) {
  Layer& s = layers_[static_cast<std::size_t>(layer)];
  const SlotMap& out = ex_.sending_side(Direction::forward);
  const SlotMap& in = ex_.receiving_side(Direction::forward);
  const Device& dev = s.cache.device();
  const std::int64_t f = x.cols();

  // Importance by change: the relative distance of every send slot to the value last sent.
  Matrix packed;
  if (refresh_.by == RefreshConfig::By::change && out.total() > 0) {
    packed = Matrix(out.total(), f, s.last_sent.device_ptr());
    out.pack(dev, x.owned, packed.view());
    const std::vector<float> now = packed.to_host(), before = s.last_sent.to_host();
    for (std::int64_t i = 0; i < out.total(); ++i) {
      if (s.sent_epoch[static_cast<std::size_t>(i)] < 0) continue;
      double diff = 0, base = 0;
      for (std::int64_t j = 0; j < f; ++j) {
        const double a = now[static_cast<std::size_t>(i * f + j)], b = before[static_cast<std::size_t>(i * f + j)];
        diff += (a - b) * (a - b);
        base += b * b;
      }
      s.importance[static_cast<std::size_t>(i)] = static_cast<float>(std::sqrt(diff / std::max(base, 1e-30)));
    }
  }

  // Choose, per rank over all its send slots, then split the choice by peer.
  std::vector<std::int64_t> age(static_cast<std::size_t>(out.total()));
  for (std::size_t i = 0; i < age.size(); ++i)
    age[i] = s.sent_epoch[i] < 0 ? -1 : epoch_ - s.sent_epoch[i];
  std::int64_t forced = 0;
  const std::vector<std::int32_t> chosen =
      choose_refresh(age, s.importance, refresh_.staleness_bound, refresh_.fraction, &forced);
  SlotSelection selection(out.num_peers());
  std::size_t k = 0;
  std::int64_t forced_rows = 0, chosen_rows = 0;
  for (const std::int32_t i : chosen) {
    while (i >= out.offset(k) + out.count(k)) ++k;
    selection[k].push_back(static_cast<std::int32_t>(i - out.offset(k)));
    s.sent_epoch[static_cast<std::size_t>(i)] = epoch_;
    const bool by_age = age[static_cast<std::size_t>(i)] < 0 || age[static_cast<std::size_t>(i)] >= refresh_.staleness_bound;
    (by_age ? forced_rows : chosen_rows) += 1;
  }
  sent_[static_cast<std::size_t>(layer)] = {forced_rows, chosen_rows};
  if (refresh_.by == RefreshConfig::By::change && !chosen.empty()) {
    const Buffer<LocalId> idx = Buffer<LocalId>::from_host(chosen, s.last_sent.device_ptr());
    Matrix rows(static_cast<std::int64_t>(chosen.size()), f, s.last_sent.device_ptr());
    kernels::gather_rows(dev, packed.view(), idx.data(), rows.view());
    kernels::scatter_rows(dev, rows.view(), idx.data(), s.last_sent.view());
  }

  SlotSelection received;
  ex_.start_selected(Direction::forward, layer, epoch_, seed_, x.owned, selection, s.cache.view(),
                     &received)
      .wait();
  std::fill(s.fresh.begin(), s.fresh.end(), 0);
  for (std::size_t p = 0; p < received.size(); ++p)
    for (const std::int32_t slot : received[p]) {
      const auto at = static_cast<std::size_t>(in.offset(p) + slot);
      s.received_epoch[at] = epoch_;
      s.fresh[at] = 1;
    }
  in.unpack(dev, s.cache.view(), x.halo, false);
  for (std::size_t i = 0; i < s.received_epoch.size(); ++i) {
    GNN_ASSERT(s.received_epoch[i] >= 0, "halo slot ", i, " of layer ", layer, " never arrived");
    ages_.add(layer, Direction::forward, static_cast<int>(epoch_ - s.received_epoch[i]),
              slot_rows_[i]);
  }
}

void RefreshPolicy::backward(int layer, LocalRows gx) {
  Layer& s = layers_[static_cast<std::size_t>(layer)];
  if (refresh_.exact_backward) {
    exchange_gradients_now(layer, gx);
    sent_back_[static_cast<std::size_t>(layer)] = ex_.sending_side(Direction::backward).total();
    return;
  }
  // The receivers send back the gradients of the slots they received in this epoch's forward.
  const SlotMap& back_out = ex_.sending_side(Direction::backward);   // = forward receive side
  const SlotMap& back_in = ex_.receiving_side(Direction::backward);  // = forward send side
  const Device& dev = s.cache.device();
  SlotSelection selection(back_out.num_peers());
  std::int64_t sent = 0;
  for (std::size_t k = 0; k < back_out.num_peers(); ++k)
    for (std::int64_t i = 0; i < back_out.count(k); ++i)
      if (s.fresh[static_cast<std::size_t>(back_out.offset(k) + i)]) {
        selection[k].push_back(static_cast<std::int32_t>(i));
        ++sent;
      }
  sent_back_[static_cast<std::size_t>(layer)] = sent;
  Matrix& slots = s.grad_slots;
  GNN_ASSERT(slots.rows() == back_in.total() && slots.cols() == gx.cols(), "refresh backward of layer ",
             layer, ": gradient slots are ", slots.rows(), "x", slots.cols(), ", the exchange needs ",
             back_in.total(), "x", gx.cols());
  slots.zero();
  SlotSelection received;
  ex_.start_selected(Direction::backward, layer, epoch_, seed_, gx.halo, selection, slots.view(),
                     &received)
      .wait();
  back_in.unpack(dev, slots.view(), gx.owned, true);
  std::int64_t rows = 0;
  // The norms read the slots where they are on the host, a copy of them from a GPU.
  std::vector<float> staged;
  const float* host = slots.data();
  if (refresh_.by == RefreshConfig::By::grad && !dev.is_host()) {
    staged = slots.to_host();
    host = staged.data();
  }
  for (std::size_t p = 0; p < received.size(); ++p)
    for (const std::int32_t slot : received[p]) {
      const auto at = static_cast<std::size_t>(back_in.offset(p) + slot);
      ++rows;
      if (refresh_.by != RefreshConfig::By::grad) continue;
      double norm = 0;
      for (std::int64_t j = 0; j < gx.cols(); ++j) {
        const double v = host[at * static_cast<std::size_t>(gx.cols()) + static_cast<std::size_t>(j)];
        norm += v * v;
      }
      s.importance[at] = static_cast<float>(std::sqrt(norm));
    }
  ages_.add(layer, Direction::backward, 0, rows);
}

void RefreshPolicy::save_state(StateWriter& w) {
  for (std::size_t l = 1; l < layers_.size(); ++l) {
    const Layer& s = layers_[l];
    StateWriter lw = w.sub("layer" + std::to_string(l));
    lw.put("cache", s.cache);
    lw.put("received_epoch", std::span<const std::int64_t>(s.received_epoch));
    lw.put("fresh", std::span<const std::uint8_t>(s.fresh));
    lw.put("sent_epoch", std::span<const std::int64_t>(s.sent_epoch));
    lw.put("importance", std::span<const float>(s.importance));
    if (refresh_.by == RefreshConfig::By::change) lw.put("last_sent", s.last_sent);
  }
}

void RefreshPolicy::load_state(const StateReader& r) {
  for (std::size_t l = 1; l < layers_.size(); ++l) {
    Layer& s = layers_[l];
    const StateReader lr = r.sub("layer" + std::to_string(l));
    lr.get("cache", s.cache);
    s.received_epoch = lr.get_ints("received_epoch", s.received_epoch.size());
    s.fresh = lr.get_bytes("fresh", s.fresh.size());
    s.sent_epoch = lr.get_ints("sent_epoch", s.sent_epoch.size());
    s.importance = lr.get_floats("importance", s.importance.size());
    if (refresh_.by == RefreshConfig::By::change) lr.get("last_sent", s.last_sent);
  }
}

Json RefreshPolicy::summarize(Transport& transport) const {
  std::vector<std::int64_t> counts;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    counts.push_back(sent_[l][0]);
    counts.push_back(sent_[l][1]);
    counts.push_back(sent_back_[l]);
  }
  transport.all_reduce_sum(counts.data(), counts.size());
  Json layers = Json::array();
  for (std::size_t l = 1; l < layers_.size(); ++l)
    layers.push_back({{"layer", l},
                      {"fwd", {{"by_age", counts[3 * l]}, {"by_importance", counts[3 * l + 1]}}},
                      {"bwd", {{"gradients", counts[3 * l + 2]}}}});
  return {{"refreshed", std::move(layers)}};
}

}  // namespace halognn
