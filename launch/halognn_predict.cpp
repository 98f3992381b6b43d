// halognn-predict: scores a model saved by `halognn-train --save-model` on a partition, with the
// trainer's own evaluation pass (exact synchronous exchanges, no dropout), at any rank count:
//   mpirun -np K halognn-predict --partition DIR --model FILE.npz
// Prints the accuracy (F1-micro for multi-label data) of the train, validation and test nodes.
#include <mpi.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "comm/watchdog.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/process_memory.hpp"
#include "partition/partition_io.hpp"
#include "training/checkpoint.hpp"
#include "training/partition_agreement.hpp"
#include "training/trainer.hpp"

using namespace halognn;
namespace po = boost::program_options;

int main(int argc, char** argv) {
  CommWatchdog watchdog;
  MpiEnv mpi(argc, argv);
  const Rank rank = mpi.rank(), size = mpi.size();
  try {
    std::string partition, model_path, device = "cpu";
    double timeout = 300;
    bool help = false;
    po::options_description opts("usage: mpirun -np K halognn-predict --partition DIR --model FILE.npz");
    opts.add_options()
        ("help,h", "print this help and exit")
        ("partition", po::value(&partition), "partition directory (any part count = rank count)")
        ("model", po::value(&model_path), "a model written by halognn-train --save-model")
        ("device", po::value(&device)->default_value("cpu"), "cpu | cuda")
        ("comm-timeout", po::value(&timeout)->default_value(300),
         "seconds one blocking communication step may take before every rank is aborted (0: never)");
    startup_step([&] {
      po::variables_map vm;
      try {
        po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
        po::notify(vm);
      } catch (const po::error& e) {
        throw ConfigError(std::string(e.what()) + " (see --help)");
      }
      help = vm.count("help") > 0;
      if (help) return;
      GNN_CHECK_CONFIG(!partition.empty(), "--partition is required (see --help)");
      GNN_CHECK_CONFIG(!model_path.empty(), "--model is required (see --help)");
      GNN_CHECK_CONFIG(device == "cpu" || device == "cuda", "unknown --device '", device,
                       "' (choose from: cpu, cuda)");
      GNN_CHECK_CONFIG(timeout >= 0 && timeout <= TrainConfig::kMaxCommTimeoutS,
                       "--comm-timeout must be in [0, ", TrainConfig::kMaxCommTimeoutS, "]");
    });
    if (help) {
      if (rank == 0) std::cout << opts;
      return 0;
    }
    watchdog.start(timeout, "halognn-predict", rank);

    SavedModel model;
    TrainConfig cfg;
    startup_step([&] {
      model = read_model(model_path);
      cfg = model_config(model, partition);
      cfg.device = device;
      cfg.comm_timeout_s = timeout;
    });
    LocalPartition part;
    startup_step([&] { part = read_local_partition(partition, rank, size); });
    startup_step([&] { check_partition_agreement(MPI_COMM_WORLD, part, partition); });
    DevicePtr dev;
    startup_step([&] {
      dev = device == "cuda" ? cuda_device(static_cast<int>(rank) % std::max(1, cuda_device_count()))
                             : cpu_device();
    });
    std::unique_ptr<Transport> transport;
    startup_step([&] {
      transport = device == "cuda" ? make_nccl_transport(MPI_COMM_WORLD, dev)
                                   : make_mpi_transport(MPI_COMM_WORLD);
    });
    std::unique_ptr<Trainer> trainer;
    startup_step([&] {
      trainer = std::make_unique<Trainer>(cfg, std::move(part), *transport, dev);
      // Shapes are checked array by array: a model of another width, depth or dataset is
      // refused naming the array.
      trainer->load_parameters(StateReader(model.arrays, model_path));
    });
    const SplitScores s = trainer->evaluate(0);
    double peak = static_cast<double>(peak_rss_bytes());
    GNN_CHECK_MPI(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &peak, &peak, 1, MPI_DOUBLE, MPI_MAX, 0,
                             MPI_COMM_WORLD));
    if (rank == 0) {
      const char* metric = trainer->multilabel() ? "f1" : "acc";
      std::printf("%s train %.4f val %.4f test %.4f | model %s (%s, %d layers), partition %s, %d "
                  "rank(s), peak RSS %.1f MiB (largest rank)\n",
                  metric, s.train, s.val, s.test, model_path.c_str(), to_string(cfg.model),
                  cfg.layers, partition.c_str(), static_cast<int>(size), peak / 1048576.0);
    }
    return 0;
  } catch (const StartupFailure& e) {
    if (rank == 0) std::cerr << "halognn-predict: " << e.what << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "halognn-predict: rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
