// halognn-train: distributed full-graph GNN training. Run one MPI rank per partition part:
//   mpirun -np K halognn-train --partition DIR [options]
// Rank 0 prints one line per epoch; --metrics writes JSON lines (atomically, at the end).
#include <mpi.h>

#include <boost/program_options.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "comm/emulated_link.hpp"
#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "models/training/trainer.hpp"
#include "partition/partition_io.hpp"

namespace po = boost::program_options;
using namespace halognn;

namespace {

struct Cli {
  TrainConfig cfg;
  std::string device = "auto";
  std::string transport = "auto";
  bool dump_config = false;
  bool help = false;
  std::string help_text;
};

Cli parse_cli(int argc, char** argv) {
  Cli cli;
  TrainConfig& c = cli.cfg;
  std::string model = "gcn", optimizer = "adam", exchange = "sync", config_file;
  po::options_description general("General");
  general.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&config_file), "read options from this file (key = value lines)")
      ("dump-config", "print the effective configuration as JSON and exit")
      ("partition", po::value(&c.partition_dir), "partition directory (from halognn-partition)")
      ("device", po::value(&cli.device)->default_value("auto"), "cpu | cuda | auto")
      ("transport", po::value(&cli.transport)->default_value("auto"),
       "nccl | mpi | auto (nccl on a GPU, mpi on the CPU; ranks sharing a GPU need mpi)")
      ("metrics", po::value(&c.metrics_path), "write per-epoch JSON lines here")
      ("quiet", po::bool_switch(&c.quiet), "no per-epoch progress lines");
  po::options_description model_opts("Model and optimisation");
  model_opts.add_options()
      ("model", po::value(&model)->default_value("gcn"), "gcn | sage | gat")
      ("layers", po::value(&c.layers)->default_value(2), "number of layers")
      ("hidden", po::value(&c.hidden)->default_value(16), "hidden width (per head for GAT)")
      ("heads", po::value(&c.heads)->default_value(1), "GAT attention heads of hidden layers")
      ("epochs", po::value(&c.epochs)->default_value(200), "training epochs")
      ("lr", po::value(&c.lr)->default_value(0.01f), "learning rate")
      ("weight-decay", po::value(&c.weight_decay)->default_value(5e-4f), "L2 weight decay")
      ("decay-biases", po::bool_switch(&c.decay_biases), "apply weight decay to biases too")
      ("optimizer", po::value(&optimizer)->default_value("adam"), "adam | sgd")
      ("momentum", po::value(&c.momentum)->default_value(0.0f), "SGD momentum")
      ("dropout", po::value(&c.dropout)->default_value(0.5f), "dropout probability on layer inputs")
      ("seed", po::value(&c.seed)->default_value(1), "seed of every random choice")
      ("eval-every", po::value(&c.eval_every)->default_value(1), "evaluate every N epochs")
      ("dense-features", "keep layer 0's input dense even when under 10% of it is non-zero "
       "(default: such features are held as CSR, which is faster and smaller)")
      ("row-normalize", po::bool_switch(&c.row_normalize_features),
       "divide each feature row by its sum (Kipf & Welling preprocessing)");
  po::options_description comm_opts("Halo exchange");
  comm_opts.add_options()
      ("codec", po::value(&c.codec)->default_value("fp32"),
       "codec for every layer and direction (see docs/codecs.md)")
      ("codec-forward", po::value(&c.codec_forward), "forward codec, or a comma list per layer")
      ("codec-backward", po::value(&c.codec_backward), "backward codec, or a comma list per layer")
      ("compress-layer0", po::bool_switch(&c.compress_layer0),
       "use the layer-0 forward codec for the one-time feature exchange (default: exact)")
      ("exchange", po::value(&exchange)->default_value("sync"),
       "sync | pipelined (layer l of epoch t uses halo rows sent in epoch t-1)")
      ("staleness-bound", po::value(&c.staleness_bound)->default_value(0),
       "pipelined: one synchronous epoch every N epochs (0: only the first)")
      ("smoothing", po::value(&c.smoothing)->default_value(0.0f),
       "pipelined: moving-average gamma for stale halo rows and gradients (0: off)")
      ("emulate-link", po::value(&c.emulate_link),
       "GBPS[,LATENCY_US]: emulate a cluster link of this bandwidth and latency");
  po::options_description all;
  all.add(general).add(model_opts).add(comm_opts);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) throw InputError(path, "cannot open config file");
      po::store(po::parse_config_file(in, all), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (see --help)");
  }
  cli.help = vm.count("help") > 0;
  cli.dump_config = vm.count("dump-config") > 0;
  std::ostringstream os;
  os << "usage: mpirun -np K halognn-train --partition DIR [options]\n" << all;
  cli.help_text = os.str();
  if (cli.help) return cli;
  c.sparse_features = vm.count("dense-features") == 0;
  c.model = parse_model_kind(model);
  c.optimizer = parse_optimizer_kind(optimizer);
  c.exchange = parse_exchange_mode(exchange);
  GNN_CHECK_CONFIG(cli.dump_config || !c.partition_dir.empty(), "--partition is required (see --help)");
  GNN_CHECK_CONFIG(cli.device == "auto" || cli.device == "cpu" || cli.device == "cuda",
                   "unknown --device '", cli.device, "' (choose from: cpu, cuda, auto)");
  GNN_CHECK_CONFIG(cli.transport == "auto" || cli.transport == "nccl" || cli.transport == "mpi",
                   "unknown --transport '", cli.transport, "' (choose from: nccl, mpi, auto)");
  GNN_CHECK_CONFIG(c.epochs >= 0, "--epochs must be non-negative");
  if (!c.emulate_link.empty()) parse_link_model(c.emulate_link);  // validate early
  GNN_CHECK_CONFIG(c.exchange == ExchangeMode::pipelined ||
                       (c.staleness_bound == 0 && c.smoothing == 0),
                   "--staleness-bound and --smoothing need --exchange pipelined");
  return cli;
}

