// halognn-train: distributed full-graph GNN training. Run one MPI rank per partition part:
//   mpirun -np K halognn-train --partition DIR [options]
// Rank 0 prints one line per epoch; --metrics appends one JSON line per epoch as it ends.
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "comm/emulated_link.hpp"
#include "comm/mpi_env.hpp"
#include "comm/transport.hpp"
#include "comm/watchdog.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/kernels/cpu_isa.hpp"
#include "core/process_memory.hpp"
#include "partition/partition_io.hpp"
#include "training/checkpoint.hpp"
#include "training/memory_estimate.hpp"
#include "training/metrics_log.hpp"
#include "training/partition_agreement.hpp"
#include "training/train_cli.hpp"
#include "training/trainer.hpp"

using namespace halognn;

namespace {

/// This rank's node: a communicator of the ranks sharing its memory.
MPI_Comm node_comm() {
  BlockingScope blocked("MPI_Comm_split_type (grouping the ranks by node)");
  MPI_Comm node;
  GNN_CHECK_MPI(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  return node;
}

DevicePtr pick_device(const std::string& want, Rank local_rank) {
  const int n = cuda_device_count();
  if (want == "cpu" || (want == "auto" && n == 0)) return cpu_device();
  GNN_CHECK_CONFIG(n > 0, "--device cuda: no CUDA device is visible");
  return cuda_device(local_rank % n);
}

/// Short name of a score in progress lines.
const char* metric_label(MetricKind m) {
  switch (m) {
    case MetricKind::f1_micro: return "f1";
    case MetricKind::roc_auc: return "auc";
    default: return "acc";
  }
}

/// Name of the score in the metrics file's final object.
const char* metric_name(MetricKind m) {
  switch (m) {
    case MetricKind::f1_micro: return "f1_micro";
    case MetricKind::roc_auc: return "roc_auc";
    default: return "accuracy";
  }
}

std::string progress_line(const EpochMetrics& m, MetricKind metric_kind, bool show_lr) {
  char buf[512];
  const char* metric = metric_label(metric_kind);
  std::string eval = "";
  if (m.eval) {
    char e[128];
    std::snprintf(e, sizeof e, " val %.4f test %.4f (val loss %.4f)", m.eval->val, m.eval->test,
                  m.eval->val_loss);
    eval = e;
  }
  std::snprintf(buf, sizeof buf,
                "epoch %4lld | loss %.4f | %s train %.4f%s | %.3f s (compute %.3f comm %.3f codec "
                "%.3f) | %.2f MB sent%s",
                static_cast<long long>(m.epoch), m.loss, metric, m.train_score, eval.c_str(),
                m.epoch_s, m.compute_s, m.comm_s, m.codec_s, m.bytes_sent / 1e6,
                m.synchronous ? "" : " | stale halo rows, age <= ");
  std::string line = buf;
  if (!m.synchronous) line += std::to_string(m.max_staleness);
  if (m.overlapped_exchanges > 0) {
    char ov[64];
    std::snprintf(ov, sizeof ov, " | %.3f s of compute beside the exchange", m.overlap_s);
    line += ov;
  }
  if (show_lr) {
    char lr[48];
    std::snprintf(lr, sizeof lr, " | lr %.3g", m.lr);
    line += lr;
  }
  return line;
}

/// Every rank's estimate as numbers, in a fixed order (the terms are the same on every rank).
std::vector<double> estimate_numbers(const MemoryEstimate& e) {
  std::vector<double> v;
  for (const MemoryTerm& t : e.terms) v.push_back(static_cast<double>(t.bytes));
  for (std::uint64_t x : {e.startup_host, e.startup_device, e.epoch_host, e.epoch_device,
                          e.peak_host, e.peak_device, e.peak_total})
    v.push_back(static_cast<double>(x));
  return v;
}

/// The breakdown rank 0 prints: the rank with the largest peak term by term, then every rank's
/// peak.
std::string memory_report(const MemoryEstimate& shape, const std::vector<double>& all, Rank size,
                          bool device_is_host) {
  const std::size_t per = shape.terms.size() + 7;
  auto at = [&](Rank r, std::size_t k) { return all[static_cast<std::size_t>(r) * per + k]; };
  const std::size_t peak_k = shape.terms.size() + (device_is_host ? 6 : 5);
  Rank big = 0;
  for (Rank r = 1; r < size; ++r)
    if (at(r, peak_k) > at(big, peak_k)) big = r;
  char line[512];
  std::string out = "halognn-train: memory estimate of rank " + std::to_string(big) +
                    " (the largest; docs/training.md \"Memory estimate\"):\n";
  for (std::size_t k = 0; k < shape.terms.size(); ++k) {
    const MemoryTerm& t = shape.terms[k];
    std::snprintf(line, sizeof line, "  %-28s %-6s %12s   %s\n", t.name.c_str(),
                  t.space == MemorySpace::host ? "host" : "device",
                  format_bytes(at(big, k)).c_str(), t.driver.c_str());
    out += line;
  }
  const std::size_t n = shape.terms.size();
  std::snprintf(line, sizeof line,
                "  start-up only: %s host + %s device (the features as read, and their copy or their CSR); "
                "per epoch: %s host + %s device\n",
                format_bytes(at(big, n)).c_str(), format_bytes(at(big, n + 1)).c_str(),
                format_bytes(at(big, n + 2)).c_str(), format_bytes(at(big, n + 3)).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  peak: %s host, %s device%s\n",
                format_bytes(at(big, n + 4)).c_str(), format_bytes(at(big, n + 5)).c_str(),
                device_is_host ? (", " + format_bytes(at(big, n + 6)) + " together (CPU run)").c_str()
                               : "");
  out += line;
  out += "  peak per rank:";
  for (Rank r = 0; r < size; ++r) {
    if (r == 16 && size > 17) {
      out += " ... (" + std::to_string(size - 16) + " more)";
      break;
    }
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on " " + std::string.
    out += ' ';
    out += std::to_string(r);
    out += ": ";
    out += format_bytes(at(r, peak_k));
    if (r + 1 < size) out += ',';
  }
  return out + "\n";
}

/// Every rank's measured peak resident memory against its estimated peak (what the memory check
/// compared with the node's memory): "0: 3.10 GiB (1.03x), 1: ...", and the largest ratio.
std::string measured_memory_line(const std::vector<double>& rss, const std::vector<double>& est,
                                 double* largest_ratio) {
  std::string out = "halognn-train: peak RSS per rank (measured, against the estimate):";
  *largest_ratio = 0;
  char part[96];
  for (std::size_t r = 0; r < rss.size(); ++r) {
    const double ratio = est[r] > 0 ? rss[r] / est[r] : 0;
    *largest_ratio = std::max(*largest_ratio, ratio);
    if (r == 16 && rss.size() > 17) {
      out += " ... (" + std::to_string(rss.size() - 16) + " more)";
      break;
    }
    std::snprintf(part, sizeof part, " %zu: %s (%.2fx)%s", r, format_bytes(rss[r]).c_str(), ratio,
                  r + 1 < rss.size() ? "," : "");
    out += part;
  }
  std::snprintf(part, sizeof part, "; largest ratio %.2f\n", *largest_ratio);
  return out + part;
}

}  // namespace

int main(int argc, char** argv) {
  // Constructed before MPI so that it still watches MPI_Finalize; started once the timeout is known.
  CommWatchdog watchdog;
  MpiEnv mpi(argc, argv);
  const Rank rank = mpi.rank(), size = mpi.size();
  // What the process holds before it reads anything: the program, its libraries, MPI.
  const std::int64_t baseline_rss = current_rss_bytes();
  try {
    TrainCli cli;
    startup_step([&] { cli = parse_train_cli(argc, argv); });
    if (cli.help || cli.dump_config) {
      if (rank == 0) std::cout << (cli.help ? cli.help_text : dump_json(cli.cfg.to_json(), 2) + "\n");
      return 0;
    }
    const TrainConfig& cfg = cli.cfg;
    watchdog.start(cfg.comm_timeout_s, "halognn-train", rank);
    if (rank == 0)
      for (const std::string& note : cli.notes) std::cerr << "halognn-train: " << note << "\n";
    // Collectives stay outside the fallible steps: a rank that throws must not skip one.
    MPI_Comm node = node_comm();
    int node_rank = 0, node_size = 1;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    startup_step([&] {
      // Fail now, not after the last epoch, if the metrics file cannot be written or would
      // overwrite an input.
      if (rank == 0 && !cfg.metrics_path.empty())
        MetricsLog::check_path(cfg.metrics_path, {cfg.partition_dir, cli.config_file});
      if (rank == 0 && !cfg.save_model_path.empty())
        check_model_path(cfg.save_model_path, {cfg.partition_dir, cli.config_file, cfg.resume_dir});
    });
    // --resume: the newest complete checkpoint (every rank reads the same manifest).
    std::optional<CheckpointManifest> resume;
    if (!cfg.resume_dir.empty()) startup_step([&] { resume = newest_checkpoint(cfg.resume_dir); });
    LocalPartition part;
    startup_step([&] { part = read_local_partition(cfg.partition_dir, rank, size); });
    startup_step([&] { check_partition_agreement(MPI_COMM_WORLD, part, cfg.partition_dir); });
    const std::uint64_t run_id = part.run_id;
    startup_step([&] {
      if (resume) {
        check_resumable(*resume, cfg, size, run_id);
        GNN_CHECK_CONFIG(resume->epoch + 1 < cfg.epochs, "--resume ", resume->path,
                         ": the checkpoint is after epoch ", resume->epoch, ", so --epochs ",
                         cfg.epochs, " leaves nothing to train (raise --epochs)");
      }
      if (rank == 0 && !cfg.checkpoint_dir.empty())
        check_checkpoint_dir(cfg.checkpoint_dir, resume ? resume->epoch : -1);
    });
    DevicePtr dev;
    startup_step([&] { dev = pick_device(cfg.device, node_rank); });
    // NCCL moves device buffers GPU to GPU; MPI (not CUDA-aware here) stages them through the host.
    const bool use_nccl = cfg.transport == "nccl" || (cfg.transport == "auto" && !dev->is_host());

    // Memory: estimated per rank, printed by rank 0, summed per node and checked against it.
    MemoryEstimate estimate;
    startup_step([&] {
      estimate = estimate_training_memory(cfg, PartitionShape::of(part),
                                          {dev->is_host(), use_nccl && !dev->is_host()});
      add_process_baseline(estimate, static_cast<std::uint64_t>(baseline_rss));
    });
    {
      const std::vector<double> mine = estimate_numbers(estimate);
      std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
      BlockingScope blocked("gathering the memory estimates");
      GNN_CHECK_MPI(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                               static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
      if (rank == 0 && (!cfg.quiet || cli.dry_run))
        std::cout << memory_report(estimate, all, size, dev->is_host()) << std::flush;
    }
    // What this rank takes of its node's memory (the process's resident memory: on a GPU run,
    // its host part).
    const double node_share = static_cast<double>(dev->is_host() ? estimate.peak_total : estimate.peak_host);
    double node_need = node_share;
    {
      BlockingScope blocked("adding up the memory estimates of a node");
      GNN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &node_need, 1, MPI_DOUBLE, MPI_SUM, node));
    }
    MPI_Comm_free(&node);
    startup_step([&] {
      const bool budgeted = cfg.memory_budget_gib > 0;
      const double budget = budgeted ? cfg.memory_budget_gib * 1073741824.0
                                     : static_cast<double>(node_memory_bytes());
      if (node_need <= budget) return;
      const MemoryTerm& big = estimate.largest();
      throw ConfigError(
          "the run needs an estimated " + format_bytes(node_need) + " on this node (" +
          std::to_string(node_size) + " rank(s)), more than its " + format_bytes(budget) +
          (budgeted ? " of --memory-budget" : " of physical memory") + "; the largest term is " +
          big.name + " (" + format_bytes(static_cast<double>(big.bytes)) + " on rank " +
          std::to_string(rank) + "), driven by " + big.driver +
          ": lower it or use more ranks (--dry-run prints the breakdown)");
    });
    if (cli.dry_run) {
      if (rank == 0) std::cout << "halognn-train: dry run: the estimate fits; not training\n";
      return 0;
    }

    std::unique_ptr<Transport> base_transport;
    startup_step([&] {
      base_transport = use_nccl ? make_nccl_transport(MPI_COMM_WORLD, dev)
                                : make_mpi_transport(MPI_COMM_WORLD);
    });
    std::unique_ptr<Transport> emulated;
    if (!cfg.emulate_link.empty())
      emulated = make_emulated_link(*base_transport, parse_link_model(cfg.emulate_link));
    Transport* transport = emulated ? emulated.get() : base_transport.get();
    if (rank == 0 && !cfg.quiet)
      std::cout << "halognn-train: " << size << " rank(s), model " << to_string(cfg.model)
                << ", device " << dev->name() << ", partition " << cfg.partition_dir
                << ", exchange " << to_string(cfg.exchange) << ", numerics "
                << kernels::to_string(cfg.numerics) << " ("
                << kernels::to_string(kernels::cpu_isa()) << ")"
                << (cfg.emulate_link.empty()
                        ? std::string()
                        : ", EMULATED link " + cfg.emulate_link + " (Gb/s[,us[,ranks per host]])")
                << "\n";
    // Kernel numerics are process-wide (core/kernels/cpu_isa.hpp).
    kernels::set_cpu_numerics(cfg.numerics);
    std::unique_ptr<Trainer> trainer;
    startup_step([&] {
      trainer = std::make_unique<Trainer>(cfg, std::move(part), *transport, dev);
    });
    if (resume) {
      startup_step([&] {
        const StateArrays state = read_checkpoint_state(*resume, rank);
        trainer->load_state(StateReader(
            state, (std::filesystem::path(resume->path) / resume->files[static_cast<std::size_t>(rank)].file)
                       .string()));
      });
      if (rank == 0 && !cfg.quiet)
        std::cout << "halognn-train: resuming from " << resume->path << " (after epoch "
                  << resume->epoch << "; continuing with epoch " << resume->epoch + 1 << ")\n";
    }
    const MetricKind metric = trainer->metric();
    const bool show_lr = cfg.lr_schedule != LrScheduleKind::constant || cfg.lr_warmup > 0;
    double state_mib = static_cast<double>(trainer->policy().state_bytes()) / (1024.0 * 1024.0);
    transport->all_reduce_max(&state_mib, 1);
    if (rank == 0 && !cfg.quiet && state_mib > 0)
      std::printf("halognn-train: exchange policy %s keeps %.2f MiB of halo state per rank (max)\n",
                  std::string(trainer->policy().name()).c_str(), state_mib);
    const auto [plain_rows, sent_rows] = trainer->rows_per_exchange();
    if (rank == 0 && !cfg.quiet)
      std::cout << "halognn-train: halo rows per exchange of a layer: " << plain_rows << " plain"
                << (cfg.halo_rows == HaloRows::semantic
                        ? ", " + std::to_string(sent_rows) + " semantic group rows sent"
                        : std::string())
                << "\n";
    // The one-time layer-0 exchange (collective), so the feature bytes can be reported now.
    trainer->exchange_features();
    if (rank == 0 && !cfg.quiet) {
      const FeatureBytes& fb = trainer->feature_bytes();
      auto pair = [](std::uint64_t got, std::uint64_t dense) {
        return format_bytes(static_cast<double>(got)) + " (dense fp32 " +
               format_bytes(static_cast<double>(dense)) + ")";
      };
      std::cout << "halognn-train: layer-0 input on rank 0: "
                << (trainer->compact_input() ? "sparsified (positions + codebook)"
                    : trainer->sparse_input() ? "sparse (CSR)"
                                              : "dense")
                << "; feature bytes of all ranks: in the rank files " << pair(fb.stored, fb.stored_dense)
                << ", in memory " << pair(fb.memory, fb.memory_dense) << ", sent once "
                << pair(fb.sent, fb.sent_dense) << "\n";
    }
    // Opened last, so a run refused at start-up leaves an earlier metrics file as it was.
    std::optional<MetricsLog> metrics;
    startup_step([&] {
      if (rank == 0 && !cfg.metrics_path.empty()) {
        if (resume) metrics.emplace(cfg.metrics_path, resume->epoch);  // append, no duplicates
        else metrics.emplace(cfg.metrics_path);
      }
    });
    // A checkpoint after every --checkpoint-every-th epoch and after the last.
    auto checkpoint = [&](std::int64_t e) {
      if (cfg.checkpoint_dir.empty()) return;
      const bool due = (cfg.checkpoint_every > 0 && (e + 1) % cfg.checkpoint_every == 0) ||
                       e + 1 == cfg.epochs;
      if (!due) return;
      const auto t0 = std::chrono::steady_clock::now();
      const auto [path, bytes] = write_checkpoint(cfg.checkpoint_dir, e, *trainer, cfg, run_id,
                                                  cfg.keep_checkpoints, MPI_COMM_WORLD);
      if (rank == 0 && !cfg.quiet)
        std::printf("halognn-train: checkpoint %s: %.2f MB in %.2f s\n", path.c_str(), bytes / 1e6,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    };

    FinalMetrics final;
    try {
      final = trainer->run([&](const EpochMetrics& m) {
        if (rank != 0) return;
        if (!cfg.quiet)
          std::cout << progress_line(m, metric, show_lr)
                    << (cfg.emulate_link.empty() ? "" : " | emulated link " + cfg.emulate_link)
                    << std::endl;
        if (metrics) metrics->append(m.to_json());
      }, checkpoint);
    } catch (const CheckpointError& e) {
      // Every rank throws it together (the lowest failing rank's message): no abort needed.
      if (rank == 0) std::cerr << "halognn-train: " << e.what() << std::endl;
      return 1;
    } catch (const TrainingDiverged& e) {
      // Every rank stops in the same epoch (the loss is all-reduced): no abort needed.
      if (rank == 0) {
        if (metrics) {
          metrics->append({{"event", "diverged"}, {"epoch", e.epoch()}, {"message", e.what()}});
          metrics->close();
        }
        std::cerr << "halognn-train: " << e.what() << std::endl;
      }
      return 1;
    }
    // Measured peak resident memory of every rank, beside the estimate it was checked with.
    double rss_ratio = 0;
    std::vector<double> rss(static_cast<std::size_t>(size)), est(static_cast<std::size_t>(size));
    {
      const double mine[2] = {static_cast<double>(peak_rss_bytes()), node_share};
      std::vector<double> both(2 * static_cast<std::size_t>(size));
      BlockingScope blocked("gathering the peak memory of every rank");
      GNN_CHECK_MPI(MPI_Gather(mine, 2, MPI_DOUBLE, both.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
      for (std::size_t r = 0; r < rss.size(); ++r) {
        rss[r] = both[2 * r];
        est[r] = both[2 * r + 1];
      }
    }
    if (rank == 0) {
      const std::string line = measured_memory_line(rss, est, &rss_ratio);
      if (!cfg.quiet) std::cout << line << std::flush;
      Json f = final.to_json();
      f["peak_rss_bytes"] = std::vector<std::int64_t>(rss.begin(), rss.end());
      f["peak_rss_over_estimate"] = rss_ratio;
      f["metric"] = metric_name(metric);
      f["world_size"] = size;
      f["device"] = dev->name();
      f["config"] = cfg.to_json();
      f["memory_estimate"] = estimate.to_json();
      const char* label = metric_label(metric);
      std::printf("best val %s %.4f at epoch %d (test %.4f) | %d epochs%s | %.2f s total | "
                  "%.2f MB sent\n",
                  label, final.best_val, final.best_epoch, final.test_at_best_val, final.epochs_run,
                  final.early_stopped ? " (stopped early)" : "", final.total_s,
                  final.total_bytes_sent / 1e6);
      std::printf("final test %s %.4f (train %.4f, val %.4f; %s of epoch %d)\n", label,
                  final.final_scores.test, final.final_scores.train, final.final_scores.val,
                  final.restored ? "restored best parameters" : "last parameters",
                  final.final_epoch);
      if (metrics) {
        metrics->append(f);
        metrics->close();
      }
    }
    if (!cfg.save_model_path.empty()) {
      // Every rank holds the same parameters; rank 0 writes them, and every rank hears of a
      // failure.
      startup_step([&] {
        if (rank != 0) return;
        const WrittenFile w = save_model(cfg.save_model_path, *trainer, cfg);
        if (!cfg.quiet)
          std::printf("halognn-train: model saved to %s (%.2f MB)\n", cfg.save_model_path.c_str(),
                      w.bytes / 1e6);
      });
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
