#include "training/halo_sharing.hpp"

#include <algorithm>

namespace halognn {

HaloSharing plan_halo_sharing(const std::vector<HaloUse>& layers) {
  const int L = static_cast<int>(layers.size());
  HaloSharing s;
  s.input.assign(layers.size(), HaloSharing::kOwn);
  s.gradient.assign(layers.size(), HaloSharing::kOwn);
  if (L < 2) return s;
  const int last = L - 1;
  const HaloUse& top = layers[static_cast<std::size_t>(last)];

  for (int l = 1; l <= last; ++l) {
    const HaloUse& u = layers[static_cast<std::size_t>(l)];
    if (!u.splits || u.width > top.width) continue;
    if (top.splits) s.gradient[static_cast<std::size_t>(l)] = HaloSharing::kLastInput;
    else if (l < last) s.gradient[static_cast<std::size_t>(l)] = last;
  }

  std::vector<int> free_rows;  // dead after their forward, not yet placed
  std::int64_t widest = 0;
  for (int l = 1; l < last; ++l) {
    const HaloUse& u = layers[static_cast<std::size_t>(l)];
    if (!u.splits || u.kept) continue;
    if (top.splits && u.width <= top.width) {
      s.input[static_cast<std::size_t>(l)] = last;
    } else {
      free_rows.push_back(l);
      widest = std::max(widest, u.width);
    }
  }
  if (!free_rows.empty()) {
    int host = HaloSharing::kOwn;
    for (int h = last; h > free_rows.back(); --h) {
      const HaloUse& u = layers[static_cast<std::size_t>(h)];
      if ((!u.splits || u.kept || h == last) && u.width >= widest) {
        host = h;
        break;
      }
    }
    if (host == HaloSharing::kOwn && free_rows.size() >= 2) {
      host = HaloSharing::kShared;
      s.shared_width = widest;
    }
    if (host != HaloSharing::kOwn)
      for (const int l : free_rows) s.input[static_cast<std::size_t>(l)] = host;
  }
  return s;
}

}  // namespace halognn
