// halognn-train: distributed full-graph GNN training. Run one MPI rank per partition part:
//   mpirun -np K halognn-train --partition DIR [options]
// Rank 0 prints one line per epoch; --metrics writes JSON lines (atomically, at the end).
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "comm/emulated_link.hpp"
#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "core/atomic_output.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "training/train_cli.hpp"
#include "training/trainer.hpp"
#include "partition/partition_io.hpp"

using namespace halognn;

namespace {

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
    TrainCli cli;
    startup_step([&] { cli = parse_train_cli(argc, argv); });
    if (cli.help || cli.dump_config) {
      if (rank == 0) std::cout << (cli.help ? cli.help_text : dump_json(cli.cfg.to_json(), 2) + "\n");
      return 0;
    }
    if (rank == 0)
      for (const std::string& note : cli.notes) std::cerr << "halognn-train: " << note << "\n";
    // Collectives stay outside the fallible steps: a rank that throws must not skip one.
    const Rank node_rank = local_rank();
    LocalPartition part;
    DevicePtr dev;
    startup_step([&] { part = read_local_partition(cli.cfg.partition_dir, rank, size); });
    startup_step([&] { dev = pick_device(cli.cfg.device, node_rank); });
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
    const bool use_nccl = cli.cfg.transport == "nccl" || (cli.cfg.transport == "auto" && !dev->is_host());
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
                << ", exchange " << to_string(cli.cfg.exchange) << ", numerics "
                << kernels::to_string(cli.cfg.numerics) << " ("
                << kernels::to_string(kernels::cpu_isa()) << ")"
                << (cli.cfg.emulate_link.empty()
                        ? std::string()
                        : ", EMULATED link " + cli.cfg.emulate_link + " (Gb/s[,us])")
                << "\n";
    // Kernel numerics are process-wide (core/kernels/cpu_isa.hpp).
    kernels::set_cpu_numerics(cli.cfg.numerics);
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
      f["metric"] = multilabel ? "f1_micro" : "accuracy";
      f["world_size"] = size;
      f["device"] = dev->name();
      f["config"] = cli.cfg.to_json();
      std::printf("best val %.4f at epoch %d, test %.4f | %.2f s total | %.2f MB sent\n",
                  final.best_val, final.best_epoch, final.test_at_best_val, final.total_s,
                  final.total_bytes_sent / 1e6);
      if (!cli.cfg.metrics_path.empty()) {
        std::string text;
        for (const Json& l : lines) text += dump_json(l) + "\n";
        text += dump_json(f) + "\n";
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
