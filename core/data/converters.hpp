#pragma once
/// @file converters.hpp
/// Converters from the public source layouts (the folders of shared/datasets and OGB's raw CSV
/// layout) into the in-memory Dataset, which write_dataset then stores in our one on-disk
/// format. Every converter validates what it reads and throws InputError naming the file.
///
/// What each converter records in `Dataset::meta` (see docs/datasets.md):
///   "source_format", "source" (the files read), "split" ({"kind", ...}), "class_names" when the
///   source has them, "features_missing" (nodes whose feature row is absent from the source and
///   was filled with zeros) and "warnings" (an array of one-line strings that `convert` and
///   `inspect` print).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/data/dataset.hpp"

namespace halognn {

/// The source layouts halognn-data can read.
enum class SourceFormat {
  planetoid,      ///< ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index} (Yang et al. 2016)
  linqs,          ///< <name>.content + <name>.cites text files (LINQS)
  gnn_benchmark,  ///< .npz of plain CSR arrays adj_* / attr_* / labels (Shchur et al.)
  graphdata,      ///< .npz with pickled scipy CSR members adj_matrix / node_attr (GraphData)
  heterophilous,  ///< .npz with node_features / edges / *_masks (Platonov et al. 2023)
  musae,          ///< <name>_edges.csv + <name>.json + <name>_target.csv (Rozemberczki et al.)
  ogb,            ///< OGB node-property raw CSV: raw/*.csv.gz + split/<name>/*.csv.gz
};

/// The lower-case name used on the command line ("planetoid", "gnn-benchmark", ...).
std::string format_name(SourceFormat f);
/// Parses a name written by format_name; throws ConfigError listing the valid names.
SourceFormat parse_format(const std::string& name);

/// Options shared by all converters.
struct ConvertOptions {
  /// Layout to read; unset means detect it from the input (detect_source).
  std::optional<SourceFormat> format;
  /// Which dataset of a folder holding several (e.g. "chameleon_filtered", "citeseer"); empty
  /// means the one named like the folder, or the only one.
  std::string name;
  /// Fixed-split sources (heterophilous): which of the stored splits to use.
  int split_index = 0;
  /// Sources without a shipped split: seed of the Shchur et al. split (20/30 per class).
  std::uint64_t seed = 0;
  std::int32_t train_per_class = 20;
  std::int32_t val_per_class = 30;
  /// Keep only the largest connected component (part of Shchur et al.'s protocol); nodes are
  /// renumbered in their original order.
  bool largest_component = false;
  /// Every non-zero feature becomes 1: count features (Coauthor CS/Physics store word counts)
  /// turned into binary bag-of-words, as Shchur et al.'s pipeline does before training.
  bool binary_features = false;
};

/// A detected source: the layout, the path to hand to the converter (a file or folder) and the
/// dataset name.
struct SourceLocation {
  SourceFormat format = SourceFormat::planetoid;
  std::string path;
  std::string name;
};

/// Finds the source layout under `input` (a folder of shared/datasets, a subfolder such as
/// `cora/planetoid`, or a single .npz file). When a folder holds several layouts the richest
/// one wins: Planetoid (it carries the standard split) before LINQS. Throws InputError when
/// nothing recognisable is found or the choice is ambiguous.
SourceLocation detect_source(const std::string& input, const ConvertOptions& opts);

/// Detects (unless opts.format is set) and converts; applies largest_component and
/// binary_features if asked.
Dataset convert_dataset(const std::string& input, const ConvertOptions& opts);

/// Planetoid pickles in `dir` for dataset `name` (cora, citeseer, pubmed): the public split
/// (train = first rows of x, val = the next 500 ids, test = test.index). Ids absent from both
/// allx and test.index get a zero feature row and label -1; a missing ind.<name>.allx leaves
/// every node outside x and tx with zero features, recorded in meta.features_missing and a
/// warning.
Dataset convert_planetoid(const std::string& dir, const std::string& name);

/// LINQS .content/.cites; class ids follow the sorted class names; citations naming unknown
/// papers are dropped (counted in meta). Shchur split from opts.
Dataset convert_linqs(const std::string& content_path, const std::string& cites_path,
                      const ConvertOptions& opts);

/// gnn-benchmark .npz (adj_data/adj_indices/adj_indptr/adj_shape, attr_*, labels). Shchur split.
Dataset convert_gnn_benchmark(const std::string& npz_path, const ConvertOptions& opts);

/// GraphData .npz (pickled CSR adj_matrix/node_attr, node_label, metadata). Shchur split.
Dataset convert_graphdata(const std::string& npz_path, const ConvertOptions& opts);

/// Heterophilous-graphs .npz; the stored split opts.split_index.
Dataset convert_heterophilous(const std::string& npz_path, const ConvertOptions& opts);

/// MUSAE folder: <name>_edges.csv, <name>.json (feature id lists), <name>_target.csv (class =
/// last field, ids sorted by name). Shchur split.
Dataset convert_musae(const std::string& dir, const std::string& name, const ConvertOptions& opts);

/// OGB node-property raw layout in `dir`: raw/edge.csv.gz, raw/node-feat.csv.gz (optional),
/// raw/node-label.csv.gz (several columns = multi-label; empty/NaN = unlabelled),
/// raw/num-node-list.csv.gz (optional), split/<name>/{train,valid,test}.csv.gz (the only
/// subfolder of split/, or opts.name). Without a split folder: Shchur split.
Dataset convert_ogb(const std::string& dir, const ConvertOptions& opts);

/// Sets every non-zero dense feature to 1 (meta.binary_features counts the entries changed).
void binarize_features(Dataset& ds);

/// Restricts `ds` to its largest connected component (ties: the one with the smallest node id),
/// renumbering nodes in their original order and remapping the splits.
void keep_largest_component(Dataset& ds);

/// The warnings recorded in ds.meta["warnings"] (empty if none).
std::vector<std::string> dataset_warnings(const Dataset& ds);

/// Reads a whole gzip (or plain) file as lines, without their line ends; InputError on failure.
std::vector<std::string> read_gzip_lines(const std::string& path);

}  // namespace halognn
