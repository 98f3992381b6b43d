// Structural checks of one LocalPartition (what a rank can verify without the others).
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "partition/partition.hpp"

namespace halognn {

namespace {

void check_plan(const LocalPartition& lp, const std::vector<PeerRows>& plan, const char* name,
                const std::string& origin) {
  Rank prev = -1;
  for (const PeerRows& pr : plan) {
    GNN_CHECK_INPUT(pr.peer >= 0 && pr.peer < lp.num_parts && pr.peer != lp.rank, origin, name,
                    " plan names peer ", pr.peer, " (rank ", lp.rank, " of ", lp.num_parts, ")");
    GNN_CHECK_INPUT(pr.peer > prev, origin, name, " plan peers are not strictly ascending at ",
                    pr.peer);
    GNN_CHECK_INPUT(!pr.rows.empty(), origin, name, " plan for peer ", pr.peer, " is empty");
    prev = pr.peer;
  }
}

}  // namespace

void validate_local_partition(const LocalPartition& lp, const std::string& origin) {
  GNN_CHECK_INPUT(lp.num_parts >= 1 && lp.rank >= 0 && lp.rank < lp.num_parts, origin, "rank ",
                  lp.rank, " outside [0, ", lp.num_parts, ")");
  GNN_CHECK_INPUT(lp.num_owned >= 0 && lp.num_halo >= 0, origin, "negative vertex counts");
  const std::int64_t n_local = static_cast<std::int64_t>(lp.num_owned) + lp.num_halo;
  GNN_CHECK_INPUT(n_local <= lp.global_num_nodes, origin, "has ", n_local,
                  " local vertices but the graph only ", lp.global_num_nodes);
  GNN_CHECK_INPUT(static_cast<std::int64_t>(lp.global_ids.size()) == n_local, origin,
                  "global id list has ", lp.global_ids.size(), " entries, expected ", n_local);
  for (std::int64_t i = 0; i < n_local; ++i) {
    const GlobalId v = lp.global_ids[i];
    GNN_CHECK_INPUT(v >= 0 && v < lp.global_num_nodes, origin, "global id ", v, " of local row ",
                    i, " outside [0, ", lp.global_num_nodes, ")");
  }
  // Owned rows are in the partition's locality order (any order), but each vertex once.
  {
    std::vector<GlobalId> owned(lp.global_ids.begin(), lp.global_ids.begin() + lp.num_owned);
    std::sort(owned.begin(), owned.end());
    const auto dup = std::adjacent_find(owned.begin(), owned.end());
    GNN_CHECK_INPUT(dup == owned.end(), origin, "global id ", dup == owned.end() ? 0 : *dup,
                    " is owned twice");
  }

  // Halo rows: exactly the concatenation of the receive plan, ascending ids per owner.
  check_plan(lp, lp.recv, "receive", origin);
  std::int64_t next = lp.num_owned;
  for (const PeerRows& pr : lp.recv)
    for (std::size_t i = 0; i < pr.rows.size(); ++i, ++next) {
      GNN_CHECK_INPUT(pr.rows[i] == next, origin, "receive plan from peer ", pr.peer,
                      " lists row ", pr.rows[i], " where halo row ", next,
                      " was expected (halo rows must be grouped by owner)");
      if (i > 0)
        GNN_CHECK_INPUT(lp.global_ids[pr.rows[i - 1]] < lp.global_ids[pr.rows[i]], origin,
                        "halo rows from peer ", pr.peer, " are not in ascending global id order");
    }
  GNN_CHECK_INPUT(next == n_local, origin, "receive plans cover ", next - lp.num_owned,
                  " halo rows, expected ", lp.num_halo);

  check_plan(lp, lp.send, "send", origin);
  for (const PeerRows& pr : lp.send)
    for (std::size_t i = 0; i < pr.rows.size(); ++i) {
      GNN_CHECK_INPUT(pr.rows[i] >= 0 && pr.rows[i] < lp.num_owned, origin, "send plan to peer ",
                      pr.peer, " lists row ", pr.rows[i], " which is not owned");
      if (i > 0)
        GNN_CHECK_INPUT(lp.global_ids[pr.rows[i - 1]] < lp.global_ids[pr.rows[i]], origin,
                        "send plan to peer ", pr.peer, " is not in ascending global id order");
    }

  // Adjacency: sorted, in range, no self-loops, owned rows complete (length = global degree),
  // every halo row referenced.
  GNN_CHECK_INPUT(static_cast<std::int64_t>(lp.row_ptr.size()) == lp.num_owned + 1, origin,
                  "row_ptr has ", lp.row_ptr.size(), " entries, expected ", lp.num_owned + 1);
  GNN_CHECK_INPUT(lp.row_ptr[0] == 0 &&
                      lp.row_ptr[lp.num_owned] == static_cast<std::int64_t>(lp.col.size()),
                  origin, "row_ptr does not span the ", lp.col.size(), " column entries");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(lp.col.size()) <= lp.global_num_directed_edges,
                  origin, "more local adjacency entries than the whole graph has");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(lp.global_degree.size()) == n_local, origin,
                  "degree list has ", lp.global_degree.size(), " entries, expected ", n_local);
  std::vector<std::uint8_t> halo_used(static_cast<std::size_t>(lp.num_halo), 0);
  for (LocalId i = 0; i < lp.num_owned; ++i) {
    const std::int32_t b = lp.row_ptr[i], e = lp.row_ptr[i + 1];
    GNN_CHECK_INPUT(b <= e, origin, "row_ptr decreases at row ", i);
    GNN_CHECK_INPUT(lp.global_degree[i] == e - b, origin, "owned row ", i, " has ", e - b,
                    " neighbours but global degree ", lp.global_degree[i]);
    for (std::int32_t k = b; k < e; ++k) {
      const LocalId c = lp.col[k];
      GNN_CHECK_INPUT(c >= 0 && c < n_local, origin, "column ", c, " in row ", i,
                      " outside [0, ", n_local, ")");
      GNN_CHECK_INPUT(c != i, origin, "self-loop in row ", i);
      GNN_CHECK_INPUT(k == b || lp.col[k - 1] < c, origin, "columns of row ", i,
                      " are not strictly ascending");
      if (c >= lp.num_owned) halo_used[c - lp.num_owned] = 1;
    }
  }
  for (LocalId h = 0; h < lp.num_halo; ++h) {
    GNN_CHECK_INPUT(halo_used[h], origin, "halo row ", lp.num_owned + h,
                    " is not adjacent to any owned row");
    GNN_CHECK_INPUT(lp.global_degree[lp.num_owned + h] >= 1, origin, "halo row ",
                    lp.num_owned + h, " has global degree ", lp.global_degree[lp.num_owned + h]);
  }

  // Node data.
  GNN_CHECK_INPUT(lp.features.rows() == lp.num_owned, origin, "feature matrix has ",
                  lp.features.rows(), " rows, expected ", lp.num_owned);
  GNN_CHECK_INPUT(lp.num_classes >= 0, origin, "negative class count");
  if (lp.multilabel) {
    GNN_CHECK_INPUT(static_cast<std::int64_t>(lp.label_matrix.size()) ==
                        static_cast<std::int64_t>(lp.num_owned) * lp.num_classes,
                    origin, "label matrix has ", lp.label_matrix.size(), " entries, expected ",
                    static_cast<std::int64_t>(lp.num_owned) * lp.num_classes);
    for (std::uint8_t x : lp.label_matrix)
      GNN_CHECK_INPUT(x <= 1, origin, "label matrix entry ", int(x), " is not 0/1");
  } else {
    GNN_CHECK_INPUT(static_cast<std::int64_t>(lp.labels.size()) == lp.num_owned, origin,
                    "label list has ", lp.labels.size(), " entries, expected ", lp.num_owned);
    for (std::int32_t y : lp.labels)
      GNN_CHECK_INPUT(y >= -1 && y < lp.num_classes, origin, "label ", y, " outside [-1, ",
                      lp.num_classes, ")");
  }
  const std::vector<std::uint8_t>* masks[3] = {&lp.train_mask, &lp.val_mask, &lp.test_mask};
  const std::int64_t global[3] = {lp.global_train, lp.global_val, lp.global_test};
  const char* names[3] = {"train", "val", "test"};
  for (int s = 0; s < 3; ++s) {
    GNN_CHECK_INPUT(static_cast<std::int64_t>(masks[s]->size()) == lp.num_owned, origin,
                    names[s], " mask has ", masks[s]->size(), " entries, expected ", lp.num_owned);
    std::int64_t count = 0;
    for (std::uint8_t x : *masks[s]) {
      GNN_CHECK_INPUT(x <= 1, origin, names[s], " mask entry ", int(x), " is not 0/1");
      count += x;
    }
    GNN_CHECK_INPUT(count <= global[s], origin, names[s], " mask marks ", count,
                    " vertices but the whole split has ", global[s]);
  }
  for (LocalId i = 0; i < lp.num_owned; ++i)
    GNN_CHECK_INPUT(lp.train_mask[i] + lp.val_mask[i] + lp.test_mask[i] <= 1, origin,
                    "owned row ", i, " is in more than one split");
}

}  // namespace halognn
