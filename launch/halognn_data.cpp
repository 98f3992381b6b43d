// halognn-data: convert public datasets into halognn's format, generate the built-in default
// graph, sparsify a dataset's features, and inspect a dataset directory.
//
//   halognn-data convert --input <shared>/datasets/cora --out data/cora
//   halognn-data generate --out data/sbm --nodes 100000 --edges 2000000 --seed 1
//   halognn-data sparsify --data data/cora --out data/cora.k16 --k 16
//   halognn-data inspect data/cora
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/data/converters.hpp"
#include "core/data/dataset.hpp"
#include "core/data/generator.hpp"
#include "core/error.hpp"
#include "core/file_read.hpp"
#include "core/process_memory.hpp"
#include "launch/progress.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

constexpr const char* kUsage =
    "usage: halognn-data <command> [options]\n"
    "commands:\n"
    "  convert   convert a public dataset (Planetoid, LINQS, gnn-benchmark, GraphData,\n"
    "            heterophilous .npz, MUSAE, OGB raw CSV) into a halognn dataset directory\n"
    "  generate  write the built-in degree-corrected SBM graph\n"
    "  sparsify  write a copy of a dataset with its features sparsified (per node and 256-wide\n"
    "            chunk the positions of the k largest and k smallest values, plus one codebook),\n"
    "            reading the dense features in blocks; partition the copy any number of times\n"
    "  inspect   print the statistics of a halognn dataset directory\n"
    "'halognn-data <command> --help' lists the command's options.\n";

/// Parses `args` against `desc` (+ optional positional), rejecting unknown options.
po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const po::positional_options_description* pos = nullptr) {
  po::variables_map vm;
  auto parser = po::command_line_parser(args).options(desc);
  if (pos) parser.positional(*pos);
  po::store(parser.run(), vm);
  po::notify(vm);
  return vm;
}

void print_warnings(const Dataset& ds) {
  for (const std::string& w : dataset_warnings(ds)) std::cerr << "halognn-data: warning: " << w << "\n";
}

/// write_dataset, reporting the temporaries of killed runs it cleaned up first.
void write_dataset_reporting(const Dataset& ds, const std::string& out) {
  std::vector<std::string> leftovers;
  write_dataset(ds, out, &leftovers);
  for (const std::string& l : leftovers)
    std::cout << "halognn-data: removed " << l << ", left behind by a run that was killed\n";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

/// One line on the sparsified form: k, positions per row, ratio, bytes against fp32, codebook.
std::string sparsified_summary(const Dataset& ds) {
  const SparseFeatures& f = ds.sparse_features;
  const std::int64_t dense = ds.num_nodes * ds.num_features() * static_cast<std::int64_t>(sizeof(float));
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "k = %d (%lld positions per row, ratio %.1f); %.2f MiB stored against %.1f MiB "
                "dense fp32 (%.1fx); codebook from %lld sampled nodes (sample about %lld, seed "
                "%llu)",
                f.layout.k, static_cast<long long>(f.layout.slots()), f.layout.ratio(),
                mib(f.bytes()), mib(dense),
                f.bytes() > 0 ? static_cast<double>(dense) / static_cast<double>(f.bytes()) : 0.0,
                static_cast<long long>(f.codebook_rows), static_cast<long long>(f.codebook_sample),
                static_cast<unsigned long long>(f.codebook_seed));
  return buf;
}

/// --sparsify-features / --sparsify-sample of generate and convert: the options, and applying
/// them to the dataset before it is written (sparsify_dataset: the encoder of halognn-data
/// sparsify and halognn-partition, over the matrix in memory). The sample is keyed by the
/// command's --seed.
struct SparsifyOptions {
  int k = 0;
  std::int64_t sample = 100000;

  void add_to(po::options_description& desc) {
    desc.add_options()
        ("sparsify-features", po::value(&k)->default_value(0),
         "k in [1, 128]: write the features sparsified (as halognn-data sparsify --k); 0: dense")
        ("sparsify-sample", po::value(&sample)->default_value(sample),
         "nodes (about; keyed by --seed) whose sorted values the codebook averages");
  }
  void check(const po::variables_map& vm) const {
    GNN_CHECK_CONFIG(vm["sparsify-sample"].defaulted() || k > 0,
                     "--sparsify-sample needs --sparsify-features");
    GNN_CHECK_CONFIG(k >= 0 && k <= kSparsifyMaxK, "--sparsify-features must be in [1, ",
                     kSparsifyMaxK, "] (0: dense), got ", k);
    GNN_CHECK_CONFIG(sample >= 1, "--sparsify-sample must be at least 1, got ", sample);
  }
  void apply(Dataset& ds, std::uint64_t seed) const {
    if (k == 0) return;
    GNN_CHECK_CONFIG(seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                     "--seed ", seed, " does not fit in a signed 64-bit integer (the manifest "
                     "records it)");
    sparsify_dataset(ds, k, sample, seed);
  }
};

