// The plan of which layer inputs and input gradients share their halo rows
// (training/halo_sharing.hpp, docs/training.md "Halo rows shared by layers"). A layer input whose
// halo rows another layer still needs must never be handed to a layer that writes them first.
#include <gtest/gtest.h>

#include <algorithm>

#include "training/halo_sharing.hpp"

namespace halognn {
namespace {

constexpr int kOwn = HaloSharing::kOwn, kShared = HaloSharing::kShared,
              kLast = HaloSharing::kLastInput;

/// Layers whose halo rows are elsewhere (their matrix holds the owned rows only).
int elsewhere(const std::vector<int>& hosts) {
  return static_cast<int>(std::count_if(hosts.begin(), hosts.end(), [](int h) { return h != kOwn; }));
}

HaloUse free_rows(std::int64_t w) { return {w, true, false}; }  // splits, keeps nothing
HaloUse kept(std::int64_t w) { return {w, true, true}; }        // splits, transforms first
HaloUse whole(std::int64_t w) { return {w, false, true}; }      // GAT, residual: no split

TEST(HaloSharing, TheUsualShapeKeepsOneSetOfHaloRowsInTheLastLayersInput) {
  // The usual shape: layer 0 (features), hidden layers that aggregate first, the last layer
  // transforms first (narrower output). Its input's halo rows serve the middle layers' inputs
  // in the forward and every input gradient in the backward, its own included (written by its
  // backward_halo after its last read of its input's).
  const HaloSharing s = plan_halo_sharing({kept(100), free_rows(64), free_rows(64), kept(64)});
  EXPECT_EQ(s.input, (std::vector<int>{kOwn, 3, 3, kOwn}));
  EXPECT_EQ(s.gradient, (std::vector<int>{kOwn, kLast, kLast, kLast}));
  EXPECT_EQ(s.shared_width, 0);
  EXPECT_EQ(elsewhere(s.input), 2);
  EXPECT_EQ(elsewhere(s.gradient), 3);
  // Two layers: the last one's gradient halo rows are its input's.
  const HaloSharing two = plan_halo_sharing({kept(10), free_rows(16)});
  EXPECT_EQ(two.input, (std::vector<int>{kOwn, kOwn}));
  EXPECT_EQ(two.gradient, (std::vector<int>{kOwn, kLast}));
}

TEST(HaloSharing, WiderFreeLayersUseTheHaloRowsOfTheLastKeptLayer) {
  // Layers 1 and 2 are wider than the last layer's input: layer 3 hosts them (it fills its
  // halo rows after theirs and reads them until its backward).
  const HaloSharing s =
      plan_halo_sharing({kept(10), free_rows(64), free_rows(64), kept(64), kept(16)});
  EXPECT_EQ(s.input, (std::vector<int>{kOwn, 3, 3, kOwn, kOwn}));
  EXPECT_EQ(s.gradient, (std::vector<int>{kOwn, kOwn, kOwn, kOwn, kLast}));
  EXPECT_EQ(s.shared_width, 0);
}

TEST(HaloSharing, AKeptLayerBeforeAFreeOneHostsNothing) {
  // Layer 2 keeps its halo rows from its forward to its backward, when layer 3's forward has
  // written its own: layer 3 must not use them. Layers 1 and 3 share a buffer instead.
  const HaloSharing s =
      plan_halo_sharing({kept(10), free_rows(32), kept(64), free_rows(48), kept(16)});
  EXPECT_EQ(s.input, (std::vector<int>{kOwn, kShared, kOwn, kShared, kOwn}));
  EXPECT_EQ(s.shared_width, 48);
  // Layer 3 last and wide enough: layer 1 uses its halo rows, the kept layer 2 its own.
  const HaloSharing t = plan_halo_sharing({kept(10), free_rows(32), kept(64), free_rows(48)});
  EXPECT_EQ(t.input, (std::vector<int>{kOwn, 3, kOwn, kOwn}));
  EXPECT_EQ(t.gradient, (std::vector<int>{kOwn, kLast, kOwn, kLast}));
  EXPECT_EQ(t.shared_width, 0);
}

TEST(HaloSharing, ANarrowerLastLayerHostsNoWiderRows) {
  const HaloSharing s = plan_halo_sharing({kept(10), free_rows(64), kept(32)});
  EXPECT_EQ(s.input, (std::vector<int>{kOwn, kOwn, kOwn}));  // one wider free layer: no sharing
  EXPECT_EQ(s.gradient, (std::vector<int>{kOwn, kOwn, kLast}));
  EXPECT_EQ(s.shared_width, 0);
  // Two wider free layers and no host: a shared buffer as wide as the widest.
  const HaloSharing t = plan_halo_sharing({kept(10), free_rows(64), free_rows(16), kept(8)});
  EXPECT_EQ(t.input, (std::vector<int>{kOwn, kShared, kShared, kOwn}));
  EXPECT_EQ(t.shared_width, 64);
  EXPECT_EQ(t.gradient, (std::vector<int>{kOwn, kOwn, kOwn, kLast}));
}

TEST(HaloSharing, ALastLayerThatDoesNotSplitHostsInputsAndItsGradientTheGradients) {
  // GAT last: its backward reads its input whole after writing its gradient whole, so the
  // gradients below it use its gradient's halo rows, the free inputs its input's.
  const HaloSharing s = plan_halo_sharing({kept(10), free_rows(16), free_rows(16), whole(16)});
  EXPECT_EQ(s.input, (std::vector<int>{kOwn, 3, 3, kOwn}));
  EXPECT_EQ(s.gradient, (std::vector<int>{kOwn, 3, 3, kOwn}));
}

TEST(HaloSharing, LayersThatDoNotSplitKeepEverything) {
  const HaloSharing s = plan_halo_sharing({whole(10), whole(16), whole(16), whole(8)});
  EXPECT_EQ(s.input, (std::vector<int>(4, kOwn)));
  EXPECT_EQ(s.gradient, (std::vector<int>(4, kOwn)));
  EXPECT_EQ(elsewhere(plan_halo_sharing({kept(10)}).gradient), 0);
}

}  // namespace
}  // namespace halognn
