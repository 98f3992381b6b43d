#include "training/checkpoint.hpp"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "comm/mpi_env.hpp"
#include "comm/watchdog.hpp"
#include "core/atomic_output.hpp"
#include "core/file_read.hpp"
#include "partition/partition_io.hpp"

namespace halognn {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifest = "manifest.json";
constexpr const char* kPrefix = "epoch-";

std::string rank_file_name(Rank r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.npz", static_cast<int>(r));
  return buf;
}

/// The epoch of a checkpoint directory name ("epoch-000009" -> 9), or -1.
std::int64_t epoch_of(const std::string& name) {
  const std::string p = kPrefix;
  if (name.size() <= p.size() || name.compare(0, p.size(), p) != 0 || name.size() > p.size() + 18)
    return -1;
  std::int64_t e = 0;
  for (std::size_t i = p.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    e = e * 10 + (name[i] - '0');
  }
  return e;
}

/// Every checkpoint directory in `dir`, complete or not: (epoch, path, complete).
struct Entry {
  std::int64_t epoch;
  fs::path path;
  bool complete;
};
std::vector<Entry> all_checkpoints(const std::string& dir) {
  std::vector<Entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::int64_t e = epoch_of(it->path().filename().string());
    if (e < 0 || !it->is_directory()) continue;
    out.push_back({e, it->path(), fs::exists(it->path() / kManifest)});
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.epoch < b.epoch; });
  return out;
}

/// CRC32 of a whole file.
std::uint32_t file_crc32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open: " + std::string(std::strerror(errno)));
  uLong crc = ::crc32(0, nullptr, 0);
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize n = in.gcount();
    if (n > 0) crc = ::crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(n));
  }
  if (in.bad()) throw InputError(path, "read failed");
  return static_cast<std::uint32_t>(crc);
}

/// The nearest existing ancestor of `p` (p itself if it exists).
fs::path existing_ancestor(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p, ec);
  while (!p.empty() && !fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p)
    p = p.parent_path();
  return p;
}

/// True when `inner` is `dir` or lies below it (both resolved; `inner` need not exist).

template <typename T>
T manifest_value(const Json& j, const char* key, const std::string& path) {
  if (!j.contains(key)) throw InputError(path, std::string("no \"") + key + "\" in the manifest");
  try {
    return j.at(key).get<T>();
  } catch (const std::exception&) {
    throw InputError(path, std::string("\"") + key + "\" has the wrong type");
  }
}

}  // namespace

std::string checkpoint_name(std::int64_t epoch) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%06lld", kPrefix, static_cast<long long>(epoch));
  return buf;
}

std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  for (const Entry& e : all_checkpoints(dir))
    if (e.complete) out.emplace_back(e.epoch, e.path.string());
  return out;
}

void check_checkpoint_dir(const std::string& dir, std::int64_t resumed_epoch) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    GNN_CHECK_CONFIG(fs::is_directory(dir, ec), "--checkpoint-dir ", dir, " is not a directory");
    GNN_CHECK_CONFIG(::access(dir.c_str(), W_OK | X_OK) == 0, "--checkpoint-dir ", dir,
                     ": cannot write there: ", std::strerror(errno));
    const auto done = list_checkpoints(dir);
    if (!done.empty() && done.back().first > resumed_epoch)
      throw ConfigError("--checkpoint-dir " + dir + " already holds checkpoint " +
                        done.back().second +
                        (resumed_epoch < 0 ? " of another run; resume it with --resume " + dir +
                                                 " or choose an empty directory"
                                           : ", newer than the one resumed; choose another "
                                             "directory"));
    return;
  }
  const fs::path up = existing_ancestor(dir);
  GNN_CHECK_CONFIG(fs::is_directory(up, ec), "--checkpoint-dir ", dir, ": cannot create it: ",
                   up.string(), " is not a directory");
  GNN_CHECK_CONFIG(::access(up.c_str(), W_OK | X_OK) == 0, "--checkpoint-dir ", dir,
                   ": cannot create it in ", up.string(), ": ", std::strerror(errno));
}