/// A start-up failure that every rank knows about (see startup_step).
struct StartupFailure {
  std::string what;
};

/// Runs one fallible start-up step on every rank; if it failed on any rank, every rank throws
/// StartupFailure (rank 0 holds its own message or the lowest failing rank's), so all ranks exit
/// non-zero and none is left waiting in a later collective.
template <typename F>
void startup_step(F&& f) {
  try {
    collective_try(MPI_COMM_WORLD, std::forward<F>(f));
  } catch (const std::exception& e) {
    throw StartupFailure{e.what()};
  }
}

/// This rank's index among the ranks on its node (picks the GPU).
Rank local_rank() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

DevicePtr pick_device(const std::string& want, Rank local_rank) {
  const int n = cuda_device_count();
  if (want == "cpu" || (want == "auto" && n == 0)) return cpu_device();
  GNN_CHECK_CONFIG(n > 0, "--device cuda: no CUDA device is visible");
  return cuda_device(local_rank % n);
}

std::string progress_line(const EpochMetrics& m, bool multilabel) {
  char buf[512];
  const char* metric = multilabel ? "f1" : "acc";
  std::string eval = "";
  if (m.eval) {
    char e[128];
    std::snprintf(e, sizeof e, " val %.4f test %.4f", m.eval->val, m.eval->test);
    eval = e;
  }
  std::snprintf(buf, sizeof buf,
                "epoch %4lld | loss %.4f | %s train %.4f%s | %.3f s (compute %.3f comm %.3f codec "
                "%.3f) | %.2f MB sent%s",
                static_cast<long long>(m.epoch), m.loss, metric, m.train_score, eval.c_str(),
                m.epoch_s, m.compute_s, m.comm_s, m.codec_s, m.bytes_sent / 1e6,
                m.synchronous ? "" : " | pipelined, halo age <= ");
  std::string line = buf;
  if (!m.synchronous) line += std::to_string(m.max_staleness);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnv mpi(argc, argv);
  const Rank rank = mpi.rank(), size = mpi.size();
  try {
    Cli cli;
    startup_step([&] { cli = parse_cli(argc, argv); });
    if (cli.help || cli.dump_config) {
      if (rank == 0) std::cout << (cli.help ? cli.help_text : cli.cfg.to_json().dump(2) + "\n");
      return 0;
    }
    // Collectives stay outside the fallible steps: a rank that throws must not skip one.
    const Rank node_rank = local_rank();
    LocalPartition part;
    DevicePtr dev;
    startup_step([&] { part = read_local_partition(cli.cfg.partition_dir, rank, size); });
    startup_step([&] { dev = pick_device(cli.device, node_rank); });
    startup_step([&] {
      // Fail now, not after the last epoch, if the metrics file cannot be written.
      if (rank != 0 || cli.cfg.metrics_path.empty()) return;
      const std::filesystem::path p(cli.cfg.metrics_path);
      const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
      if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
        throw InputError(cli.cfg.metrics_path, "cannot write here (directory " + dir.string() +
                                                   " is missing or not writable)");
    });
    // NCCL moves device buffers GPU to GPU; MPI (not CUDA-aware here) stages them through the host.
    const bool use_nccl = cli.transport == "nccl" || (cli.transport == "auto" && !dev->is_host());
    std::unique_ptr<Transport> base_transport;
    startup_step([&] {
      base_transport = use_nccl ? make_nccl_transport(MPI_COMM_WORLD, dev)
                                : make_mpi_transport(MPI_COMM_WORLD);
    });
    std::unique_ptr<Transport> emulated;
    if (!cli.cfg.emulate_link.empty())
      emulated = make_emulated_link(*base_transport, parse_link_model(cli.cfg.emulate_link));
    Transport* transport = emulated ? emulated.get() : base_transport.get();
    if (rank == 0 && !cli.cfg.quiet)
      std::cout << "halognn-train: " << size << " rank(s), model " << to_string(cli.cfg.model)
                << ", device " << dev->name() << ", partition " << cli.cfg.partition_dir
                << ", exchange " << to_string(cli.cfg.exchange)
                << (cli.cfg.emulate_link.empty()
                        ? std::string()
                        : ", EMULATED link " + cli.cfg.emulate_link + " (Gb/s[,us])")
                << "\n";
    std::unique_ptr<Trainer> trainer;
    startup_step([&] {
      trainer = std::make_unique<Trainer>(cli.cfg, std::move(part), *transport, dev);
    });
    const bool multilabel = trainer->multilabel();
    if (rank == 0 && !cli.cfg.quiet)
      std::cout << "halognn-train: layer-0 input on rank 0: "
                << (trainer->sparse_input() ? "sparse (CSR)" : "dense") << "\n";

    Json lines = Json::array();
    const FinalMetrics final = trainer->run([&](const EpochMetrics& m) {
      if (rank != 0) return;
      if (!cli.cfg.quiet)
        std::cout << progress_line(m, multilabel)
                  << (cli.cfg.emulate_link.empty() ? "" : " | emulated link " + cli.cfg.emulate_link)
                  << std::endl;
      if (!cli.cfg.metrics_path.empty()) lines.push_back(m.to_json());
    });
    if (rank == 0) {
      Json f = final.to_json();
      f.set("metric", multilabel ? "f1_micro" : "accuracy");
      f.set("world_size", size);
      f.set("device", dev->name());
      f.set("config", cli.cfg.to_json());
      std::printf("best val %.4f at epoch %d, test %.4f | %.2f s total | %.2f MB sent\n",
                  final.best_val, final.best_epoch, final.test_at_best_val, final.total_s,
                  final.total_bytes_sent / 1e6);
      if (!cli.cfg.metrics_path.empty()) {
        std::string text;
        for (const Json& l : lines.as_array()) text += l.dump() + "\n";
        text += f.dump() + "\n";
        write_file_atomic(cli.cfg.metrics_path, text);
      }
    }
    return 0;
  } catch (const StartupFailure& e) {
    if (rank == 0) std::cerr << "halognn-train: " << e.what << std::endl;
    return 1;
  } catch (const std::exception& e) {
    // A failure on this rank alone, mid-training: the others may be inside a collective, so
    // say what happened and take the whole job down (non-zero exit on every rank).
    std::cerr << "halognn-train: rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
