#pragma once
/// @file checkpoint.hpp
/// Checkpoints of a training run and saved models (docs/training.md "Checkpoints and resume").
///
/// A checkpoint is a directory `<checkpoint-dir>/epoch-<E>` (E: the last finished epoch, six
/// digits) holding one `rank-<r>.npz` per rank (Trainer::save_state: parameters, optimiser,
/// exchange policy, TrainerState) and a `manifest.json` that rank 0 writes last, once every rank
/// has written its file: the epoch, the rank count, the partition's run id, the run's
/// configuration (TrainConfig::to_json) and every rank file's size and CRC32. A checkpoint
/// without a manifest is incomplete and never resumed from. Every file is written atomically
/// (core/atomic_output.hpp). A resumed run continues with epoch E + 1 and, since every random
/// choice is keyed by (seed, epoch, ...), equals a run that was never stopped bit for bit.
///
/// A saved model (--save-model) is one `.npz` with an array per parameter ("layer0.weight", ...)
/// plus "halognn_model" (the format version) and "config" (the run's configuration as JSON).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "core/data/state_io.hpp"
#include "core/data/zip.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/types.hpp"
#include "training/train_config.hpp"
#include "training/trainer.hpp"

namespace halognn {

/// Writing a checkpoint failed on some rank; thrown on every rank together (the lowest failing
/// rank's message), so the tool can stop every rank with one line and no abort.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

/// The version of the checkpoint and saved-model formats this build writes and reads.
inline constexpr int kCheckpointVersion = 1;

struct CheckpointFile {
  std::string file;  ///< name inside the checkpoint directory
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

/// A checkpoint's manifest.json.
struct CheckpointManifest {
  std::string path;              ///< the checkpoint directory
  std::int64_t epoch = -1;       ///< the last finished epoch
  Rank world_size = 0;
  std::string partition_run_id;  ///< format_run_id of the partition trained on
  Json config;                   ///< TrainConfig::to_json of the run that wrote it
  std::vector<CheckpointFile> files;  ///< one per rank, in rank order
};

/// "epoch-000009": the name of the checkpoint taken after epoch 9.
std::string checkpoint_name(std::int64_t epoch);

/// The complete checkpoints in `dir` (those with a manifest), oldest first: (epoch, path).
/// A missing directory has none.
std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& dir);

/// Start-up check of --checkpoint-dir (no side effects): it is, or can be created as, a writable
/// directory, and it holds no complete checkpoint after `resumed_epoch` (-1: a fresh run), which
/// a later --resume would take for this run's. Throws ConfigError naming the option.
void check_checkpoint_dir(const std::string& dir, std::int64_t resumed_epoch);

/// Collective over `comm`: every rank writes its state after `epoch` into
/// `<dir>/epoch-<E>/rank-<r>.npz`, then rank 0 writes the manifest and, with keep > 0, deletes
/// all but the newest `keep` complete checkpoints (and incomplete ones older than this one).
/// Returns the checkpoint's path and the bytes written by all ranks. Throws CheckpointError on
/// every rank when any rank failed.
std::pair<std::string, std::uint64_t> write_checkpoint(const std::string& dir, std::int64_t epoch,
                                                       Trainer& trainer, const TrainConfig& cfg,
                                                       std::uint64_t partition_run_id, int keep,
                                                       MPI_Comm comm);

/// Removes all but the newest `keep` complete checkpoints of `dir` (manifest first, so a crash
/// leaves an incomplete one, never a complete one with files missing) and the incomplete ones
/// older than the newest complete one. Returns the paths removed.
std::vector<std::string> prune_checkpoints(const std::string& dir, int keep);

/// Reads and checks a checkpoint's manifest. Throws InputError naming the file.
CheckpointManifest read_checkpoint_manifest(const std::string& checkpoint_path);

/// The manifest of the newest complete checkpoint in `dir`. Throws InputError naming `dir` when
/// it has none.
CheckpointManifest newest_checkpoint(const std::string& dir);

/// Refuses (ConfigError, one line) to resume from `m` with another rank count, another
/// partition, or an option that changes what is trained; the options that may change are listed
/// by resumable_options().
void check_resumable(const CheckpointManifest& m, const TrainConfig& cfg, Rank world_size,
                     std::uint64_t partition_run_id);

/// The configuration keys that may differ between a checkpoint and the run resuming it (where
/// the data is, how long to train, how to report, where to write).
const std::vector<std::string>& resumable_options();

/// This rank's state from checkpoint `m`, after checking the file's size and CRC32 against the
/// manifest and its own header against the rank. Throws InputError naming the file.
StateArrays read_checkpoint_state(const CheckpointManifest& m, Rank rank);

/// Start-up check of --save-model (no side effects): not a directory, not inside one of
/// `inputs`, in a writable directory. Throws InputError naming the file.
void check_model_path(const std::string& path, const std::vector<std::string>& inputs);

/// Writes the trained parameters and the configuration to `path` (.npz, atomically).
WrittenFile save_model(const std::string& path, const Trainer& trainer, const TrainConfig& cfg);

/// A model read back: its arrays (parameters, "halognn_model", "config") and configuration.
struct SavedModel {
  std::string path;
  StateArrays arrays;
  Json config;
};

/// Reads a file written by save_model. Throws InputError naming the file.
SavedModel read_model(const std::string& path);

/// The configuration that rebuilds the model's layers on `partition_dir` for evaluation: the
/// model's kind, layers, widths and input preprocessing; exact synchronous exchanges.
TrainConfig model_config(const SavedModel& model, const std::string& partition_dir);

}  // namespace halognn