std::pair<std::string, std::uint64_t> write_checkpoint(const std::string& dir, std::int64_t epoch,
                                                       Trainer& trainer, const TrainConfig& cfg,
                                                       std::uint64_t partition_run_id, int keep,
                                                       MPI_Comm comm) {
  int rank = 0, size = 1;
  GNN_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  GNN_CHECK_MPI(MPI_Comm_size(comm, &size));
  const fs::path ckpt = fs::path(dir) / checkpoint_name(epoch);

  // The state first: the policy completes its exchanges in flight (every rank does, together).
  StateArrays arrays;
  {
    StateWriter w(arrays);
    trainer.save_state(w);
    StateWriter meta = w.sub("checkpoint");
    meta.put_int("version", kCheckpointVersion);
    meta.put_int("rank", rank);
    meta.put_int("world_size", size);
    meta.put_int("epoch", epoch);
  }
  WrittenFile mine;
  auto step = [&](auto&& f) {
    try {
      collective_try(comm, f);
    } catch (const std::exception& e) {
      throw CheckpointError(std::string("cannot write checkpoint ") + ckpt.string() + ": " +
                            e.what());
    }
  };
  step([&] {
    std::error_code ec;
    fs::create_directories(ckpt, ec);
    if (ec) throw InputError(ckpt.string(), "cannot create: " + ec.message());
    const std::string path = (ckpt / rank_file_name(rank)).string();
    remove_stale_temporaries(path);
    mine = write_npz(path, arrays);
  });
  std::vector<std::uint64_t> sizes(2 * static_cast<std::size_t>(size));
  {
    const std::uint64_t m[2] = {mine.bytes, mine.crc32};
    BlockingScope blocked("gathering the checkpoint files' sizes and checksums");
    GNN_CHECK_MPI(MPI_Allgather(m, 2, MPI_UINT64_T, sizes.data(), 2, MPI_UINT64_T, comm));
  }
  std::uint64_t total = 0;
  for (int r = 0; r < size; ++r) total += sizes[2 * static_cast<std::size_t>(r)];
  step([&] {
    if (rank != 0) return;
    Json files = Json::array();
    for (int r = 0; r < size; ++r)
      files.push_back({{"rank", r},
                       {"file", rank_file_name(r)},
                       {"bytes", sizes[2 * static_cast<std::size_t>(r)]},
                       {"crc32", sizes[2 * static_cast<std::size_t>(r) + 1]}});
    const Json m = {{"format", "halognn-checkpoint"},
                    {"version", kCheckpointVersion},
                    {"epoch", epoch},
                    {"world_size", size},
                    {"partition_run_id", format_run_id(partition_run_id)},
                    {"config", cfg.to_json()},
                    {"files", std::move(files)}};
    // Last: the manifest makes the checkpoint complete.
    write_file_atomic((ckpt / kManifest).string(), dump_json(m, 2) + "\n");
    prune_checkpoints(dir, keep);
  });
  return {ckpt.string(), total};
}

std::vector<std::string> prune_checkpoints(const std::string& dir, int keep) {
  std::vector<std::string> removed;
  const std::vector<Entry> all = all_checkpoints(dir);
  std::vector<const Entry*> complete;
  for (const Entry& e : all)
    if (e.complete) complete.push_back(&e);
  if (complete.empty()) return removed;
  const std::int64_t newest = complete.back()->epoch;
  const std::size_t drop = keep > 0 && complete.size() > static_cast<std::size_t>(keep)
                               ? complete.size() - static_cast<std::size_t>(keep)
                               : 0;
  std::set<const Entry*> doomed(complete.begin(), complete.begin() + static_cast<std::ptrdiff_t>(drop));
  for (const Entry& e : all)
    if (!e.complete && e.epoch < newest) doomed.insert(&e);
  for (const Entry& e : all) {
    if (!doomed.contains(&e)) continue;
    std::error_code ec;
    fs::remove(e.path / kManifest, ec);  // first: from here on it is incomplete
    fs::remove_all(e.path, ec);
    if (ec) throw InputError(e.path.string(), "cannot remove an old checkpoint: " + ec.message());
    removed.push_back(e.path.string());
  }
  if (!removed.empty()) fsync_directory(dir);
  return removed;
}

CheckpointManifest read_checkpoint_manifest(const std::string& checkpoint_path) {
  const std::string path = (fs::path(checkpoint_path) / kManifest).string();
  const Json j = read_json_file(path);
  if (!j.is_object()) throw InputError(path, "a checkpoint manifest is a JSON object");
  GNN_CHECK_INPUT(manifest_value<std::string>(j, "format", path) == "halognn-checkpoint", path,
                  "not a halognn checkpoint manifest");
  const int version = manifest_value<int>(j, "version", path);
  GNN_CHECK_INPUT(version == kCheckpointVersion, path, "checkpoint format version ", version,
                  ", this build reads version ", kCheckpointVersion);
  CheckpointManifest m;
  m.path = checkpoint_path;
  m.epoch = manifest_value<std::int64_t>(j, "epoch", path);
  m.world_size = manifest_value<Rank>(j, "world_size", path);
  m.partition_run_id = manifest_value<std::string>(j, "partition_run_id", path);
  GNN_CHECK_INPUT(m.epoch >= 0 && m.world_size >= 1, path, "epoch ", m.epoch, " or world size ",
                  m.world_size, " out of range");
  if (!j.contains("config") || !j["config"].is_object())
    throw InputError(path, "no \"config\" object in the manifest");
  m.config = j["config"];
  const Json& files = j.contains("files") ? j["files"] : Json();
  GNN_CHECK_INPUT(files.is_array() && files.size() == static_cast<std::size_t>(m.world_size), path,
                  "\"files\" must list one file per rank (", m.world_size, ")");
  for (const Json& f : files) {
    if (!f.is_object()) throw InputError(path, "an entry of \"files\" is not an object");
    CheckpointFile cf;
    cf.file = manifest_value<std::string>(f, "file", path);
    cf.bytes = manifest_value<std::uint64_t>(f, "bytes", path);
    cf.crc32 = manifest_value<std::uint32_t>(f, "crc32", path);
    GNN_CHECK_INPUT(!cf.file.empty() && cf.file.find('/') == std::string::npos && cf.file != "." &&
                        cf.file != "..",
                    path, "file name \"", cf.file, "\" is not a plain name");
    m.files.push_back(std::move(cf));
  }
  return m;
}

