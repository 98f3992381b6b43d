// PT-Scotch's k-way partitioning, seeded and deterministic (scotch_kway.hpp).
#include "partition/scotch_kway.hpp"

#include <type_traits>

#include <ptscotch.h>

#include "core/error.hpp"

namespace halognn::dist {

static_assert(sizeof(SCOTCH_Num) == 8,
              "halognn needs PT-Scotch with 64-bit SCOTCH_Num (Debian: scotch-int64 of "
              "libptscotch-dev)");

namespace {
/// Throws naming `what` when a PT-Scotch call returned non-zero (PT-Scotch reports the details
/// on stderr itself).
void scotch_check(int rc, const char* what) {
  if (rc != 0) throw Error(detail::concat("PT-Scotch: ", what, " failed (code ", rc, ")"));
}
}  // namespace

std::vector<std::int64_t> scotch_kway(MPI_Comm comm, const DistGraph& g, Rank parts,
                                      double imbalance, std::uint64_t seed) {
  int k = 1;
  MPI_Comm_size(comm, &k);
  static_assert(std::is_same_v<SCOTCH_Num, EdgeOffset> && std::is_same_v<SCOTCH_Num, std::int64_t>);
  const SCOTCH_Num n = g.n();
  // The rows with global neighbour ids (Scotch reads these arrays without writing them).
  std::vector<SCOTCH_Num> edges(g.adj.size());
  for (std::size_t e = 0; e < g.adj.size(); ++e) edges[e] = g.global(g.adj[e]);
  auto* vert = const_cast<SCOTCH_Num*>(g.row_ptr.data());
  auto* velo = g.vertex_weight.empty() ? nullptr : const_cast<SCOTCH_Num*>(g.vertex_weight.data());
  auto* edlo = g.edge_weight.empty() ? nullptr : const_cast<SCOTCH_Num*>(g.edge_weight.data());
  const auto m = static_cast<SCOTCH_Num>(edges.size());
  std::vector<SCOTCH_Num> part(static_cast<std::size_t>(n), 0);
  SCOTCH_Dgraph graph, bound;
  SCOTCH_Context context;
  SCOTCH_Strat strat;
  scotch_check(SCOTCH_dgraphInit(&graph, comm), "SCOTCH_dgraphInit");
  scotch_check(SCOTCH_dgraphInit(&bound, comm), "SCOTCH_dgraphInit");
  scotch_check(SCOTCH_contextInit(&context), "SCOTCH_contextInit");
  scotch_check(SCOTCH_stratInit(&strat), "SCOTCH_stratInit");
  int rc = 0;
  const char* what = "";
  auto step = [&](int r, const char* name) {
    if (rc == 0 && r != 0) {
      rc = r;
      what = name;
    }
  };
  step(SCOTCH_dgraphBuild(&graph, 0, n, n, vert, vert + 1, velo, nullptr, m, m, edges.data(),
                          nullptr, edlo),
       "SCOTCH_dgraphBuild");
  // One Scotch thread per rank: with more, PT-Scotch's folding calls MPI from several threads at
  // once, which MPI initialised without MPI_THREAD_MULTIPLE does not allow (a crash inside
  // SCOTCH_dgraphFold2 at 4 ranks).
  step(SCOTCH_contextThreadSpawn(&context, 1, nullptr), "SCOTCH_contextThreadSpawn");
  step(SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1),
       "SCOTCH_contextOptionSetNum (deterministic)");
  step(SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1),
       "SCOTCH_contextOptionSetNum (fixed seed)");
  if (rc == 0) SCOTCH_contextRandomSeed(&context, static_cast<SCOTCH_Num>(seed));
  if (rc == 0) step(SCOTCH_contextBindDgraph(&context, &graph, &bound), "SCOTCH_contextBindDgraph");
  if (rc == 0)
    step(SCOTCH_stratDgraphMapBuild(&strat, SCOTCH_STRATDEFAULT, k, parts, imbalance),
         "SCOTCH_stratDgraphMapBuild");
  if (rc == 0) step(SCOTCH_dgraphPart(&bound, parts, &strat, part.data()), "SCOTCH_dgraphPart");
  SCOTCH_stratExit(&strat);
  SCOTCH_dgraphExit(&bound);
  SCOTCH_contextExit(&context);
  SCOTCH_dgraphExit(&graph);
  scotch_check(rc, what);
  for (SCOTCH_Num i = 0; i < n; ++i)
    GNN_ASSERT(part[i] >= 0 && part[i] < parts, "PT-Scotch returned part ", part[i]);
  return part;
}

}  // namespace halognn::dist
