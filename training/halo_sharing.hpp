#pragma once
/// @file halo_sharing.hpp
/// Which layer inputs (and input gradients) hold their halo rows themselves, and which hand them
/// to a buffer another layer's halo rows also use (docs/training.md "Halo rows shared by
/// layers"). The halo rows of a
/// layer input are written by the exchange in the layer's forward; a layer that splits and does
/// not keep them (Layer::keeps_input_halo) reads them in that forward only, so every such layer
/// can use the same rows one after the other. Input gradients' halo rows live from the layer's
/// backward to the end of its exchange call, one layer at a time, so they all fit in one set.
/// The trainer (training/trainer.cpp) and the memory estimate (training/memory_estimate.cpp)
/// both follow this plan.
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
  /// the trainer's shared buffer; or another layer's index h: in layer h's matrix (its halo
  /// rows). Entry 0 is always kOwn (layer 0 is never exchanged by the policy).
  static constexpr int kOwn = -1;
  static constexpr int kShared = -2;
  std::vector<int> input;     ///< layer inputs x_l
  std::vector<int> gradient;  ///< input gradients gx_l
  std::int64_t shared_width = 0;  ///< the shared buffer's width (0: no shared buffer)
};

/// The plan for layers 0..L-1 (`layers[0]` is not exchanged and is ignored):
/// - inputs: the layers that split and do not keep their halo rows share one set: the halo rows
///   of the last kept layer after all of them, when it is at least as wide (its rows are written
///   in its own forward, after theirs, and read until its backward, before their next forward),
///   else a shared buffer as wide as the widest (only when two or more layers share it);
/// - gradients: every layer that splits, below the last one and not wider than it, writes its
///   input gradient's halo rows into the last layer's (those are dead once the last layer's
///   gradients have been sent, and the last layer's matrix must stay whole: it may hold layer
///   0's dropped-out features, Trainer::layer0_dropout_shared).
HaloSharing plan_halo_sharing(const std::vector<HaloUse>& layers);

}  // namespace halognn
