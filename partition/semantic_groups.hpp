#pragma once
/// @file semantic_groups.hpp
/// Semantic groups of the halo exchange (SC-GNN; docs/semantic_groups.md). For every ordered pair
/// of parts p -> q, the directed boundary graph has the nodes U of p with a neighbour in q, their
/// neighbours V in q and the cross edges. Its connected components are classified O2O (one edge),
/// O2M (one u, several v), M2O (several u, one v) and M2M (the rest). O2O, O2M and M2O components
/// are groups as they are; the u of M2M components are clustered by k-means in the space of the
/// semantic similarity S(u1, u2) = |N(u1) ∩ N(u2)|² / (|N(u1)| + |N(u2)|) (neighbourhoods within
/// V), with the group count at the elbow of the inertia curve or fixed.
///
/// A group g with cross edges E_g and in-group degrees D_g sends one row
/// m_g = Σ_u w_u β_u h_u with w_u = D_g(u) / |E_g|, and the receiver adds α_v D_g(v) m_g to z_v:
/// exact when the group is a complete bipartite block, mass-preserving otherwise. Its structural
/// error is ‖B − B̃‖_F / ‖B‖_F with B the link's 0/1 block and B̃_vu = D_g(v) D_g(u) / |E_g|.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/json.hpp"
#include "core/types.hpp"
#include "partition/local_partition.hpp"

namespace halognn {

enum class ConnectionKind : std::uint8_t { o2o = 0, o2m = 1, m2o = 2, m2m = 3 };

/// "o2o" | "o2m" | "m2o" | "m2m".
const char* to_string(ConnectionKind k);

struct GroupingConfig {
  /// M2M groups per link: 0 chooses the count at the elbow of the inertia curve; otherwise this
  /// many (at least one per M2M component: a group never spans two components, whose nodes share
  /// no neighbour).
  int groups_per_link = 0;
  /// O2O connections are not sent at all (SC-GNN's differential optimisation).
  bool drop_o2o = false;
  /// Lloyd iterations of k-means at most (it stops earlier when no node moves).
  int max_iterations = 20;
  std::uint64_t seed = 1;
};

/// The boundary graph of one link p -> q: U and V as global ids (ascending) and the cross edges
/// as CSR over U (columns index V).
struct BoundaryGraph {
  Rank from = 0, to = 0;
  std::vector<GlobalId> u, v;
  std::vector<std::int64_t> u_ptr{0};
  std::vector<std::int32_t> u_col;
  std::int64_t edges() const { return static_cast<std::int64_t>(u_col.size()); }
};

/// The boundary graphs of every ordered pair of parts with at least one cross edge, ordered by
/// (from, to). One pass over the graph.
std::vector<BoundaryGraph> boundary_graphs(const GlobalGraph& g, const std::vector<Rank>& parts,
                                           Rank num_parts);

/// Groups of one link and what they cost and save.
struct LinkGroups {
  Rank from = 0, to = 0;
  /// Per group: its kind and its members (global ids of U nodes, ascending), with
  /// w_u = D_g(u) / |E_g| per member. Groups are ordered by their smallest member.
  std::vector<ConnectionKind> kind;
  std::vector<std::int64_t> ptr{0};
  std::vector<GlobalId> members;
  std::vector<float> weight;

  // The report.
  std::int64_t u_nodes = 0, v_nodes = 0, edges = 0;
  std::array<std::int64_t, 4> edges_by_kind{};  ///< cross edges per ConnectionKind
  std::int64_t dropped_rows = 0;                ///< U nodes of dropped O2O connections
  int m2m_components = 0;
  double error = 0;                             ///< ‖B − B̃‖_F / ‖B‖_F (dropped edges: B̃ = 0)
  /// The elbow search: (M2M group count, within-group inertia) per count tried, ascending.
  std::vector<std::pair<int, double>> inertia_curve;
  /// The clustering's work: (node or cluster, neighbour, centre) meetings walked through the
  /// sparse structure, plus edges and support entries scanned. Linear in the link's two-hop size
  /// Σ_v deg_U(v)² (times the iteration and pass counts), never in |U|².
  std::int64_t work = 0;

  std::int64_t num_groups() const { return static_cast<std::int64_t>(kind.size()); }
  /// Rows the link sends per exchange: one per group, against u_nodes for plain rows.
  std::int64_t rows_sent() const { return num_groups(); }
  Json to_json() const;
};

/// Groups one link. Deterministic for (graph, config).
LinkGroups group_link(const BoundaryGraph& b, const GroupingConfig& cfg);

/// Groups every link of the assignment (parallel over links).
std::vector<LinkGroups> group_links(const GlobalGraph& g, const std::vector<Rank>& parts,
                                    Rank num_parts, const GroupingConfig& cfg);

/// Gives `lp` (rank lp.rank) its ends of `links`: send_groups from the links it sends on,
/// recv_groups from those it receives on, in the order of lp.send and lp.recv, members as local
/// ids. A link of the plan without groups (every row dropped) gets an empty entry.
void attach_groups(LocalPartition& lp, const std::vector<LinkGroups>& links);

/// Checks lp's groups against its plan (peers as in send/recv, members among that peer's rows,
/// none twice, weights positive and summing to 1 per group, kinds valid); InputError(origin, ...)
/// naming the first problem.
void validate_groups(const LocalPartition& lp, const std::string& origin);

/// ‖B − B̃‖_F / ‖B‖_F of `b` when U is split into the given groups (group index per U node,
/// -1: not sent). Used for the report and to compare groupings.
double grouping_error(const BoundaryGraph& b, const std::vector<std::int32_t>& group_of);

/// The elbow of a decreasing curve: the point of largest (Menger) curvature after both axes are
/// scaled to [0, 1]; the first point when there are fewer than three.
std::size_t elbow_index(const std::vector<std::pair<int, double>>& curve);

}  // namespace halognn