CheckpointManifest newest_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "--resume: no such checkpoint directory");
  const auto done = list_checkpoints(dir);
  if (done.empty())
    throw InputError(dir, "--resume: no complete checkpoint here (none has a manifest.json)");
  return read_checkpoint_manifest(done.back().second);
}

const std::vector<std::string>& resumable_options() {
  static const std::vector<std::string> keys = {
      "partition",      "device",          "transport", "metrics",     "quiet",
      "comm_timeout",   "memory_budget",   "epochs",    "eval_every",  "emulate_link",
      "checkpoint_dir", "checkpoint_every", "keep_checkpoints", "resume", "save_model"};
  return keys;
}

void check_resumable(const CheckpointManifest& m, const TrainConfig& cfg, Rank world_size,
                     std::uint64_t partition_run_id) {
  const std::string where = "--resume " + m.path;
  GNN_CHECK_CONFIG(m.world_size == world_size, where, ": the checkpoint was written by ",
                   m.world_size, " rank(s), this job has ", world_size);
  GNN_CHECK_CONFIG(m.partition_run_id == format_run_id(partition_run_id), where,
                   ": the checkpoint was trained on partition run ", m.partition_run_id,
                   ", but ", cfg.partition_dir, " is partition run ",
                   format_run_id(partition_run_id));
  const Json now = cfg.to_json();
  // The cosine schedule's period is --epochs: another length would change the rates of the
  // epochs already trained, so the resumed run could not equal an uninterrupted one.
  GNN_CHECK_CONFIG(cfg.lr_schedule != LrScheduleKind::cosine || !m.config.contains("epochs") ||
                       m.config["epochs"] == now["epochs"],
                   where, ": --epochs differs from the checkpoint's ", dump_json(m.config["epochs"]),
                   ", and --lr-schedule cosine takes its period from --epochs");
  const std::vector<std::string>& free = resumable_options();
  std::set<std::string> keys;
  for (const auto& [k, v] : now.items()) keys.insert(k);
  for (const auto& [k, v] : m.config.items()) keys.insert(k);
  for (const std::string& k : keys) {
    if (std::find(free.begin(), free.end(), k) != free.end()) continue;
    const Json a = m.config.contains(k) ? m.config[k] : Json();
    const Json b = now.contains(k) ? now[k] : Json();
    if (a == b) continue;
    std::string option = k;
    std::replace(option.begin(), option.end(), '_', '-');
    std::string allowed;
    for (const std::string& f : free) {
      std::string o = f;
      std::replace(o.begin(), o.end(), '_', '-');
      allowed += (allowed.empty() ? "--" : ", --") + o;
    }
    throw ConfigError(where + ": --" + option + " differs: the checkpoint was written with " +
                      (a.is_null() ? std::string("none") : dump_json(a)) + ", this run has " +
                      (b.is_null() ? std::string("none") : dump_json(b)) +
                      " (only " + allowed + " may change on resume)");
  }
}

