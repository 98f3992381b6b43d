// Outputs appear whole or not at all, and leftovers of killed writers are cleaned up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "test/data_io/test_util.hpp"

namespace halognn {
namespace {
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AtomicFile, AppearsOnlyOnCommitAndLeavesNoTemporary) {
  test::ScratchDir dir;
  const std::string path = dir.file("out.txt");
  {
    AtomicFile f(path);
    f.write("hello");
    EXPECT_FALSE(fs::exists(path));
  }  // not committed: nothing appears, the temporary is gone
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir.path()));
  write_file_atomic(path, "one");
  write_file_atomic(path, "two");
  EXPECT_EQ(slurp(path), "two");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(AtomicFile, UnwritablePlaceNamesThePathAndTheReason) {
  try {
    write_file_atomic("/proc/no/such/dir/x.txt", "x");
    ADD_FAILURE() << "wrote into /proc";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir/x.txt"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
}

TEST(StagedDirectory, SwapsInWholeAndRefusesForeignDirectories) {
  test::ScratchDir dir;
  const std::string target = dir.file("out");
  auto ours = [](const fs::path& p) { return fs::exists(p / "mark"); };
  {
    StagedDirectory s(target, ours, "test");
    write_file_atomic(s.file("mark"), "1");
    EXPECT_FALSE(fs::exists(target));
  }  // abandoned: no target, no temporary
  EXPECT_TRUE(fs::is_empty(dir.path()));
  for (const char* v : {"1", "2"}) {
    StagedDirectory s(target + "/", ours, "test");
    write_file_atomic(s.file("mark"), v);
    s.commit();
  }
  EXPECT_EQ(slurp(target + "/mark"), "2");
  fs::create_directories(dir.file("foreign"));
  EXPECT_THROW(StagedDirectory(dir.file("foreign"), ours, "test"), InputError);
}

TEST(StagedDirectory, RemovesTemporariesOfDeadWritersOnly) {
  test::ScratchDir dir;
  const std::string target = dir.file("out");
  // A pid that cannot exist (above the kernel's pid_max) stands for a killed writer.
  fs::create_directories(target + ".tmp.999999999");
  const std::string live = target + ".tmp." + std::to_string(::getppid());
  fs::create_directories(live);
  fs::create_directories(target + ".tmp.notapid");
  StagedDirectory s(target, [](const fs::path&) { return true; }, "test");
  ASSERT_EQ(s.removed_leftovers().size(), 1u);
  EXPECT_NE(s.removed_leftovers()[0].find(".tmp.999999999"), std::string::npos);
  EXPECT_FALSE(fs::exists(target + ".tmp.999999999"));
  EXPECT_TRUE(fs::exists(live)) << "a live writer's directory is left alone";
  EXPECT_TRUE(fs::exists(target + ".tmp.notapid"));
}

}  // namespace
}  // namespace halognn
