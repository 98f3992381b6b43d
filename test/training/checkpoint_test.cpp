// Checkpoint files without MPI: named state arrays and their checks, which checkpoints
// keep-last-K deletes, what resume refuses (another rank count, partition or option), and rank
// files that are truncated or corrupt, each refused naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "partition/partition_io.hpp"
#include "test/data_io/test_util.hpp"
#include "training/checkpoint.hpp"

namespace halognn {
namespace {
namespace fs = std::filesystem;

/// The message of what `f` throws as E, or "" when it throws nothing.
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TEST(StateArrays, RoundTripAndRefuseMissingArraysOrOtherShapes) {
  StateArrays arrays;
  StateWriter w(arrays);
  Matrix m = Matrix::from_host(2, 3, std::vector<float>{1, 2, 3, 4, 5, 6});
  StateWriter sub = w.sub("policy").sub("layer1");
  sub.put("used", m);
  sub.put("epochs", std::vector<std::int64_t>{-1, 4});
  sub.put("fresh", std::vector<std::uint8_t>{0, 1, 1});
  w.put_int("steps", 12);
  w.put_double("best", 0.75);
  w.put_string("config", "{\"model\": \"gcn\", \"name\": \"caf\xc3\xa9\"}");
  EXPECT_TRUE(arrays.contains("policy/layer1/used"));

  const StateReader r(arrays, "ckpt.npz");
  const StateReader rs = r.sub("policy").sub("layer1");
  Matrix back(2, 3, cpu_device());
  rs.get("used", back);
  EXPECT_EQ(back.to_host(), m.to_host());
  EXPECT_EQ(rs.get_ints("epochs", 2), (std::vector<std::int64_t>{-1, 4}));
  EXPECT_EQ(rs.get_bytes("fresh", 3), (std::vector<std::uint8_t>{0, 1, 1}));
  EXPECT_EQ(r.get_int("steps"), 12);
  EXPECT_EQ(r.get_double("best"), 0.75);
  EXPECT_EQ(r.get_string("config"), "{\"model\": \"gcn\", \"name\": \"caf\xc3\xa9\"}");

  Matrix wider(2, 4, cpu_device());
  EXPECT_EQ(error_of<InputError>([&] { rs.get("used", wider); }),
            "ckpt.npz: array 'policy/layer1/used' has shape (2, 3), this run needs (2, 4)");
  EXPECT_EQ(error_of<InputError>([&] { rs.get("arriving", back); }),
            "ckpt.npz: has no array 'policy/layer1/arriving'");
  EXPECT_NE(error_of<InputError>([&] { rs.get_ints("epochs", 3); }).find("this run needs (3,)"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([&] { r.get_double("steps"); }).find("dtype <i8"),
            std::string::npos);
}

/// A directory with fake checkpoints: `complete` ones get a manifest.
void make_checkpoint(const fs::path& dir, std::int64_t epoch, bool complete) {
  const fs::path p = dir / checkpoint_name(epoch);
  fs::create_directories(p);
  std::ofstream(p / "rank-00000.npz") << "x";
  if (complete) std::ofstream(p / "manifest.json") << "{}";
}

TEST(Checkpoints, KeepLastKDeletesOnlyOlderCompleteOnesAndOlderLeftovers) {
  test::ScratchDir dir;
  make_checkpoint(dir.path(), 1, true);
  make_checkpoint(dir.path(), 3, true);
  make_checkpoint(dir.path(), 4, false);  // a writer killed before its manifest
  make_checkpoint(dir.path(), 5, true);
  make_checkpoint(dir.path(), 7, false);  // newer than every complete one: being written
  const std::string d = dir.path().string();
  EXPECT_EQ(list_checkpoints(d).size(), 3u);
  EXPECT_EQ(list_checkpoints(d).back().first, 5);

  // keep = 0 keeps every complete checkpoint, and removes the older leftover.
  EXPECT_EQ(prune_checkpoints(d, 0), (std::vector<std::string>{(dir.path() / "epoch-000004").string()}));
  EXPECT_EQ(prune_checkpoints(d, 2), (std::vector<std::string>{(dir.path() / "epoch-000001").string()}));
  EXPECT_FALSE(fs::exists(dir.path() / "epoch-000001"));
  EXPECT_TRUE(fs::exists(dir.path() / "epoch-000003" / "manifest.json"));
  EXPECT_TRUE(fs::exists(dir.path() / "epoch-000005" / "manifest.json"));
  EXPECT_TRUE(fs::exists(dir.path() / "epoch-000007"));
  prune_checkpoints(d, 1);
  EXPECT_EQ(list_checkpoints(d).size(), 1u);
  EXPECT_EQ(list_checkpoints(d).front().first, 5);
  // Other files in the directory are never touched.
  std::ofstream(dir.file("notes.txt")) << "mine";
  fs::create_directory(dir.file("epoch-x"));
  prune_checkpoints(d, 1);
  EXPECT_TRUE(fs::exists(dir.file("notes.txt")));
  EXPECT_TRUE(fs::exists(dir.file("epoch-x")));
}

TEST(Checkpoints, AFreshRunRefusesADirectoryWithCheckpointsOfAnotherRun) {
  test::ScratchDir dir;
  const std::string d = dir.path().string();
  check_checkpoint_dir(d, -1);                      // empty: fine
  check_checkpoint_dir(dir.file("new/deeper"), -1);  // created when first written
  make_checkpoint(dir.path(), 4, true);
  EXPECT_NE(error_of<ConfigError>([&] { check_checkpoint_dir(d, -1); }).find("of another run; resume it with --resume"),
            std::string::npos);
  check_checkpoint_dir(d, 4);  // resuming from it
  EXPECT_NE(error_of<ConfigError>([&] { check_checkpoint_dir(d, 2); }).find("newer than the one resumed"),
            std::string::npos);
  std::ofstream(dir.file("file")) << "x";
  EXPECT_NE(error_of<ConfigError>([&] { check_checkpoint_dir(dir.file("file"), -1); }).find("is not a directory"),
            std::string::npos);
}

TEST(Checkpoints, ResumeRefusesAnotherRankCountPartitionOrOption) {
  TrainConfig cfg;
  cfg.partition_dir = "p2";
  cfg.epochs = 10;
  CheckpointManifest m;
  m.path = "ck/epoch-000004";
  m.epoch = 4;
  m.world_size = 2;
  m.partition_run_id = format_run_id(42);
  m.config = cfg.to_json();
  check_resumable(m, cfg, 2, 42);

  EXPECT_EQ(error_of<ConfigError>([&] { check_resumable(m, cfg, 4, 42); }),
            "--resume ck/epoch-000004: the checkpoint was written by 2 rank(s), this job has 4");
  EXPECT_NE(error_of<ConfigError>([&] { check_resumable(m, cfg, 2, 43); }).find("trained on partition run"),
            std::string::npos);
  TrainConfig other = cfg;
  other.hidden = 32;
  EXPECT_NE(error_of<ConfigError>([&] { check_resumable(m, other, 2, 42); })
                .find("--hidden differs: the checkpoint was written with 16, this run has 32"),
            std::string::npos);
  other = cfg;
  other.model = ModelKind::sage;
  EXPECT_NE(error_of<ConfigError>([&] { check_resumable(m, other, 2, 42); }).find("--model differs"),
            std::string::npos);
  other = cfg;
  other.exchange = ExchangeMode::refresh;
  other.staleness_bound = 3;
  EXPECT_NE(error_of<ConfigError>([&] { check_resumable(m, other, 2, 42); }).find("--exchange differs"),
            std::string::npos);
  // What may change: how long, where, how to report.
  other = cfg;
  other.epochs = 50;
  other.partition_dir = "elsewhere/p2";
  other.metrics_path = "m.jsonl";
  other.eval_every = 5;
  other.checkpoint_dir = "ck2";
  other.checkpoint_every = 3;
  other.keep_checkpoints = 2;
  other.resume_dir = "ck";
  other.quiet = true;
  check_resumable(m, other, 2, 42);
}

TEST(Checkpoints, TruncatedOrCorruptRankFilesAreRefusedNamingTheFile) {
  test::ScratchDir dir;
  const fs::path ck = dir.path() / checkpoint_name(3);
  fs::create_directories(ck);
  StateArrays arrays;
  StateWriter w(arrays);
  w.sub("checkpoint").put_int("version", kCheckpointVersion);
  w.sub("checkpoint").put_int("rank", 0);
  w.sub("checkpoint").put_int("world_size", 1);
  w.sub("checkpoint").put_int("epoch", 3);
  w.put("params/layer0.weight", Matrix::from_host(1, 2, std::vector<float>{1, 2}));
  const std::string file = (ck / "rank-00000.npz").string();
  const WrittenFile wf = write_npz(file, arrays);
  const Json manifest = {{"format", "halognn-checkpoint"}, {"version", kCheckpointVersion},
                         {"epoch", 3}, {"world_size", 1}, {"partition_run_id", format_run_id(1)},
                         {"config", TrainConfig().to_json()},
                         {"files", Json::array({{{"rank", 0}, {"file", "rank-00000.npz"},
                                                 {"bytes", wf.bytes}, {"crc32", wf.crc32}}})}};
  write_file_atomic((ck / "manifest.json").string(), dump_json(manifest));

  const CheckpointManifest m = newest_checkpoint(dir.path().string());
  EXPECT_EQ(m.epoch, 3);
  EXPECT_EQ(read_checkpoint_state(m, 0).size(), arrays.size());

  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << flipped;
  EXPECT_EQ(error_of<InputError>([&] { read_checkpoint_state(m, 0); }).rfind(file + ": checksum mismatch", 0), 0u);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, 100);
  EXPECT_EQ(error_of<InputError>([&] { read_checkpoint_state(m, 0); }).rfind(file + ": truncated: 100 bytes", 0), 0u);
  fs::remove(file);
  EXPECT_EQ(error_of<InputError>([&] { read_checkpoint_state(m, 0); }).rfind(file + ": ", 0), 0u);
  // Without its manifest a checkpoint is incomplete: nothing to resume from.
  fs::remove(ck / "manifest.json");
  EXPECT_NE(error_of<InputError>([&] { newest_checkpoint(dir.path().string()); }).find("no complete checkpoint"),
            std::string::npos);
}

}  // namespace
}  // namespace halognn
