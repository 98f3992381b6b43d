#pragma once
/// @file exchange_policy.hpp
/// When halo rows cross, and which ones a layer gets: the exchange policy (docs/halo_exchange.md,
/// "Exchange policies"). The trainer asks the policy for a layer's halo rows and hands it the halo
/// gradients; the policy owns whatever that needs (requests in flight, stale rows and gradients,
/// smoothing averages) and reports the age of every row it hands out. Policies:
/// - sync: every layer waits for this epoch's rows and gradients (Sylvie-S);
/// - pipelined: layer l of epoch t uses the rows sent in epoch t-1 while this epoch's rows are in
///   flight, and likewise for gradients (PipeGCN, Sylvie-A); one synchronous epoch every
///   `sync_every` epochs, epoch 0 included (Sylvie's epsilon_s); optional smoothing of the stale
///   rows and gradients by a moving average (PipeGCN's gamma);
/// - refresh: only the rows that are too old or most important cross, the others come from a cache
///   (FreshGNN's selective history; comm/refresh_policy.hpp).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/halo_exchange.hpp"
#include "core/data/state_io.hpp"
#include "core/json.hpp"

namespace halognn {

enum class ExchangeMode { sync, pipelined, refresh };

/// What the refresh policy re-sends each epoch.
struct RefreshConfig {
  enum class By { grad, change };
  int staleness_bound = 1;      ///< s: a slot is re-sent when its age reaches s (1: every epoch)
  double fraction = 0;          ///< r: of the other slots, this fraction by importance
  By by = By::grad;             ///< importance: last gradient norm, or relative change
  bool exact_backward = false;  ///< send every slot's gradient, not only the refreshed ones
};

const char* to_string(RefreshConfig::By b);
/// "grad" | "change"; throws ConfigError naming --refresh-by otherwise.
RefreshConfig::By parse_refresh_by(const std::string& s);

const char* to_string(ExchangeMode m);
/// "sync" | "pipelined" | "refresh"; throws ConfigError naming --exchange otherwise.
ExchangeMode parse_exchange_mode(const std::string& s);

struct PolicyConfig {
  ExchangeMode mode = ExchangeMode::sync;
  int sync_every = 0;        ///< pipelined: a synchronous epoch every N epochs (0: epoch 0 only)
  float smoothing = 0.0f;    ///< pipelined: gamma of the moving average (0: off)
  RefreshConfig refresh;     ///< refresh: what is re-sent
  std::uint64_t seed = 0;    ///< keys the codecs' randomness
};

/// Rows handed out by a policy in one epoch, by layer, direction and age in epochs: forward, the
/// halo rows given to a layer; backward, the gradient rows added into owned rows.
class HaloAges {
 public:
  void reset(int num_layers);
  void add(int layer, Direction dir, int age, std::int64_t rows);
  std::int64_t rows(int layer, Direction dir, int age) const;
  /// The largest age of any row handed out (0 when none was).
  int max_age() const;
  /// The element-wise sum over the ranks of `transport` (collective).
  HaloAges sum_over_ranks(Transport& transport) const;
  /// {"max_age": a, "layers": [{"layer": 1, "fwd": [rows of age 0, age 1, ...], "bwd": [...]}]}
  Json to_json() const;

 private:
  // counts_[layer][direction][age]
  std::vector<std::vector<std::vector<std::int64_t>>> counts_;
};

class ExchangePolicy {
 public:
  virtual ~ExchangePolicy() = default;
  virtual std::string_view name() const = 0;

  /// Starts training epoch `epoch`; clears the ages.
  void begin_epoch(std::int64_t epoch);
  /// Whether this training epoch uses only this epoch's rows and gradients (by schedule).
  virtual bool synchronous_epoch() const = 0;

