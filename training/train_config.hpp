#pragma once
/// @file train_config.hpp
/// Everything a training run is configured by. The CLI (training/train_cli.hpp) only fills this
/// struct; `to_json` is what --dump-config prints, what --config reads back and what the metrics
/// file records. Its keys are the command-line option names with '_' for '-'.
#include <cstdint>
#include <string>

#include "comm/exchange_policy.hpp"
#include "core/json.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "models/layer.hpp"

namespace halognn {

enum class OptimizerKind { adam, sgd };

/// Which rows a halo exchange carries: every boundary row, or one row per semantic group
/// (docs/semantic_groups.md; needs a partition built with --groups semantic).
enum class HaloRows { plain, semantic };

struct TrainConfig {
  std::string partition_dir;
  std::string device = "auto";     ///< cpu | cuda | auto
  std::string transport = "auto";  ///< nccl | mpi | auto
  ModelKind model = ModelKind::gcn;
  int layers = 2;
  std::int64_t hidden = 16;
  int heads = 1;               ///< GAT attention heads (hidden layers concatenate, the last averages)
  int epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  bool decay_biases = false;   ///< Kipf & Welling decay the first layer's weights only; we decay all weights
  OptimizerKind optimizer = OptimizerKind::adam;
  float momentum = 0.0f;       ///< SGD only
  float dropout = 0.5f;
  std::uint64_t seed = 1;
  int eval_every = 1;
  bool row_normalize_features = false;
  /// Layer 0 reads the features as CSR when fewer than 10% of a rank's entries are non-zero
  /// (bag-of-words data; same results up to float summation order); false forces the dense path.
  bool sparse_features = true;
  /// CPU kernel numerics (core/kernels/cpu_isa.hpp): fast fuses multiply-adds where the CPU has
  /// FMA; portable gives the same bits on every x86-64 CPU. Process-wide: halognn-train applies
  /// it with kernels::set_cpu_numerics before building the Trainer.
  kernels::CpuNumerics numerics = kernels::CpuNumerics::fast;
  std::string metrics_path;    ///< JSON lines, one appended per epoch; empty = none
  bool quiet = false;          ///< no per-epoch progress lines
  /// Seconds one blocking communication step may take before the watchdog aborts every rank
  /// (comm/watchdog.hpp); 0 disables the watchdog.
  double comm_timeout_s = 300;
  /// Refuse a run whose estimated peak memory (training/memory_estimate.hpp) on one node exceeds
  /// this many GiB; 0 = the node's physical memory (or its cgroup limit, if lower).
  double memory_budget_gib = 0;

  // Codecs (compress/): names or per-layer comma lists, see docs/codecs.md.
  std::string codec = "fp32";
  std::string codec_forward;
  std::string codec_backward;
  /// Layer-0 halo features never change: exchange them once at start-up, exactly (fp32) unless
  /// this is set, in which case the layer-0 forward codec is used for that one exchange.
  bool compress_layer0 = false;

  HaloRows halo_rows = HaloRows::plain;

  // Exchange policy.
  ExchangeMode exchange = ExchangeMode::sync;
  /// pipelined: one synchronous epoch every N epochs, epoch 0 included (Sylvie's epsilon_s; 0 =
  /// only epoch 0). A synchronisation period, not a per-row bound.
  int sync_every = 0;
  float smoothing = 0.0f;      ///< pipelined: moving-average gamma for stale rows (0 = off)
  /// refresh: a halo row is re-sent when its age reaches this bound (1: every epoch, exact).
  int staleness_bound = 1;
  double refresh_fraction = 0;  ///< refresh: of the other rows, this fraction by importance
  RefreshConfig::By refresh_by = RefreshConfig::By::grad;
  bool refresh_exact_backward = false;  ///< refresh: every gradient crosses back, every epoch
  /// "GBPS[,LATENCY_US]" when the transport emulates a cluster link (comm/emulated_link.hpp);
  /// empty for the real transport. Recorded so metrics say the timings are emulated.
  std::string emulate_link;

  /// Throws ConfigError naming the option for a value out of range (non-finite numbers, sizes
  /// beyond the limits below) or an option that the chosen model, optimiser or exchange would
  /// ignore.
  void validate() const;

  /// Hard limits, whatever the memory: they keep every size product far from overflow and every
  /// message tag in range. Memory is checked separately against an estimate.
  static constexpr int kMaxLayers = 1024;
  static constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24;  ///< hidden * heads
  static constexpr int kMaxHeads = 1024;
  static constexpr double kMinLinkGbps = 1e-3;      ///< 1 Mb/s
  static constexpr double kMaxLinkLatencyUs = 1e7;  ///< 10 s
  static constexpr double kMaxCommTimeoutS = 7 * 24 * 3600.0;
  Json to_json() const;
};

const char* to_string(ModelKind k);
const char* to_string(OptimizerKind k);
const char* to_string(HaloRows r);
HaloRows parse_halo_rows(const std::string& s);
OptimizerKind parse_optimizer_kind(const std::string& s);

}  // namespace halognn
