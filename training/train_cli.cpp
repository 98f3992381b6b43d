#include "training/train_cli.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace halognn {
namespace po = boost::program_options;
namespace {

/// Command-line tokens equivalent to a --config file: "--key=value" per member, a bare "--key"
/// for true switches; null, false and empty strings are the defaults and give no token.
std::vector<std::string> config_tokens(const std::string& path, const po::options_description& all) {
  const Json j = read_json_file(path);
  if (!j.is_object()) throw InputError(path, "a config file is a JSON object of option names");
  std::vector<std::string> tokens;
  for (const auto& [key, value] : j.items()) {
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    if (!all.find_nothrow(name, false))
      throw InputError(path, "unknown option \"" + key + "\" (see halognn-train --help)");
    if (name == "config" || name == "dump-config" || name == "dry-run" || name == "help")
      throw InputError(path, "\"" + key + "\" cannot be set from a config file");
    if (value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
        (value.is_string() && value.get<std::string>().empty()))
      continue;
    if (value.is_boolean()) {
      tokens.push_back("--" + name);
    } else if (value.is_string()) {
      tokens.push_back("--" + name + "=" + value.get<std::string>());
    } else if (value.is_number()) {
      tokens.push_back("--" + name + "=" + dump_json(value));
    } else {
      throw InputError(path, "\"" + key + "\" must be a string, a number or true/false");
    }
  }
  return tokens;
}

}  // namespace

