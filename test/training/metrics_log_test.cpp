// The metrics file: checked at start-up without touching anything (a directory, an input, a
// foreign file, a missing directory are refused naming the path), appended line by line, and an
// OS write error reported with the OS's reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "test/data_io/test_util.hpp"
#include "training/metrics_log.hpp"

namespace halognn {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_refused(const std::string& path, const std::vector<std::string>& inputs,
                    const std::string& needle) {
  try {
    MetricsLog::check_path(path, inputs);
    ADD_FAILURE() << path << " accepted; expected an error mentioning " << needle;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(MetricsLog, StartUpCheckRefusesWhatCannotOrMustNotBeWritten) {
  test::ScratchDir dir;
  const std::string part = dir.file("part");
  fs::create_directory(part);
  std::ofstream(part + "/manifest.json") << "{}";
  std::ofstream(dir.file("run.json")) << "{\"model\": \"gcn\"}";
  std::ofstream(dir.file("notes.txt")) << "my notes\n";
  const std::vector<std::string> inputs = {part, dir.file("run.json")};

  expect_refused(dir.path().string(), inputs, "is a directory");
  expect_refused(part + "/manifest.json", inputs, "lies inside");
  expect_refused(part + "/new.jsonl", inputs, "lies inside");
  expect_refused(dir.file("run.json"), inputs, "an input of this run");
  expect_refused(dir.file("notes.txt"), inputs, "not a halognn metrics file");
  expect_refused(dir.file("no/such/dir/m.jsonl"), inputs, "No such file or directory");
  // Nothing was changed by the checks.
  EXPECT_EQ(slurp(part + "/manifest.json"), "{}");
  EXPECT_EQ(slurp(dir.file("notes.txt")), "my notes\n");
  EXPECT_FALSE(fs::exists(part + "/new.jsonl"));

  // A new file, and an earlier run's metrics file, are fine.
  MetricsLog::check_path(dir.file("m.jsonl"), inputs);
  EXPECT_FALSE(fs::exists(dir.file("m.jsonl")));
  std::ofstream(dir.file("old.jsonl")) << "{\"epoch\":0,\"loss\":1.5}\n";
  MetricsLog::check_path(dir.file("old.jsonl"), inputs);
}

TEST(MetricsLog, AppendsOneCompleteLinePerCallAndEmptiesAnOldFile) {
  test::ScratchDir dir;
  const std::string p = dir.file("m.jsonl");
  std::ofstream(p) << "{\"epoch\":0}\n{\"epoch\":1}\n";
  MetricsLog log(p);
  EXPECT_EQ(slurp(p), "");
  log.append({{"epoch", 0}, {"loss", 0.5}});
  // Visible at once (no user-space buffer): a killed run keeps it.
  EXPECT_EQ(slurp(p), "{\"epoch\":0,\"loss\":0.5}\n");
  log.append({{"event", "final"}});
  log.close();
  EXPECT_EQ(slurp(p), "{\"epoch\":0,\"loss\":0.5}\n{\"event\":\"final\"}\n");
}

TEST(MetricsLog, AFullDiskIsReportedWithTheOsReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  MetricsLog::check_path("/dev/full", {});
  MetricsLog log("/dev/full");
  try {
    log.append({{"epoch", 0}});
    ADD_FAILURE() << "writing to /dev/full succeeded";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "/dev/full: write failed: No space left on device");
  }
}

}  // namespace
}  // namespace halognn
