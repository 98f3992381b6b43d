// What every exchange policy shares: the age bookkeeping, the synchronous exchanges, the factory.
#include "comm/exchange_policy.hpp"

#include <algorithm>

#include "comm/pipelined_policy.hpp"
#include "comm/refresh_policy.hpp"
#include "comm/sync_policy.hpp"
#include "core/error.hpp"

namespace halognn {

const char* to_string(ExchangeMode m) {
  switch (m) {
    case ExchangeMode::sync: return "sync";
    case ExchangeMode::pipelined: return "pipelined";
    case ExchangeMode::refresh: return "refresh";
  }
  return "?";
}

ExchangeMode parse_exchange_mode(const std::string& s) {
  if (s == "sync") return ExchangeMode::sync;
  if (s == "pipelined") return ExchangeMode::pipelined;
  if (s == "refresh") return ExchangeMode::refresh;
  throw ConfigError("unknown --exchange '" + s + "' (choose from: sync, pipelined, refresh)");
}

const char* to_string(RefreshConfig::By b) { return b == RefreshConfig::By::grad ? "grad" : "change"; }

RefreshConfig::By parse_refresh_by(const std::string& s) {
  if (s == "grad") return RefreshConfig::By::grad;
  if (s == "change") return RefreshConfig::By::change;
  throw ConfigError("unknown --refresh-by '" + s + "' (choose from: grad, change)");
}

void HaloAges::reset(int num_layers) {
  counts_.assign(static_cast<std::size_t>(num_layers), std::vector<std::vector<std::int64_t>>(2));
}

void HaloAges::add(int layer, Direction dir, int age, std::int64_t rows) {
  GNN_ASSERT(layer >= 0 && age >= 0, "age ", age, " of layer ", layer);
  if (layer >= static_cast<int>(counts_.size()))
    counts_.resize(static_cast<std::size_t>(layer) + 1, std::vector<std::vector<std::int64_t>>(2));
  auto& h = counts_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(dir)];
  if (age >= static_cast<int>(h.size())) h.resize(static_cast<std::size_t>(age) + 1, 0);
  h[static_cast<std::size_t>(age)] += rows;
}

std::int64_t HaloAges::rows(int layer, Direction dir, int age) const {
  if (layer < 0 || layer >= static_cast<int>(counts_.size()) || age < 0) return 0;
  const auto& h = counts_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(dir)];
  return age < static_cast<int>(h.size()) ? h[static_cast<std::size_t>(age)] : 0;
}

int HaloAges::max_age() const {
  int m = 0;
  for (const auto& layer : counts_)
    for (const auto& h : layer)
      for (std::size_t a = 0; a < h.size(); ++a)
        if (h[a] > 0) m = std::max(m, static_cast<int>(a));
  return m;
}

HaloAges HaloAges::sum_over_ranks(Transport& transport) const {
  // Every rank must reduce arrays of the same shape: agree on the layer count and the longest
  // histogram first.
  double shape[2] = {static_cast<double>(counts_.size()), 0};
  for (const auto& layer : counts_)
    for (const auto& h : layer) shape[1] = std::max(shape[1], static_cast<double>(h.size()));
  transport.all_reduce_max(shape, 2);
  const auto layers = static_cast<std::size_t>(shape[0]), ages = static_cast<std::size_t>(shape[1]);
  std::vector<std::int64_t> flat(layers * 2 * ages, 0);
  for (std::size_t l = 0; l < counts_.size(); ++l)
    for (std::size_t d = 0; d < 2; ++d)
      for (std::size_t a = 0; a < counts_[l][d].size(); ++a)
        flat[(l * 2 + d) * ages + a] = counts_[l][d][a];
  transport.all_reduce_sum(flat.data(), flat.size());
  HaloAges sum;
  sum.reset(static_cast<int>(layers));
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t d = 0; d < 2; ++d)
      sum.counts_[l][d].assign(flat.begin() + static_cast<std::ptrdiff_t>((l * 2 + d) * ages),
                               flat.begin() + static_cast<std::ptrdiff_t>((l * 2 + d + 1) * ages));
  return sum;
}

Json HaloAges::to_json() const {
  Json layers = Json::array();
  for (std::size_t l = 0; l < counts_.size(); ++l) {
    std::int64_t rows = 0;
    for (const auto& h : counts_[l])
      for (const std::int64_t n : h) rows += n;
    if (rows == 0) continue;  // layer 0 (features, exchanged once) and layers without a halo
    layers.push_back({{"layer", l}, {"fwd", counts_[l][0]}, {"bwd", counts_[l][1]}});
  }
  return {{"max_age", max_age()}, {"layers", std::move(layers)}};
}

ExchangePolicy::ExchangePolicy(HaloExchange& ex, LocalId num_owned, int num_layers,
                               std::uint64_t seed)
    : ex_(ex), num_owned_(num_owned), num_layers_(num_layers), seed_(seed) {
  ages_.reset(num_layers);
}

void ExchangePolicy::begin_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  ages_.reset(num_layers_);
}

void ExchangePolicy::forward_eval(int layer, std::int64_t epoch, LocalRows x) {
  start_forward_eval(layer, epoch, x).wait();
}

Request ExchangePolicy::start_forward(int, LocalRows) {
  throw Error(std::string(name()) + " policy: its exchanges do not split (overlaps() is false)");
}

Request ExchangePolicy::start_backward(int, LocalRows) {
  throw Error(std::string(name()) + " policy: its exchanges do not split (overlaps() is false)");
}

Request ExchangePolicy::start_forward_eval(int layer, std::int64_t epoch, LocalRows x) {
  return ex_.start_forward(layer, epoch, seed_, x.owned, x.halo);
}

Request ExchangePolicy::start_rows_now(int layer, LocalRows x) {
  ages_.add(layer, Direction::forward, 0, x.halo.rows);
  return ex_.start_forward(layer, epoch_, seed_, x.owned, x.halo);
}

Request ExchangePolicy::start_gradients_now(int layer, LocalRows gx) {
  ages_.add(layer, Direction::backward, 0, ex_.receiving_side(Direction::backward).total());
  return ex_.start_backward(layer, epoch_, seed_, gx.halo, gx.owned);
}

void ExchangePolicy::exchange_rows_now(int layer, LocalRows x) { start_rows_now(layer, x).wait(); }

void ExchangePolicy::exchange_gradients_now(int layer, LocalRows gx) {
  start_gradients_now(layer, gx).wait();
}

std::unique_ptr<ExchangePolicy> make_exchange_policy(const PolicyConfig& cfg, HaloExchange& ex,
                                                     LocalId num_owned, LocalId num_halo,
                                                     const std::vector<std::int64_t>& widths,
                                                     DevicePtr dev) {
  const int layers = static_cast<int>(widths.size());
  switch (cfg.mode) {
    case ExchangeMode::sync:
      GNN_CHECK_CONFIG(cfg.sync_every == 0 && cfg.smoothing == 0,
                       "--sync-every and --smoothing need --exchange pipelined");
      return std::make_unique<SyncPolicy>(ex, num_owned, layers, cfg.seed);
    case ExchangeMode::pipelined:
      return std::make_unique<PipelinedPolicy>(cfg, ex, num_owned, num_halo, widths,
                                               std::move(dev));
    case ExchangeMode::refresh:
      return std::make_unique<RefreshPolicy>(cfg, ex, num_owned, widths, std::move(dev));
  }
  throw ConfigError("unknown exchange mode");
}

}  // namespace halognn
