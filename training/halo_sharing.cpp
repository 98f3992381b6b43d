#include "training/halo_sharing.hpp"

#include <algorithm>

namespace halognn {

HaloSharing plan_halo_sharing(const std::vector<HaloUse>& layers) {
  const int L = static_cast<int>(layers.size());
  HaloSharing s;
  s.input.assign(layers.size(), HaloSharing::kOwn);
  s.gradient.assign(layers.size(), HaloSharing::kOwn);
  if (L < 2) return s;

  std::vector<int> free_rows;  // layers whose input halo rows are dead after their forward
  std::int64_t widest = 0;
  for (int l = 1; l < L; ++l) {
    const HaloUse& u = layers[static_cast<std::size_t>(l)];
    if (u.splits && !u.kept) {
      free_rows.push_back(l);
      widest = std::max(widest, u.width);
    }
  }
  if (!free_rows.empty()) {
    int host = HaloSharing::kOwn;
    for (int h = L - 1; h > free_rows.back(); --h)
      if (layers[static_cast<std::size_t>(h)].width >= widest) {
        host = h;
        break;
      }
    if (host == HaloSharing::kOwn && free_rows.size() >= 2) {
      host = HaloSharing::kShared;
      s.shared_width = widest;
    }
    if (host != HaloSharing::kOwn)
      for (const int l : free_rows) s.input[static_cast<std::size_t>(l)] = host;
  }

  const int last = L - 1;
  for (int l = 1; l < last; ++l) {
    const HaloUse& u = layers[static_cast<std::size_t>(l)];
    if (u.splits && u.width <= layers[static_cast<std::size_t>(last)].width)
      s.gradient[static_cast<std::size_t>(l)] = last;
  }
  return s;
}

}  // namespace halognn