int cmd_convert(const std::vector<std::string>& args) {
  po::options_description desc("halognn-data convert --input PATH --out DIR [options]");
  std::string input, out, format, name;
  ConvertOptions o;
  desc.add_options()
      ("help,h", "show this help")
      ("input", po::value(&input)->required(),
       "a dataset folder (e.g. shared/datasets/cora), a layout subfolder or an .npz file; the "
       "layout is detected")
      ("out", po::value(&out)->required(), "dataset directory to write")
      ("format", po::value(&format),
       "force a layout: planetoid, linqs, gnn-benchmark, graphdata, heterophilous, musae, ogb")
      ("name", po::value(&name),
       "which dataset of a folder holding several (e.g. chameleon_filtered); OGB: split folder")
      ("split", po::value(&o.split_index)->default_value(0),
       "fixed-split sources (heterophilous): which stored split to use")
      ("seed", po::value(&o.seed)->default_value(0),
       "seed of the Shchur et al. split for sources without one (and of the codebook sample "
       "with --sparsify-features)")
      ("train-per-class", po::value(&o.train_per_class)->default_value(20),
       "Shchur split: training nodes per class")
      ("val-per-class", po::value(&o.val_per_class)->default_value(30),
       "Shchur split: validation nodes per class")
      ("largest-component", po::bool_switch(&o.largest_component),
       "keep only the largest connected component (Shchur et al.'s protocol)")
      ("binary-features", po::bool_switch(&o.binary_features),
       "set every non-zero feature to 1 (count features as binary bag-of-words, as Shchur et "
       "al.'s pipeline does)");
  SparsifyOptions sp;
  sp.add_to(desc);
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << desc << "\n";
    return 0;
  }
  const po::variables_map vm = parse(args, desc);
  sp.check(vm);
  if (!format.empty()) o.format = parse_format(format);
  o.name = name;
  const auto t0 = std::chrono::steady_clock::now();
  const SourceLocation src = detect_source(input, o);
  Dataset ds = convert_dataset(input, o);
  sp.apply(ds, o.seed);
  write_dataset_reporting(ds, out);
  std::cout << "converted " << src.path << " (" << format_name(src.format) << ") -> " << out
            << ": " << ds.num_nodes << " nodes, " << ds.edge_src.size() << " stored edges, "
            << ds.num_features() << " features, " << ds.num_classes << " classes, split "
            << ds.train_idx.size() << "/" << ds.val_idx.size() << "/" << ds.test_idx.size()
            << " (" << seconds_since(t0) << " s, " << peak_rss_text() << ")\n";
  if (ds.sparsified()) std::cout << "features sparsified: " << sparsified_summary(ds) << "\n";
  print_warnings(ds);
  return 0;
}

int cmd_generate(const std::vector<std::string>& args) {
  po::options_description desc("halognn-data generate --out DIR [options]");
  // A preset replaces the defaults below (and so what --help shows); any option given on the
  // command line overrides its value.
  std::string preset = "default";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--preset" && i + 1 < args.size()) preset = args[i + 1];
    if (args[i].rfind("--preset=", 0) == 0) preset = args[i].substr(9);
  }
  SbmConfig c = sbm_preset(preset);
  std::string out, name = preset == "default" ? "sbm" : preset;
  std::string known;
  for (const std::string& n : sbm_preset_names()) known += (known.empty() ? "" : ", ") + n;
  desc.add_options()
      ("help,h", "show this help")
      ("out", po::value(&out)->required(), "dataset directory to write")
      ("preset", po::value(&preset)->default_value(preset),
       ("graph shape whose sizes, splits and degree cap become the defaults: " + known).c_str())
      ("name", po::value(&name)->default_value(name), "dataset name in the manifest")
      ("nodes", po::value(&c.num_nodes)->default_value(c.num_nodes), "number of nodes")
      ("edges", po::value(&c.num_edges)->default_value(c.num_edges),
       "undirected edges to draw (before dropping duplicates and self-loops)")
      ("classes", po::value(&c.num_classes)->default_value(c.num_classes), "number of classes")
      ("features", po::value(&c.num_features)->default_value(c.num_features), "feature width")
      ("homophily", po::value(&c.homophily)->default_value(c.homophily),
       "probability that an edge's second endpoint is in the first one's class")
      ("power-law", po::value(&c.power_law_exponent)->default_value(c.power_law_exponent),
       "exponent gamma of the degree propensities, P(theta) ~ theta^-gamma")
      ("max-degree-fraction",
       po::value(&c.max_degree_fraction)->default_value(c.max_degree_fraction),
       "cap on a node's expected degree as a fraction of the node count")
      ("noise", po::value(&c.feature_noise)->default_value(c.feature_noise),
       "standard deviation of the Gaussian feature noise around the class means")
      ("class-overlap", po::value(&c.class_overlap)->default_value(c.class_overlap),
       "probability that a node's features are drawn around another class's mean")
      ("train-fraction", po::value(&c.train_fraction)->default_value(c.train_fraction),
       "fraction of nodes in the training split")
      ("val-fraction", po::value(&c.val_fraction)->default_value(c.val_fraction),
       "fraction of nodes in the validation split (the rest is test)")
      ("seed", po::value(&c.seed)->default_value(c.seed),
       "random seed (also of the codebook sample with --sparsify-features)");
  SparsifyOptions sp;
  sp.add_to(desc);
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << desc << "\n";
    return 0;
  }
  const po::variables_map vm = parse(args, desc);
  sp.check(vm);
  const auto t0 = std::chrono::steady_clock::now();
  Dataset ds = generate_sbm(c);
  ds.name = name;
  sp.apply(ds, c.seed);
  const double t_gen = seconds_since(t0);
  write_dataset_reporting(ds, out);
  std::cout << "generated " << out << ": " << ds.num_nodes << " nodes, " << ds.edge_src.size()
            << " stored edges, " << ds.num_features() << " features, " << ds.num_classes
            << " classes, measured homophily " << ds.meta.at("measured_homophily").get<double>()
            << " (generate " << t_gen << " s, total " << seconds_since(t0) << " s, " << peak_rss_text()
            << ")\n";
  if (ds.sparsified()) std::cout << "features sparsified: " << sparsified_summary(ds) << "\n";
  return 0;
}

