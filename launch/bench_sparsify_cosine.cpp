// halognn-bench-sparsify-cosine: how close sparsified features keep a model to the dense one (the
// input-feature sparsification paper's Table 2). For each k, one rank holds the whole graph twice,
// with fp32 and with sparsified features (the codebook from every node), builds the same model
// (same seed, so the same initial weights) on both and runs one evaluation pass (epoch 0, no
// dropout); it prints the mean over nodes of the cosine similarity between the two runs' rows: of
// the input (decoded against original features) and of every layer's output (after the
// activation; the last layer's logits).
//
//   halognn-bench-sparsify-cosine --data DIR [--k 64,32,16,8,4] [--model gcn] [--hidden 16]
//                                 [--layers 2] [--seed 1] [--row-normalize]
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "core/data/dataset.hpp"
#include "core/data/feature_sparsify.hpp"
#include "core/error.hpp"
#include "partition/partition.hpp"
#include "training/trainer.hpp"
#include "launch/tool_main.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

/// Mean over rows of the cosine similarity of a's and b's rows (rows where either is zero are
/// left out).
double mean_cosine(const float* a, const float* b, std::int64_t rows, std::int64_t cols) {
  double sum = 0;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    double ab = 0, aa = 0, bb = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double x = a[i * cols + j], y = b[i * cols + j];
      ab += x * y;
      aa += x * x;
      bb += y * y;
    }
    if (aa == 0 || bb == 0) continue;
    sum += ab / std::sqrt(aa * bb);
    ++n;
  }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

LocalPartition whole_graph(const Dataset& ds, const GlobalGraph& g) {
  const std::vector<Rank> owner(static_cast<std::size_t>(ds.num_nodes), 0);
  return std::move(build_local_partitions(ds, g, owner, 1)[0]);
}

/// Layer outputs (host copies) of one evaluation pass at epoch 0.
std::vector<std::vector<float>> outputs(const TrainConfig& cfg, LocalPartition part,
                                        Transport& t) {
  Trainer trainer(cfg, std::move(part), t, cpu_device());
  trainer.evaluate(0);
  std::vector<std::vector<float>> out;
  for (int l = 0; l < cfg.layers; ++l) {
    const ConstDenseView v = trainer.layer_output(l);
    out.emplace_back(v.data, v.data + v.rows * v.cols);
  }
  return out;
}

int run(int argc, char** argv, Transport& world) {
  std::string data, ks = "64,32,16,8,4", model = "gcn";
  int hidden = 16, layers = 2;
  std::uint64_t seed = 1;
  bool row_normalize = false;
  po::options_description desc("halognn-bench-sparsify-cosine --data DIR [options]");
  desc.add_options()("help,h", "show this help")
      ("data", po::value(&data)->required(), "dataset directory")
      ("k", po::value(&ks)->default_value(ks), "comma-separated k values")
      ("model", po::value(&model)->default_value(model), "gcn | sage | gat | gin")
      ("hidden", po::value(&hidden)->default_value(hidden), "hidden width")
      ("layers", po::value(&layers)->default_value(layers), "layers")
      ("seed", po::value(&seed)->default_value(seed), "seed of the weights")
      ("row-normalize", po::bool_switch(&row_normalize), "row-normalise the features");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  po::notify(vm);
  GNN_CHECK_CONFIG(world.size() == 1, "run on one rank (the whole graph is one part)");
  GNN_CHECK_CONFIG(read_stored_features(data).k == 0, "--data ", data, " holds sparsified "
                   "features (halognn-data sparsify); this benchmark compares sparsified against "
                   "dense features and needs the dense dataset");
  const Dataset ds = read_dataset(data);
  const GlobalGraph g = build_symmetric_graph(ds.num_nodes, ds.edge_src, ds.edge_dst);
  TrainConfig cfg;
  cfg.model = parse_model_kind(model);
  cfg.hidden = hidden;
  cfg.layers = layers;
  cfg.seed = seed;
  cfg.row_normalize_features = row_normalize;
  cfg.quiet = true;
  cfg.partition_dir = data;
  const auto dense = outputs(cfg, whole_graph(ds, g), world);
  std::printf("| dataset | model | k | ratio | input |");
  for (int l = 0; l < layers; ++l) std::printf(" layer %d output |", l);
  std::printf("\n|---|---|---|---|---|");
  for (int l = 0; l < layers; ++l) std::printf("---|");
  std::printf("\n");
  std::stringstream list(ks);
  for (std::string tok; std::getline(list, tok, ',');) {
    const int k = std::stoi(tok);
    const std::int64_t cols = ds.features.cols();
    SparseFeatures sf = sparsify_features(ds.features.data(), ds.num_nodes, cols, k, seed, 1.0);
    std::vector<float> decoded(static_cast<std::size_t>(ds.num_nodes * cols));
    desparsify_features(sf, decoded.data());
    const double input = mean_cosine(ds.features.data(), decoded.data(), ds.num_nodes, cols);
    LocalPartition part = whole_graph(ds, g);
    const std::int64_t slots = sf.layout.slots();
    part.sparse_features.layout = sf.layout;
    part.sparse_features.rows = part.num_owned;
    part.sparse_features.codebook = sf.codebook;
    part.sparse_features.positions.resize(static_cast<std::size_t>(part.num_owned * slots));
    for (LocalId i = 0; i < part.num_owned; ++i)
      std::copy_n(sf.positions.begin() + part.global_ids[i] * slots, slots,
                  part.sparse_features.positions.begin() + static_cast<std::int64_t>(i) * slots);
    part.features = Matrix(part.num_owned, 0);
    const auto compact = outputs(cfg, std::move(part), world);
    std::printf("| %s | %s | %d | %.1f | %.4f |", ds.name.c_str(), model.c_str(), k,
                sf.layout.ratio(), input);
    for (int l = 0; l < layers; ++l) {
      const auto& a = dense[static_cast<std::size_t>(l)];
      const auto& b = compact[static_cast<std::size_t>(l)];
      const std::int64_t rows = ds.num_nodes, width = static_cast<std::int64_t>(a.size()) / rows;
      std::printf(" %.4f |", mean_cosine(a.data(), b.data(), rows, width));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnv mpi(argc, argv);
  return halognn::run_tool("halognn-bench-sparsify-cosine", [&] {
    const std::unique_ptr<Transport> world = make_mpi_transport(MPI_COMM_WORLD);
    return run(argc, argv, *world);
  });
}
