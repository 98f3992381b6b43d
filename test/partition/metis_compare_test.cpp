// Our METIS call against the gpmetis command-line tool on the same graph and seed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "partition/partition.hpp"
#include "partition/partition_io.hpp"
#include "partition_fixtures.hpp"

namespace halognn {
namespace {

bool have_gpmetis() { return std::system("command -v gpmetis > /dev/null 2>&1") == 0; }

/// Runs gpmetis and returns its reported edge cut, or -1 on failure.
std::int64_t gpmetis_edge_cut(const std::string& graph, int k, int seed) {
  const std::string cmd =
      "gpmetis -seed=" + std::to_string(seed) + " " + graph + " " + std::to_string(k) + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) text += buf;
  if (::pclose(pipe) != 0) return -1;
  const auto at = text.find("Edgecut:");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + 8));
}

TEST(MetisPartition, EdgeCutIsWithinAFewPercentOfGpmetis) {
  if (!have_gpmetis()) GTEST_SKIP() << "gpmetis not installed";
  const Dataset ds = test::make_dataset(test::geometric_edges(2000, 0.045, 7));
  const GlobalGraph g = test::graph_of(ds);
  ASSERT_GT(g.num_directed_edges(), 2 * 4000);
  test::TempDir tmp;
  const std::string file = tmp / "geo.graph";
  write_metis_graph(g, file);
  for (int k : {2, 4, 8}) {
    const std::int64_t theirs = gpmetis_edge_cut(file, k, 1);
    ASSERT_GT(theirs, 0) << "gpmetis failed for k=" << k;
    const auto parts = assign_parts(g, {k, PartitionConfig::Method::metis,
                                        PartitionConfig::Objective::cut, 1, {}});
    const std::int64_t ours = compute_partition_report(g, parts, k).edge_cut;
    std::printf("k=%d ours=%lld gpmetis=%lld\n", k, (long long)ours, (long long)theirs);
    EXPECT_LE(ours, theirs * 1.05 + 2) << "k=" << k << " gpmetis " << theirs;
    EXPECT_GE(ours, theirs * 0.95 - 2) << "k=" << k << " gpmetis " << theirs;
  }
}

}  // namespace
}  // namespace halognn
