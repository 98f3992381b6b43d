// The training command line: --dump-config output is what --config reads, options that would be
// ignored are refused, the old option name still works with a note.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "test/data_io/test_util.hpp"
#include "training/train_cli.hpp"

namespace halognn {
namespace {

TrainCli parse(std::vector<std::string> args) {
  args.insert(args.begin(), "halognn-train");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_train_cli(static_cast<int>(argv.size()), argv.data());
}

std::string dumped(const TrainCli& cli) { return dump_json(cli.cfg.to_json(), 2); }

TEST(TrainCli, DumpedConfigReadsBackToTheSameConfig) {
  test::ScratchDir dir;
  const TrainCli a = parse({"--partition", "p4", "--model", "gat", "--heads", "4", "--layers", "3",
                            "--lr", "0.005", "--dropout", "0.6", "--codec-forward", "fp32,q1,q2",
                            "--exchange", "pipelined", "--sync-every", "5", "--smoothing", "0.9",
                            "--row-normalize", "--dense-features", "--emulate-link", "1,50",
                            "--numerics", "portable", "--seed", "18446744073709551615", "--quiet",
                            "--comm-timeout", "7.5", "--memory-budget", "12", "--dump-config"});
  std::ofstream(dir.file("run.json")) << dumped(a);
  const TrainCli b = parse({"--config", dir.file("run.json"), "--dump-config"});
  EXPECT_EQ(dumped(b), dumped(a));
  EXPECT_EQ(b.cfg.seed, 18446744073709551615ull);
  EXPECT_FLOAT_EQ(b.cfg.lr, 0.005f);
  EXPECT_FALSE(b.cfg.sparse_features);
  EXPECT_EQ(b.cfg.numerics, kernels::CpuNumerics::portable);
  EXPECT_EQ(b.cfg.comm_timeout_s, 7.5);
  EXPECT_EQ(b.cfg.memory_budget_gib, 12.0);
  // A refresh configuration, and the defaults, round-trip too.
  const TrainCli r = parse({"--partition", "p", "--exchange", "refresh", "--staleness-bound", "3",
                            "--refresh-fraction", "0.05", "--refresh-exact-backward"});
  std::ofstream(dir.file("refresh.json")) << dumped(r);
  EXPECT_EQ(dumped(parse({"--config", dir.file("refresh.json")})), dumped(r));
  const TrainCli d = parse({"--partition", "p", "--dump-config"});
  std::ofstream(dir.file("default.json")) << dumped(d);
  EXPECT_EQ(dumped(parse({"--config", dir.file("default.json")})), dumped(d));
}

TEST(TrainCli, NumericsDefaultToFastAndRejectUnknownModes) {
  EXPECT_EQ(parse({"--partition", "p"}).cfg.numerics, kernels::CpuNumerics::fast);
  try {
    parse({"--partition", "p", "--numerics", "exact"});
    ADD_FAILURE() << "unknown numerics accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--numerics"), std::string::npos) << e.what();
  }
}

TEST(TrainCli, CommandLineWinsOverTheConfigFile) {
  test::ScratchDir dir;
  std::ofstream(dir.file("run.json")) << R"({"partition": "p", "epochs": 7, "model": "sage"})";
  const TrainCli c = parse({"--config", dir.file("run.json"), "--epochs", "3"});
  EXPECT_EQ(c.cfg.epochs, 3);
  EXPECT_EQ(c.cfg.model, ModelKind::sage);
}

TEST(TrainCli, BadConfigFilesNameTheFileAndTheKey) {
  test::ScratchDir dir;
  std::ofstream(dir.file("typo.json")) << R"({"partition": "p", "epocs": 7})";
  try {
    parse({"--config", dir.file("typo.json")});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("typo.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"epocs\""), std::string::npos) << e.what();
  }
  std::ofstream(dir.file("broken.json")) << R"({"partition": )";
  EXPECT_THROW(parse({"--config", dir.file("broken.json")}), InputError);
  std::ofstream(dir.file("list.json")) << R"({"partition": ["a"]})";
  EXPECT_THROW(parse({"--config", dir.file("list.json")}), InputError);
  EXPECT_THROW(parse({"--config", dir.file("missing.json")}), InputError);
}

