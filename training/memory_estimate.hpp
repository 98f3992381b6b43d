#pragma once
/// @file memory_estimate.hpp
/// How much memory one rank's training run needs, from its configuration and the sizes of its
/// partition, before anything large is allocated. halognn-train prints the breakdown at start-up
/// (rank 0), prints it and exits with --dry-run, and refuses a run whose estimated peak does not
/// fit the node (--memory-budget, default the node's physical memory) with one line naming the
/// largest term and the options that drive it.
///
/// The estimate mirrors what the Trainer allocates (docs/training.md "Memory estimate" lists every
/// term): each term is a sum of buffer sizes, in host memory or in the memory of the training
/// device. It is exact for the device buffers of a synchronous run with dense layer-0 input
/// (test/training/memory_estimate_mpi_test.cpp compares it with what a counting device
/// allocates); the sparse layer-0 input's halo rows are estimated from the owned rows' density.
/// Not included: the MPI library's own buffers, OpenMP thread stacks, the program's code (which
/// halognn-train measures at start-up and adds: add_process_baseline).
/// Whoever adds a buffer to the Trainer, a layer, an exchange policy or a codec adds it here.
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "partition/local_partition.hpp"
#include "training/train_config.hpp"

namespace halognn {

/// What the estimate needs to know of one rank's partition.
struct PartitionShape {
  std::int64_t num_owned = 0, num_halo = 0;
  std::int64_t adj_nnz = 0;      ///< local adjacency entries (no self-loops)
  std::int64_t num_features = 0;
  std::int64_t num_classes = 0;
  std::int64_t global_nodes = 0;  ///< nodes of the whole graph (ROC AUC ranks them all)
  bool multilabel = false;
  std::int64_t feature_nnz = 0;  ///< non-zero entries of the owned feature rows
  std::int64_t sparse_slots = 0;  ///< sparsified features: positions (bytes) per row; 0: not
  std::vector<std::int64_t> send_counts, recv_counts;  ///< rows per peer, in plan order
  bool send_contiguous = false;  ///< the send rows are 0, 1, 2, ... (no gather buffer)

  std::int64_t num_local() const { return num_owned + num_halo; }
  std::int64_t total_send() const;
  std::int64_t total_recv() const;
  /// The shape of a partition as read (before the Trainer takes it).
  static PartitionShape of(const LocalPartition& part);
};

/// Where the Trainer will run.
struct MemoryPlacement {
  bool device_is_host = true;              ///< the training device is the CPU
  bool transport_takes_device_memory = false;  ///< NCCL: no host staging of exchanges
};

enum class MemorySpace { host, device };

/// One line of the breakdown.
struct MemoryTerm {
  std::string name;     ///< "activations", "exchange buffers", ...
  std::string driver;   ///< what makes it large, naming options ("--hidden, --layers")
  MemorySpace space = MemorySpace::device;
  std::uint64_t bytes = 0;  ///< held from the first epoch on
};

struct MemoryEstimate {
  std::vector<MemoryTerm> terms;
  /// Extra bytes held only while the Trainer is built: the feature matrix as read (host) and its
  /// copy on the device, before the layer-0 input takes over.
  std::uint64_t startup_host = 0, startup_device = 0;
  /// Extra bytes held only for a moment in each epoch (the host copy of the logits for scoring,
  /// evaluation's own exchange buffers while a pipelined exchange is in flight, host staging of
  /// gradient all-reduces on a GPU).
  std::uint64_t epoch_host = 0, epoch_device = 0;
  /// The largest amount held at any one time, per space and (for a CPU run, where both are host
  /// memory) together.
  std::uint64_t peak_host = 0, peak_device = 0, peak_total = 0;

  std::uint64_t steady(MemorySpace space) const;
  /// The term with the most bytes.
  const MemoryTerm& largest() const;
  Json to_json() const;
};

/// Adds the process's own memory before any data (the program, its shared libraries, the MPI
/// library as initialised; measured, not estimated) as a host term, to the steady and peak
/// figures. halognn-train adds it; the estimate of the Trainer's buffers alone leaves it out.
void add_process_baseline(MemoryEstimate& e, std::uint64_t bytes);

/// The estimate for one rank. Throws ConfigError for a codec name that does not exist.
MemoryEstimate estimate_training_memory(const TrainConfig& cfg, const PartitionShape& shape,
                                        const MemoryPlacement& where);

/// "1.23 GiB", "512.0 MiB", "12.0 KiB", "100 B".
std::string format_bytes(double bytes);

/// The memory one node offers: physical memory, lowered to the cgroup limit of this process when
/// there is one (v2 memory.max or v1 memory.limit_in_bytes).
std::uint64_t node_memory_bytes();

}  // namespace halognn
