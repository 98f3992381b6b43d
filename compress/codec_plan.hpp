#pragma once
/// @file codec_plan.hpp
/// Codec names and the per-layer, per-direction codec choice of a training run.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compress/codec.hpp"

namespace halognn {

/// Every name make_codec accepts, in the order they are documented (docs/codecs.md).
const std::vector<std::string>& codec_names();

/// The codec of every layer's halo exchange, per direction. Layer l's forward exchange sends the
/// input rows of layer l; its backward exchange sends the gradients of those rows.
struct CodecPlan {
  std::vector<std::shared_ptr<const Codec>> forward;   ///< one per layer
  std::vector<std::shared_ptr<const Codec>> backward;  ///< one per layer
};

/// Builds a CodecPlan from command-line specs. Each spec is empty, one codec name (used for every
/// layer), or a comma-separated list of exactly `layers` names ("fp32,q1,q1"); spaces around
/// names are ignored. `fwd` and `bwd` default to `all` when empty, and `all` defaults to "fp32".
/// Equal names share one codec object.
/// @param all     spec for both directions (e.g. the value of --codec)
/// @param fwd     spec for the forward exchanges (--codec-fwd)
/// @param bwd     spec for the backward exchanges (--codec-bwd)
/// @param layers  number of layers (>= 1)
/// @throws ConfigError naming the bad spec, the bad token and the valid names.
CodecPlan parse_codec_plan(std::string_view all, std::string_view fwd, std::string_view bwd,
                           int layers);

/// One line describing a plan, e.g. "fwd fp32,q1 bwd q1,q1".
std::string describe(const CodecPlan& plan);

}  // namespace halognn