int cmd_sparsify(const std::vector<std::string>& args) {
  po::options_description desc("halognn-data sparsify --data DIR --out DIR --k K [options]");
  std::string data, out;
  int k = 0;
  std::int64_t sample = 100000;
  std::uint64_t seed = 1;
  desc.add_options()
      ("help,h", "show this help")
      ("data", po::value(&data)->required(), "dataset directory with dense features.npy")
      ("out", po::value(&out)->required(),
       "dataset directory to write: the same graph, labels, splits and meta, the features "
       "sparsified (replaced if it is an existing dataset directory)")
      ("k", po::value(&k)->required(),
       "k in [1, 128]: per node and 256-wide chunk, the positions of the k largest and k "
       "smallest values (ratio 512/k against fp32; docs/partitioning.md)")
      ("sample", po::value(&sample)->default_value(sample),
       "nodes (about) whose sorted values the codebook averages; as halognn-partition "
       "--sparsify-sample")
      ("seed", po::value(&seed)->default_value(seed),
       "keys the codebook sample; as halognn-partition --seed, so both pick the same nodes");
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << desc << "\n";
    return 0;
  }
  parse(args, desc);
  GNN_CHECK_CONFIG(k >= 1 && k <= kSparsifyMaxK, "--k must be in [1, ", kSparsifyMaxK, "], got ",
                   k);
  GNN_CHECK_CONFIG(sample >= 1, "--sample must be at least 1, got ", sample);
  GNN_CHECK_CONFIG(seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "--seed ", seed, " does not fit in a signed 64-bit integer (the manifest "
                   "records it)");
  // Replacing --out must not remove the input: --out may not be the dataset or hold it.
  GNN_CHECK_CONFIG(!path_lies_within(data, out), "--out ", out, " is or contains the input "
                   "dataset --data ", data, "; write the sparsified copy beside it");
  const StoredFeatures stored = read_stored_features(data);
  GNN_CHECK_CONFIG(stored.k == 0, "--data ", data, " holds features sparsified already (k = ",
                   stored.k, "); sparsify the dataset with the dense features.npy instead");

  const auto t0 = std::chrono::steady_clock::now();
  TerminalProgress progress("halognn-data: sparsifying " + data);
  SparsifyOnRead opt;
  opt.k = k;
  opt.sample = sample;
  opt.seed = seed;
  opt.k_option = "--k";
  opt.sample_option = "--sample";
  opt.progress = [&](std::int64_t done, std::int64_t total) { progress.update(done, total); };
  Dataset ds = read_dataset(data, opt);
  progress.done();
  const double t_read = seconds_since(t0);
  ds.meta["sparsified_from"] = data;
  write_dataset_reporting(ds, out);
  std::cout << "sparsified " << data << " -> " << out << ": " << ds.num_nodes << " nodes, "
            << ds.num_features() << " features; " << sparsified_summary(ds) << " (read+encode "
            << t_read << " s, total " << seconds_since(t0) << " s, " << peak_rss_text() << ")\n";
  return 0;
}

