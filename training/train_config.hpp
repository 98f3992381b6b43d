#pragma once
/// @file train_config.hpp
/// Everything a training run is configured by. The CLI (training/train_cli.hpp) only fills this
/// struct; `to_json` is what --dump-config prints, what --config reads back and what the metrics
/// file records. Its keys are the command-line option names with '_' for '-'.
#include <cstdint>
#include <string>

#include "core/json.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "models/layer.hpp"

namespace halognn {

enum class OptimizerKind { adam, sgd };

/// When halo rows cross (docs/halo_exchange.md "Exchange policies").
enum class ExchangeMode { sync, pipelined };

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
  std::string metrics_path;    ///< JSON lines; empty = none
  bool quiet = false;          ///< no per-epoch progress lines

  // Codecs (compress/): names or per-layer comma lists, see docs/codecs.md.
  std::string codec = "fp32";
  std::string codec_forward;
  std::string codec_backward;
  /// Layer-0 halo features never change: exchange them once at start-up, exactly (fp32) unless
  /// this is set, in which case the layer-0 forward codec is used for that one exchange.
  bool compress_layer0 = false;

  // Exchange policy.
  ExchangeMode exchange = ExchangeMode::sync;
  /// pipelined: one synchronous epoch every N epochs, epoch 0 included (Sylvie's epsilon_s; 0 =
  /// only epoch 0). A synchronisation period, not a per-row bound.
  int sync_every = 0;
  float smoothing = 0.0f;      ///< pipelined: moving-average gamma for stale rows (0 = off)
  /// "GBPS[,LATENCY_US]" when the transport emulates a cluster link (comm/emulated_link.hpp);
  /// empty for the real transport. Recorded so metrics say the timings are emulated.
  std::string emulate_link;

  /// Throws ConfigError naming the option for a value out of range or an option that the chosen
  /// model, optimiser or exchange would ignore.
  void validate() const;
  Json to_json() const;
};

const char* to_string(ModelKind k);
const char* to_string(OptimizerKind k);
const char* to_string(ExchangeMode m);
OptimizerKind parse_optimizer_kind(const std::string& s);
ExchangeMode parse_exchange_mode(const std::string& s);

}  // namespace halognn