TrainCli parse_train_cli(int argc, const char* const* argv) {
  TrainCli cli;
  TrainConfig& c = cli.cfg;
  std::string model = "gcn", architecture = "plain", optimizer = "adam", exchange = "sync", halo_rows = "plain",
      numerics = "fast", config_file;
  std::string refresh_by = "grad";
  bool dense_features = false;
  std::string select_by = "score", lr_schedule = "constant", metric = "auto";
  bool no_restore_best = false, no_bias = false, no_overlap = false;
  int staleness_bound_alias = -1;
  po::options_description general("General");
  general.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&config_file),
       "read options from this JSON file (as --dump-config writes it; the command line wins)")
      ("dump-config", "print the effective configuration as JSON and exit")
      ("dry-run", "read the partition, print the per-rank memory estimate and exit without training")
      ("partition", po::value(&c.partition_dir), "partition directory (from halognn-partition)")
      ("device", po::value(&c.device)->default_value("auto"), "cpu | cuda | auto")
      ("transport", po::value(&c.transport)->default_value("auto"),
       "nccl | mpi | auto (nccl on a GPU, mpi on the CPU; ranks sharing a GPU need mpi)")
      ("metrics", po::value(&c.metrics_path), "write per-epoch JSON lines here")
      ("quiet", po::bool_switch(&c.quiet), "no per-epoch progress lines")
      ("comm-timeout", po::value(&c.comm_timeout_s)->default_value(300),
       "seconds one blocking communication step may take before every rank is aborted (0: never)")
      ("memory-budget", po::value(&c.memory_budget_gib)->default_value(0),
       "GiB of memory per node a run may need by its estimate (0: the node's physical memory)");
  po::options_description ckpt_opts("Checkpoints and saved models");
  ckpt_opts.add_options()
      ("checkpoint-dir", po::value(&c.checkpoint_dir),
       "write checkpoints (every rank's state) into this directory")
      ("checkpoint-every", po::value(&c.checkpoint_every)->default_value(0),
       "a checkpoint after every N-th finished epoch and after the last (0: after the last only)")
      ("keep-checkpoints", po::value(&c.keep_checkpoints)->default_value(0),
       "keep the newest K complete checkpoints, deleting older ones once a newer one is complete "
       "(0: keep all)")
      ("resume", po::value(&c.resume_dir),
       "continue from the newest complete checkpoint in this directory (bit for bit as if never "
       "stopped)")
      ("save-model", po::value(&c.save_model_path),
       "write the trained parameters to this .npz file at the end (halognn-predict reads it)");
  po::options_description model_opts("Model and optimisation");
  model_opts.add_options()
      ("model", po::value(&model)->default_value("gcn"), "gcn | sage | gat | gin")
      ("architecture", po::value(&architecture)->default_value("plain"),
       "plain: the model's layers, --activation and --dropout between them | residual: "
       "Platonov et al.'s residual blocks (gcn, sage; docs/models.md)")
      ("layers", po::value(&c.layers)->default_value(2),
       "number of layers (residual: of residual blocks)")
      ("hidden", po::value(&c.hidden)->default_value(16),
       "hidden width (per head for GAT; also GIN's MLP width)")
      ("activation", po::value(&c.activation)->default_value("auto"),
       "between layers: relu | elu | auto (elu for gat, as published; relu otherwise)")
      ("heads", po::value(&c.heads)->default_value(1), "GAT attention heads of hidden layers (concatenated)")
      ("output-heads", po::value(&c.output_heads)->default_value(1),
       "GAT attention heads of the last layer (averaged)")
      ("attention-dropout", po::value(&c.attention_dropout)->default_value(0.0f),
       "GAT: dropout probability of each attention coefficient in training")
      ("value-dropout", po::value(&c.value_dropout)->default_value(0.0f),
       "GAT: dropout probability of the transformed features where they are aggregated "
       "(as in the reference implementation of GAT)")
      ("gin-eps", po::value(&c.gin_eps)->default_value(0.0f),
       "GIN: a node's own row weighs 1 + eps (the start value with --train-eps)")
      ("train-eps", po::bool_switch(&c.train_eps), "GIN: train eps (GIN-eps; default: a constant)")
      ("epochs", po::value(&c.epochs)->default_value(200), "training epochs")
      ("lr", po::value(&c.lr)->default_value(0.01f), "learning rate")
      ("weight-decay", po::value(&c.weight_decay)->default_value(5e-4f), "L2 weight decay")
      ("no-bias", po::bool_switch(&no_bias),
       "layers without a bias (as Kipf & Welling's reference GCN)")
      ("decay-biases", po::bool_switch(&c.decay_biases), "apply weight decay to biases too")
      ("decay-first-layer-only", po::bool_switch(&c.decay_first_layer_only),
       "apply weight decay to the first layer only (Kipf & Welling)")
      ("optimizer", po::value(&optimizer)->default_value("adam"), "adam | sgd")
      ("momentum", po::value(&c.momentum)->default_value(0.0f), "SGD momentum (--optimizer sgd)")
      ("dropout", po::value(&c.dropout)->default_value(0.5f),
       "dropout probability on layer inputs (residual: inside the blocks)")
      ("seed", po::value(&c.seed)->default_value(1), "seed of every random choice")
      ("eval-every", po::value(&c.eval_every)->default_value(1), "evaluate every N epochs")
      ("metric", po::value(&metric)->default_value("auto"),
       "auto | accuracy | f1-micro | roc-auc (binary tasks; auto: accuracy, f1-micro if multi-label)")
      ("dense-features", po::bool_switch(&dense_features),
       "keep layer 0's input dense even when under 10% of it is non-zero "
       "(default: such features are held as CSR, which is faster and smaller)")
      ("row-normalize", po::bool_switch(&c.row_normalize_features),
       "divide each feature row by its sum (Kipf & Welling preprocessing)")
      ("numerics", po::value(&numerics)->default_value("fast"),
       "CPU kernels: fast (fused multiply-adds where the CPU has FMA) | portable (the same bits "
       "on every x86-64 CPU)");
  po::options_description protocol_opts("Early stopping, model selection, learning-rate schedule");
  protocol_opts.add_options()
      ("patience", po::value(&c.patience)->default_value(0),
       "stop after N epochs without a better validation result (0: run all --epochs)")
      ("select-by", po::value(&select_by)->default_value("score"),
       "what makes an evaluation the best: score | loss (validation) | both (GAT's rule: "
       "go on while either improves, keep the model that improved both)")
      ("val-loss-l2", po::bool_switch(&c.val_loss_l2),
       "add the weight decay's L2 penalty (weight-decay / 2 * sum of w^2 over the decayed "
       "weights) to the validation loss, as Shchur et al.'s reference code does")
      ("no-restore-best", po::bool_switch(&no_restore_best),
       "keep the last parameters (default: load the best evaluation's and evaluate them again)")
      ("lr-schedule", po::value(&lr_schedule)->default_value("constant"),
       "constant | step | cosine | plateau")
      ("lr-step", po::value(&c.lr_step)->default_value(0), "step: epochs between reductions")
      ("lr-gamma", po::value(&c.lr_gamma)->default_value(0.1f), "step, plateau: reduction factor")
      ("lr-min", po::value(&c.lr_min)->default_value(0.0f),
       "cosine: final learning rate; plateau: lower bound")
      ("lr-warmup", po::value(&c.lr_warmup)->default_value(0),
       "linear warm-up over the first N epochs (any schedule)")
      ("lr-patience", po::value(&c.lr_patience)->default_value(10),
       "plateau: epochs without improvement before a reduction");
  po::options_description comm_opts("Halo exchange");
  comm_opts.add_options()
      ("codec", po::value(&c.codec)->default_value("fp32"),
       "codec for every layer and direction (see docs/codecs.md)")
      ("codec-forward", po::value(&c.codec_forward), "forward codec, or a comma list per layer")
      ("codec-backward", po::value(&c.codec_backward), "backward codec, or a comma list per layer")
      ("compress-layer0", po::bool_switch(&c.compress_layer0),
       "use layer 0's forward codec and halo rows for the one-time feature exchange (default: "
       "exact plain rows)")
      ("halo-rows", po::value(&halo_rows)->default_value("plain"),
       "plain | semantic: every boundary row, or one row per semantic group (a partition built "
       "with --groups semantic; docs/semantic_groups.md)")
      ("exchange", po::value(&exchange)->default_value("sync"),
       "sync | pipelined (layer l of epoch t uses halo rows sent in epoch t-1) | refresh (only "
       "rows too old or most important cross; docs/halo_exchange.md)")
      ("sync-every", po::value(&c.sync_every)->default_value(0),
       "pipelined: a synchronous epoch every N epochs, epoch 0 included (0: only epoch 0)")
      ("staleness-bound", po::value(&staleness_bound_alias),
       "refresh: a halo row is re-sent when its age in epochs reaches N (1: every epoch, exact); "
       "with --exchange pipelined, the old name of --sync-every")
      ("refresh-fraction", po::value(&c.refresh_fraction)->default_value(0.0),
       "refresh: of the other rows, re-send this fraction ranked by --refresh-by")
      ("refresh-by", po::value(&refresh_by)->default_value("grad"),
       "refresh: grad (gradient norm in the last backward) | change (relative change since "
       "last sent)")
      ("refresh-exact-backward", po::bool_switch(&c.refresh_exact_backward),
       "refresh: send every halo gradient back every epoch (default: only those of refreshed "
       "rows)")
      ("no-overlap", po::bool_switch(&no_overlap),
       "sync: wait for each exchange before computing (default: GCN, SAGE and GIN layers compute "
       "what needs no halo row while it is in flight; the same results)")
      ("smoothing", po::value(&c.smoothing)->default_value(0.0f),
       "pipelined: moving-average gamma for stale halo rows and gradients (0: off)")
      ("emulate-link", po::value(&c.emulate_link),
       "GBPS[,LATENCY_US[,RANKS_PER_HOST]]: emulate a cluster link of this bandwidth and "
       "latency (consecutive ranks share a host and its link; default 1 per host)");
  po::options_description all;
  all.add(general).add(model_opts).add(protocol_opts).add(comm_opts).add(ckpt_opts);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
    if (vm.count("config")) {
      const std::vector<std::string> tokens = config_tokens(vm["config"].as<std::string>(), all);
      po::store(po::command_line_parser(tokens).options(all).run(), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (see --help)");
  }
  cli.help = vm.count("help") > 0;
  cli.dump_config = vm.count("dump-config") > 0;
  cli.dry_run = vm.count("dry-run") > 0;
  cli.config_file = config_file;
  std::ostringstream os;
  os << "usage: mpirun -np K halognn-train --partition DIR [options]\n" << all;
  cli.help_text = os.str();
  if (cli.help) return cli;

  c.sparse_features = !dense_features;
  c.model = parse_model_kind(model);
  c.architecture = parse_architecture(architecture);
  c.optimizer = parse_optimizer_kind(optimizer);
  c.exchange = parse_exchange_mode(exchange);
  c.select_by = parse_select_by(select_by);
  c.lr_schedule = parse_lr_schedule(lr_schedule);
  c.metric = parse_metric(metric);
  c.restore_best = !no_restore_best;
  c.bias = !no_bias;
  c.overlap = !no_overlap;
  c.numerics = kernels::parse_cpu_numerics(numerics);
  c.halo_rows = parse_halo_rows(halo_rows);
  c.refresh_by = parse_refresh_by(refresh_by);
  if (vm.count("staleness-bound")) {
    if (c.exchange == ExchangeMode::refresh) {
      c.staleness_bound = staleness_bound_alias;
    } else {
      // The pipelined policy's synchronisation period once had this name.
      GNN_CHECK_CONFIG(c.exchange == ExchangeMode::pipelined,
                       "--staleness-bound needs --exchange refresh (a per-row bound) or "
                       "pipelined (the old name of --sync-every)");
      GNN_CHECK_CONFIG(vm["sync-every"].defaulted(),
                       "give --sync-every or its old name --staleness-bound, not both");
      c.sync_every = staleness_bound_alias;
      cli.notes.push_back("note: with --exchange pipelined, --staleness-bound " +
                          std::to_string(staleness_bound_alias) + " is the old name of --sync-every " +
                          std::to_string(staleness_bound_alias) +
                          " (a synchronous epoch every N epochs); the per-row staleness bound "
                          "belongs to --exchange refresh");
    }
  }
  GNN_CHECK_CONFIG(cli.dump_config || !c.partition_dir.empty(),
                   "--partition is required (see --help)");
  c.validate();
  return cli;
}

}  // namespace halognn
