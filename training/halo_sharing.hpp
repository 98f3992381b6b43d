#pragma once
/// @file halo_sharing.hpp
/// Which layer inputs (and input gradients) hold their halo rows themselves, and which hand them
/// to memory other layers' halo rows also use (docs/training.md "Halo rows shared by layers").
/// The halo rows of a layer input are written by the exchange in the layer's forward; a layer
/// that splits and does not keep them (Layer::keeps_input_halo) reads them in that forward only,
/// one that keeps them reads them last in its backward_halo, before it writes its input
/// gradient's halo rows. Input gradients' halo rows live from the layer's backward to the end of
/// its exchange, one layer at a time. The trainer (training/trainer.cpp) and the memory estimate
/// (training/memory_estimate.cpp) both follow this plan.
#include <cstdint>
#include <vector>

namespace halognn {

/// Layer l's input as the plan sees it.
struct HaloUse {
  std::int64_t width = 0;  ///< in_dim(l)
  bool splits = false;     ///< Layer::splits(): reads its owned and halo rows as two views
  /// The layer's backward reads the halo rows of the matrix the exchange filled: it keeps its
  /// input halo (Layer::keeps_input_halo) and reads that matrix itself (no dropout copy).
  bool kept = true;
};

struct HaloSharing {
  /// Where layer l's halo rows are: kOwn, in its own matrix after its owned rows; kShared, in
  /// the trainer's shared buffer; kLastInput, in the last layer's input's halo rows; or another
  /// layer's index h: in layer h's input matrix (inputs) or input gradient matrix (gradients),
  /// after its owned rows. Entry 0 is always kOwn (layer 0 is never exchanged by the policy).
  static constexpr int kOwn = -1;
  static constexpr int kShared = -2;
  static constexpr int kLastInput = -3;
  std::vector<int> input;     ///< layer inputs x_l
  std::vector<int> gradient;  ///< input gradients gx_l
  std::int64_t shared_width = 0;  ///< the shared buffer's width (0: no shared buffer)
};

/// The plan for layers 0..L-1 (`layers[0]` is not exchanged and is ignored). The last layer's
/// input keeps its halo rows, and they hold, when the last layer splits:
/// - the halo rows of every input gradient that splits and is no wider, the last layer's own
///   included (kLastInput): one layer's at a time, from its backward to the end of its exchange,
///   the last layer's written by its backward_halo after its last read of its input's;
/// - the halo rows of the inputs that split, do not keep them and are no wider (index L-1):
///   written and read in their forward, before the last layer's forward writes its own.
/// When the last layer does not split (its backward reads its input whole), the input gradients
/// below it that split and are no wider write their halo rows into its input gradient's (index
/// L-1), dead once its gradients have been sent.
/// The other inputs that split and do not keep their halo rows share one set: the halo rows of
/// the last layer after all of them that keeps its own, when it is at least as wide (its rows
/// are written in its own forward, after theirs, and read until its backward, before their next
/// forward), else a shared buffer as wide as the widest (only when two or more share it).
HaloSharing plan_halo_sharing(const std::vector<HaloUse>& layers);

}  // namespace halognn
