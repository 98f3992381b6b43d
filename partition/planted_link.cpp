// The planted boundary graph (see planted_link.hpp).
#include "partition/planted_link.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace halognn {

BoundaryGraph planted_link(const PlantedLinkConfig& c) {
  const std::int64_t nu = c.u, nv = c.v > 0 ? c.v : c.u;
  GNN_CHECK_CONFIG(nu >= 1 && nv >= 1, "a planted link needs |U| and |V| of at least 1");
  GNN_CHECK_CONFIG(c.communities >= 1 && c.communities <= std::min(nu, nv),
                   "planted communities must lie in [1, min(|U|, |V|)] (got ", c.communities, ")");
  GNN_CHECK_CONFIG(c.mix >= 0 && c.mix <= 1, "planted mix must lie in [0, 1] (got ", c.mix, ")");
  // The smallest community part of V bounds the degree when no edge may leave it.
  const std::int64_t smallest = nv / c.communities;
  GNN_CHECK_CONFIG(c.degree >= 1 && c.degree <= (c.mix > 0 ? nv : smallest),
                   "planted degree ", c.degree, " cannot be drawn (|V| ", nv, ", community part ",
                   smallest, ", mix ", c.mix, ")");
  const CounterRng rng(RngKey{c.seed, RngPurpose::generator, 0x706c616e74ull, 0});
  BoundaryGraph b;
  b.from = 0;
  b.to = 1;
  b.u.resize(static_cast<std::size_t>(nu));
  for (std::int64_t i = 0; i < nu; ++i) b.u[static_cast<std::size_t>(i)] = i;
  b.v.resize(static_cast<std::size_t>(nv));
  for (std::int64_t i = 0; i < nv; ++i) b.v[static_cast<std::size_t>(i)] = nu + i;
  b.u_ptr.reserve(static_cast<std::size_t>(nu) + 1);
  b.u_col.reserve(static_cast<std::size_t>(nu * c.degree));
  std::vector<std::int32_t> row;
  for (std::int64_t u = 0; u < nu; ++u) {
    const std::int64_t com = u * c.communities / nu;
    const std::int64_t lo = com * nv / c.communities, hi = (com + 1) * nv / c.communities;
    row.clear();
    // Rejection of repeats: with degree <= the part drawn from (checked above) this ends; the
    // counter only needs to be unique per draw.
    for (std::uint64_t draw = 0; static_cast<std::int64_t>(row.size()) < c.degree; draw += 2) {
      const bool local = c.mix < 1 && rng.uniform_double(static_cast<std::uint64_t>(u), draw) >= c.mix;
      const double x = rng.uniform_double(static_cast<std::uint64_t>(u), draw + 1);
      const std::int64_t span = local ? hi - lo : nv, base = local ? lo : 0;
      const auto v = static_cast<std::int32_t>(base + std::min(static_cast<std::int64_t>(x * static_cast<double>(span)), span - 1));
      if (std::find(row.begin(), row.end(), v) == row.end()) row.push_back(v);
    }
    std::sort(row.begin(), row.end());
    b.u_col.insert(b.u_col.end(), row.begin(), row.end());
    b.u_ptr.push_back(static_cast<std::int64_t>(b.u_col.size()));
  }
  return b;
}

}  // namespace halognn