int cmd_inspect(const std::vector<std::string>& args) {
  po::options_description desc("halognn-data inspect DIR");
  std::string dir;
  desc.add_options()
      ("help,h", "show this help")
      ("dir", po::value(&dir), "dataset directory (also the first positional argument)");
  po::positional_options_description pos;
  pos.add("dir", 1);
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << desc << "\n";
    return 0;
  }
  parse(args, desc, &pos);
  GNN_CHECK_CONFIG(!dir.empty(), "inspect needs a dataset directory: halognn-data inspect DIR");
  const Dataset ds = read_dataset(dir);
  GraphBuildStats st;
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst, &st);
  std::int64_t isolated = 0;
  for (GlobalId v = 0; v < g.num_nodes; ++v) isolated += g.degree(v) == 0 ? 1 : 0;
  std::int64_t nnz = 0;
  const float* x = ds.features.data();
  const std::int64_t total = ds.features.size();  // 0 when sparsified
#pragma omp parallel for reduction(+ : nnz)
  for (std::int64_t i = 0; i < total; ++i) nnz += x[i] != 0.0f ? 1 : 0;

  std::cout << "dataset: " << ds.name << "\n";
  std::cout << "nodes: " << ds.num_nodes << "\n";
  std::cout << "stored edges: " << st.input_edges << "\n";
  std::cout << "undirected edges: " << g.num_directed_edges() / 2 << " ("
            << g.num_directed_edges() << " directed)\n";
  std::cout << "self-loops dropped: " << st.self_loops_dropped << "\n";
  // Stored edges beyond one per undirected pair: reverse directions and repeated pairs.
  std::cout << "redundant stored edges dropped: "
            << st.input_edges - st.self_loops_dropped - g.num_directed_edges() / 2
            << " (reverse directions or repeats of a pair)\n";
  std::cout << "isolated nodes: " << isolated << "\n";
  if (ds.sparsified())
    std::cout << "features: " << ds.num_features() << ", sparsified: " << sparsified_summary(ds)
              << "\n";
  else
    std::cout << "features: " << ds.num_features() << " (nnz " << nnz << ")\n";
  std::cout << "classes: " << ds.num_classes << (ds.multilabel ? " (multi-label)" : "") << "\n";
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(ds.num_classes), 0);
  std::int64_t unlabelled = 0;
  if (ds.multilabel) {
    for (std::size_t i = 0; i < ds.label_matrix.size(); ++i) sizes[i % ds.num_classes] += ds.label_matrix[i];
  } else {
    for (std::int32_t l : ds.labels) l < 0 ? ++unlabelled : ++sizes[l];
  }
  std::cout << (ds.multilabel ? "positives per class:" : "class sizes:");
  for (std::int64_t s : sizes) std::cout << " " << s;
  std::cout << "\n";
  if (!ds.multilabel) {
    std::cout << "unlabelled nodes: " << unlabelled << "\n";
    std::int64_t intra = 0;
    for (GlobalId v = 0; v < g.num_nodes; ++v)
      for (EdgeOffset k = g.row_ptr[v]; k < g.row_ptr[v + 1]; ++k)
        intra += ds.labels[v] >= 0 && ds.labels[v] == ds.labels[g.col[k]] ? 1 : 0;
    if (g.num_directed_edges() > 0)
      std::cout << "edge homophily: "
                << static_cast<double>(intra) / static_cast<double>(g.num_directed_edges()) << "\n";
  }
  std::cout << "multilabel: " << (ds.multilabel ? "yes" : "no") << "\n";
  std::cout << "split (train/val/test): " << ds.train_idx.size() << " / " << ds.val_idx.size()
            << " / " << ds.test_idx.size();
  if (ds.meta.contains("split") && ds.meta["split"].is_object())
    if (const std::string kind = ds.meta["split"].value("kind", ""); !kind.empty())
      std::cout << " (" << kind << ")";
  std::cout << "\n";
  if (const std::int64_t missing = ds.meta.value("features_missing", std::int64_t{0}); missing > 0)
    std::cout << "features missing: " << missing << " nodes have all-zero features\n";
  for (const std::string& w : dataset_warnings(ds)) {
    std::cout << "warning: " << w << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::cerr << kUsage;
      return 1;
    }
    const std::string cmd = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (cmd == "convert") return cmd_convert(args);
    if (cmd == "generate") return cmd_generate(args);
    if (cmd == "sparsify") return cmd_sparsify(args);
    if (cmd == "inspect") return cmd_inspect(args);
    std::cerr << "halognn-data: unknown command '" << cmd
              << "' (convert, generate, sparsify, inspect)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "halognn-data: " << e.what() << "\n";
    return 1;
  }
}
