// Vertex-to-part assignment: METIS k-way or a seeded balanced random permutation.
#include <limits>
#include <numeric>

#include <metis.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "partition/partition.hpp"

namespace halognn {

// The Debian METIS is built with 32-bit indices; the conversions below rely on it.
static_assert(sizeof(idx_t) == 4, "halognn expects METIS built with IDXTYPEWIDTH=32");

std::string to_string(PartitionConfig::Method m) {
  switch (m) {
    case PartitionConfig::Method::metis: return "metis";
    case PartitionConfig::Method::random: return "random";
    case PartitionConfig::Method::parmetis: return "parmetis";
  }
  return "?";
}

std::string to_string(PartitionConfig::Objective o) {
  return o == PartitionConfig::Objective::cut ? "cut" : "vol";
}

PartitionConfig::Method parse_partition_method(const std::string& s) {
  if (s == "metis") return PartitionConfig::Method::metis;
  if (s == "random") return PartitionConfig::Method::random;
  if (s == "parmetis") return PartitionConfig::Method::parmetis;
  throw ConfigError("unknown partition method '" + s + "' (expected metis, random or parmetis)");
}

PartitionConfig::Objective parse_partition_objective(const std::string& s) {
  if (s == "cut") return PartitionConfig::Objective::cut;
  if (s == "vol") return PartitionConfig::Objective::vol;
  throw ConfigError("unknown partition objective '" + s + "' (expected cut or vol)");
}

namespace {

idx_t checked_idx(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<idx_t>::max())
    throw Error(detail::concat("graph too large for METIS (32-bit indices): ", what, " = ", v,
                               " exceeds 2^31-1"));
  return static_cast<idx_t>(v);
}

std::vector<Rank> assign_metis(const GlobalGraph& g, const PartitionConfig& cfg) {
  idx_t nvtxs = checked_idx(g.num_nodes, "vertices");
  checked_idx(g.num_directed_edges(), "adjacency entries");
  std::vector<idx_t> xadj(g.row_ptr.size()), adjncy(g.col.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(xadj.size()); ++i)
    xadj[i] = static_cast<idx_t>(g.row_ptr[i]);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(adjncy.size()); ++i)
    adjncy[i] = static_cast<idx_t>(g.col[i]);

  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] =
      cfg.objective == PartitionConfig::Objective::cut ? METIS_OBJTYPE_CUT : METIS_OBJTYPE_VOL;
  // METIS seeds its own generator from an idx_t; fold the 64-bit seed so every bit matters.
  options[METIS_OPTION_SEED] =
      static_cast<idx_t>((cfg.seed ^ (cfg.seed >> 32)) & 0x7fffffffu);
  options[METIS_OPTION_NUMBERING] = 0;

  idx_t ncon = 1, nparts = cfg.parts, objval = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(nvtxs), 0);
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr,
                                     nullptr, &nparts, nullptr, nullptr, options, &objval,
                                     part.data());
  if (rc != METIS_OK) {
    const char* why = rc == METIS_ERROR_INPUT    ? "input error"
                      : rc == METIS_ERROR_MEMORY ? "out of memory"
                                                 : "internal error";
    throw Error(detail::concat("METIS_PartGraphKway failed (", why, ", code ", rc, ") for ",
                               nvtxs, " vertices into ", nparts, " parts"));
  }
  std::vector<Rank> out(part.begin(), part.end());
  for (Rank p : out) GNN_ASSERT(p >= 0 && p < cfg.parts, "METIS returned part ", p);
  return out;
}

// A uniformly random permutation of the balanced pattern 0,1,..,K-1,0,1,..: every part gets
// floor(N/K) or ceil(N/K) vertices. Fisher-Yates driven by the counter RNG, so the result is a
// pure function of (N, K, seed).
std::vector<Rank> assign_random(const GlobalGraph& g, const PartitionConfig& cfg) {
  const GlobalId n = g.num_nodes;
  std::vector<Rank> out(static_cast<std::size_t>(n));
  for (GlobalId v = 0; v < n; ++v) out[v] = static_cast<Rank>(v % cfg.parts);
  const CounterRng rng(RngKey{cfg.seed, RngPurpose::partition, static_cast<std::uint64_t>(n),
                              static_cast<std::uint64_t>(cfg.parts)});
  for (GlobalId i = n - 1; i > 0; --i) {
    const std::uint64_t r = (static_cast<std::uint64_t>(rng.word(i, 0)) << 32) | rng.word(i, 1);
    const GlobalId j = static_cast<GlobalId>(r % static_cast<std::uint64_t>(i + 1));
    std::swap(out[i], out[j]);
  }
  return out;
}

}  // namespace

std::vector<Rank> assign_parts(const GlobalGraph& g, const PartitionConfig& cfg) {
  GNN_CHECK_CONFIG(cfg.parts >= 1, "--parts must be at least 1 (got ", cfg.parts, ")");
  GNN_CHECK_CONFIG(cfg.parts <= g.num_nodes, "cannot split ", g.num_nodes, " vertices into ",
                   cfg.parts, " parts");
  GNN_CHECK_CONFIG(cfg.method != PartitionConfig::Method::parmetis,
                   "--method parmetis partitions on MPI ranks (distributed_partition), not here");
  if (cfg.parts == 1) return std::vector<Rank>(static_cast<std::size_t>(g.num_nodes), 0);
  if (cfg.method == PartitionConfig::Method::random) return assign_random(g, cfg);
  return assign_metis(g, cfg);
}

}  // namespace halognn