  /// Training forward of layer l >= 1: the owned rows of x (F wide) are final; fills its halo
  /// rows. A policy reads and writes x's rows during its calls only: the trainer may hand the same
  /// halo rows to another layer once this layer is done with them (docs/training.md "Halo rows shared by layers").
  virtual void forward(int layer, LocalRows x) = 0;
  /// Training backward of layer l >= 1: gx holds dL/dx for owned and halo rows.
  /// Sends the halo part to its owners and adds into the owned part what the policy has for it.
  virtual void backward(int layer, LocalRows gx) = 0;
  /// Evaluation forward of layer l >= 1 with the current weights: an exact synchronous exchange
  /// that leaves the training state (stale rows, requests in flight) alone.
  void forward_eval(int layer, std::int64_t epoch, LocalRows x);
  /// Overlap (docs/training.md "Overlap"): whether this policy's training exchanges can be split
  /// by start_forward / start_backward, so that the caller computes while they are in flight.
  /// The synchronous policy's can; the others hand out rows they already hold (pipelined,
  /// refresh) and run forward() / backward() whole.
  virtual bool overlaps() const { return false; }
  /// forward(layer, x) in two halves (overlaps() only): posts the exchange of x's halo rows and
  /// returns; the request's wait() fills them. In between the caller may read and overwrite x's
  /// owned rows (the sends were packed from them during this call), and must not touch the halo
  /// rows.
  virtual Request start_forward(int layer, LocalRows x);
  /// backward(layer, gx) in two halves (overlaps() only): sends gx's halo rows (which the caller
  /// leaves unchanged until the request completes: the exchange may send them from where they
  /// are, HaloExchange::share_workspaces) and returns; the request's wait() adds the peers' gradients into gx's owned rows,
  /// which the caller must have finished computing by then (Request::progress() may be called in
  /// between, Request::test() may not).
  virtual Request start_backward(int layer, LocalRows gx);
  /// forward_eval in two halves, as start_forward (every policy: the evaluation exchange is exact
  /// and synchronous).
  Request start_forward_eval(int layer, std::int64_t epoch, LocalRows x);
  /// Progresses exchanges in flight (called between kernels).
  virtual void poll() {}
  /// Completes, and drops, everything in flight (end of training, before destruction).
  virtual void finish() {}

  /// Checkpoints (training/checkpoint.hpp), between two training epochs: writes everything the
  /// next epoch reads from this policy, so that a policy restored by load_state continues exactly
  /// as this one would. Exchanges in flight are completed first and what they delivered is saved
  /// as delivered but not yet used (completing early changes no value). Every policy owns its
  /// serialisation; a policy without state writes nothing.
  virtual void save_state(StateWriter& w) = 0;
  /// Restores what save_state wrote, into a policy built with the same configuration and
  /// partition; throws InputError naming the file for a missing array or another shape.
  virtual void load_state(const StateReader& r) = 0;

  /// Ages of the rows handed out since begin_epoch.
  const HaloAges& ages() const { return ages_; }
  /// Bytes of device memory the policy's own state takes (stale rows, caches, averages).
  virtual std::size_t state_bytes() const { return 0; }
  /// The policy's own per-epoch report summed over ranks (collective), or null.
  virtual Json summarize(Transport& transport) const {
    (void)transport;
    return Json();
  }
  HaloExchange& exchange() { return ex_; }

 protected:
  ExchangePolicy(HaloExchange& ex, LocalId num_owned, int num_layers, std::uint64_t seed);
  /// The synchronous exchanges of this epoch: x's halo rows from its owned rows; gx's owned rows
  /// += the halo gradients of the peers.
  void exchange_rows_now(int layer, LocalRows x);
  void exchange_gradients_now(int layer, LocalRows gx);
  /// The same, started (start_forward / start_backward's contracts).
  Request start_rows_now(int layer, LocalRows x);
  Request start_gradients_now(int layer, LocalRows gx);

  HaloExchange& ex_;
  LocalId num_owned_;
  int num_layers_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
  HaloAges ages_;
};

/// The policy of `cfg` over `ex`. `widths[l]` is the input width of layer l (entry 0 unused:
/// layer-0 rows are features, exchanged once by the trainer). Throws ConfigError on bad settings.
std::unique_ptr<ExchangePolicy> make_exchange_policy(const PolicyConfig& cfg, HaloExchange& ex,
                                                     LocalId num_owned, LocalId num_halo,
                                                     const std::vector<std::int64_t>& widths,
                                                     DevicePtr dev);

}  // namespace halognn
