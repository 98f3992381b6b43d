#pragma once
/// @file train_cli.hpp
/// The command line of halognn-train: Boost.Program_options fills a TrainConfig. `--config FILE`
/// reads a JSON object whose keys are option names with '_' for '-' (what --dump-config prints),
/// and options given on the command line win over the file.
#include <string>
#include <vector>

#include "training/train_config.hpp"

namespace halognn {

struct TrainCli {
  TrainConfig cfg;
  bool help = false;
  bool dump_config = false;
  /// --dry-run: read the partition, print the memory estimate, do not train.
  bool dry_run = false;
  /// The --config file, if any (an input the metrics file must not overwrite).
  std::string config_file;
  std::string help_text;
  /// Remarks for the user (a deprecated option name, ...), printed once by rank 0.
  std::vector<std::string> notes;
};

/// Parses and validates (TrainConfig::validate) the options. Throws ConfigError naming the option
/// (or InputError naming the config file). --help skips validation.
TrainCli parse_train_cli(int argc, const char* const* argv);

}  // namespace halognn