TEST(TrainCli, OptionsTheRunWouldIgnoreAreRefused) {
  auto refused = [](std::vector<std::string> args, const std::string& needle) {
    try {
      parse(std::move(args));
      ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused({"--partition", "p", "--model", "gcn", "--heads", "4"}, "--heads");
  refused({"--partition", "p", "--model", "sage", "--heads", "2"}, "--heads");
  refused({"--partition", "p", "--momentum", "0.9"}, "--momentum");
  refused({"--partition", "p", "--sync-every", "5"}, "--exchange pipelined");
  refused({"--partition", "p", "--smoothing", "0.5"}, "--exchange pipelined");
  refused({"--partition", "p", "--exchange", "pipelined", "--smoothing", "1"}, "--smoothing");
  refused({"--partition", "p", "--refresh-fraction", "0.1"}, "--exchange refresh");
  refused({"--partition", "p", "--exchange", "pipelined", "--refresh-by", "change"},
          "--exchange refresh");
  refused({"--partition", "p", "--staleness-bound", "3"}, "--exchange refresh");
  refused({"--partition", "p", "--exchange", "refresh", "--staleness-bound", "0"},
          "--staleness-bound");
  refused({"--partition", "p", "--exchange", "refresh", "--refresh-fraction", "1.5"},
          "--refresh-fraction");
  refused({"--partition", "p", "--exchange", "refresh", "--refresh-by", "age"}, "--refresh-by");
  refused({"--partition", "p", "--bogus", "1"}, "bogus");
  refused({"--model", "gcn"}, "--partition");
  EXPECT_EQ(parse({"--partition", "p", "--optimizer", "sgd", "--momentum", "0.9"}).cfg.momentum,
            0.9f);
  EXPECT_EQ(parse({"--partition", "p", "--model", "gat", "--heads", "8"}).cfg.heads, 8);
}

TEST(TrainCli, AbsurdValuesAreRefusedNamingTheOption) {
  // Each of these ended in std::bad_alloc, a hang or a NaN run that exited 0.
  auto refused = [](std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), {"--partition", "p"});
    try {
      parse(args);
      ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  refused({"--hidden", "1e8"}, "--hidden");
  refused({"--hidden", "100000000"}, "--hidden 100000000 is outside [1, 16777216]");
  refused({"--layers", "100000"}, "--layers 100000 is outside [1, 1024]");
  refused({"--model", "gat", "--heads", "1000000"}, "--heads 1000000 is outside [1, 1024]");
  refused({"--model", "gat", "--heads", "1024", "--hidden", "65536"}, "above the limit");
  refused({"--emulate-link", "1e-12"}, "--emulate-link: bandwidth");
  refused({"--emulate-link", "10,1e9"}, "--emulate-link: latency");
  refused({"--lr", "inf"}, "--lr");
  refused({"--lr", "nan"}, "--lr");
  refused({"--weight-decay", "-1"}, "--weight-decay");
  refused({"--comm-timeout", "-1"}, "--comm-timeout");
  refused({"--memory-budget", "nan"}, "--memory-budget");
  // The limits themselves are accepted.
  const TrainCli ok = parse({"--partition", "p", "--model", "gat", "--heads", "1024", "--hidden",
                             "16384", "--layers", "1024", "--comm-timeout", "0"});
  EXPECT_EQ(ok.cfg.comm_timeout_s, 0.0);
}

TEST(TrainCli, StalenessBoundIsThePerRowBoundOfRefreshAndTheOldNameOfSyncEvery) {
  const TrainCli r = parse({"--partition", "p", "--exchange", "refresh", "--staleness-bound", "4",
                            "--refresh-fraction", "0.2", "--refresh-by", "change"});
  EXPECT_EQ(r.cfg.staleness_bound, 4);
  EXPECT_EQ(r.cfg.sync_every, 0);
  EXPECT_DOUBLE_EQ(r.cfg.refresh_fraction, 0.2);
  EXPECT_EQ(r.cfg.refresh_by, RefreshConfig::By::change);
  EXPECT_TRUE(r.notes.empty());
  const TrainCli c = parse({"--partition", "p", "--exchange", "pipelined", "--staleness-bound", "4"});
  EXPECT_EQ(c.cfg.sync_every, 4);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("--sync-every"), std::string::npos) << c.notes[0];
  EXPECT_THROW(parse({"--partition", "p", "--exchange", "pipelined", "--staleness-bound", "4",
                      "--sync-every", "2"}),
               ConfigError);
  EXPECT_TRUE(parse({"--partition", "p", "--exchange", "pipelined", "--sync-every", "4"})
                  .notes.empty());
}

}  // namespace
}  // namespace halognn