StateArrays read_checkpoint_state(const CheckpointManifest& m, Rank rank) {
  GNN_ASSERT(rank >= 0 && rank < static_cast<Rank>(m.files.size()), "rank ", rank, " of ",
             m.files.size());
  const CheckpointFile& f = m.files[static_cast<std::size_t>(rank)];
  const std::string path = (fs::path(m.path) / f.file).string();
  check_input_file(path);
  std::error_code ec;
  const std::uint64_t bytes = fs::file_size(path, ec);
  if (ec) throw InputError(path, "cannot stat: " + ec.message());
  GNN_CHECK_INPUT(bytes == f.bytes, path, bytes < f.bytes ? "truncated: " : "has ", bytes,
                  " bytes, the manifest says ", f.bytes);
  const std::uint32_t crc = file_crc32(path);
  GNN_CHECK_INPUT(crc == f.crc32, path, "checksum mismatch (CRC32 ", crc, ", the manifest says ",
                  f.crc32, "): the file is corrupt");
  StateArrays arrays = read_npz(path);
  const StateReader meta = StateReader(arrays, path).sub("checkpoint");
  GNN_CHECK_INPUT(meta.get_int("version") == kCheckpointVersion, path, "checkpoint format version ",
                  meta.get_int("version"), ", this build reads version ", kCheckpointVersion);
  GNN_CHECK_INPUT(meta.get_int("rank") == rank && meta.get_int("world_size") == m.world_size &&
                      meta.get_int("epoch") == m.epoch,
                  path, "holds rank ", meta.get_int("rank"), " of ", meta.get_int("world_size"),
                  " after epoch ", meta.get_int("epoch"), ", the manifest expects rank ", rank,
                  " of ", m.world_size, " after epoch ", m.epoch);
  return arrays;
}

void check_model_path(const std::string& path, const std::vector<std::string>& inputs) {
  GNN_CHECK_INPUT(!path.empty(), "--save-model", "empty file name");
  std::error_code ec;
  GNN_CHECK_INPUT(!fs::is_directory(path, ec), path, "is a directory; --save-model needs a file name");
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    if (fs::is_directory(in, ec)) {
      GNN_CHECK_INPUT(!path_lies_within(path, in), path, "lies inside ", in,
                      ", an input of this run; refusing to write the model there");
    } else if (fs::exists(path, ec) && fs::exists(in, ec)) {
      GNN_CHECK_INPUT(!fs::equivalent(path, in, ec), path, "is ", in,
                      ", an input of this run; refusing to overwrite it");
    }
  }
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  GNN_CHECK_INPUT(fs::is_directory(dir, ec), path, "cannot create: ", dir.string(),
                  " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(path, "cannot create in " + dir.string() + ": " + std::strerror(errno));
}

WrittenFile save_model(const std::string& path, const Trainer& trainer, const TrainConfig& cfg) {
  StateArrays arrays;
  StateWriter w(arrays);
  trainer.save_parameters(w);
  w.put_int("halognn_model", kCheckpointVersion);
  w.put_string("config", dump_json(cfg.to_json()));
  return write_npz(path, arrays);
}

SavedModel read_model(const std::string& path) {
  SavedModel m;
  m.path = path;
  m.arrays = read_npz(path);
  const StateReader r(m.arrays, path);
  GNN_CHECK_INPUT(r.has("halognn_model") && r.has("config"), path,
                  "not a halognn model (no 'halognn_model' and 'config' arrays; write one with "
                  "halognn-train --save-model)");
  const std::int64_t version = r.get_int("halognn_model");
  GNN_CHECK_INPUT(version == kCheckpointVersion, path, "model format version ", version,
                  ", this build reads version ", kCheckpointVersion);
  m.config = parse_json(r.get_string("config"), path + ":config");
  GNN_CHECK_INPUT(m.config.is_object(), path, "'config' is not a JSON object");
  return m;
}

TrainConfig model_config(const SavedModel& model, const std::string& partition_dir) {
  const Json& j = model.config;
  const std::string origin = model.path + ":config";
  TrainConfig c;
  c.partition_dir = partition_dir;
  c.model = parse_model_kind(manifest_value<std::string>(j, "model", origin));
  c.layers = manifest_value<int>(j, "layers", origin);
  c.hidden = manifest_value<std::int64_t>(j, "hidden", origin);
  c.heads = manifest_value<int>(j, "heads", origin);
  // Keys added after the first saved models: absent means what those models were.
  if (j.contains("architecture"))
    c.architecture = parse_architecture(manifest_value<std::string>(j, "architecture", origin));
  if (j.contains("output_heads")) c.output_heads = manifest_value<int>(j, "output_heads", origin);
  if (j.contains("activation")) c.activation = manifest_value<std::string>(j, "activation", origin);
  if (j.contains("gin_eps")) c.gin_eps = manifest_value<float>(j, "gin_eps", origin);
  if (j.contains("train_eps")) c.train_eps = manifest_value<bool>(j, "train_eps", origin);
  c.row_normalize_features = manifest_value<bool>(j, "row_normalize", origin);
  // Models saved before --no-bias existed have biases.
  c.bias = !(j.contains("no_bias") && manifest_value<bool>(j, "no_bias", origin));
  c.sparse_features = !manifest_value<bool>(j, "dense_features", origin);
  c.seed = manifest_value<std::uint64_t>(j, "seed", origin);
  c.epochs = 0;
  c.quiet = true;
  try {
    c.validate();
  } catch (const ConfigError& e) {
    throw InputError(origin, e.what());
  }
  return c;
}

}  // namespace halognn
