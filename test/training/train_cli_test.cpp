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
                            "--output-heads", "2",
                            "--attention-dropout", "0.6", "--value-dropout", "0.3",
                            "--activation", "relu", "--patience", "40", "--select-by", "both",
                            "--no-restore-best", "--lr-schedule", "plateau", "--lr-gamma", "0.5",
                            "--lr-min", "0.0001", "--lr-warmup", "3", "--lr-patience", "7",
                            "--decay-first-layer-only", "--metric", "accuracy", "--comm-timeout",
                            "7.5", "--memory-budget", "12", "--dump-config"});
  std::ofstream(dir.file("run.json")) << dumped(a);
  const TrainCli b = parse({"--config", dir.file("run.json"), "--dump-config"});
  EXPECT_EQ(dumped(b), dumped(a));
  EXPECT_EQ(b.cfg.seed, 18446744073709551615ull);
  EXPECT_FLOAT_EQ(b.cfg.lr, 0.005f);
  EXPECT_FALSE(b.cfg.sparse_features);
  EXPECT_EQ(b.cfg.numerics, kernels::CpuNumerics::portable);
  EXPECT_FALSE(b.cfg.restore_best);
  EXPECT_EQ(b.cfg.select_by, SelectBy::both);
  EXPECT_EQ(b.cfg.lr_schedule, LrScheduleKind::plateau);
  EXPECT_EQ(b.cfg.lr_patience, 7);
  EXPECT_FLOAT_EQ(b.cfg.value_dropout, 0.3f);
  EXPECT_EQ(b.cfg.resolved_activation(), Activation::relu);
  // GIN's options and the step schedule round-trip too.
  const TrainCli g = parse({"--partition", "p", "--model", "gin", "--gin-eps", "0.5", "--train-eps",
                            "--lr-schedule", "step", "--lr-step", "30", "--metric", "roc-auc",
                            "--no-overlap", "--dump-config"});
  std::ofstream(dir.file("gin.json")) << dumped(g);
  const TrainCli g2 = parse({"--config", dir.file("gin.json"), "--dump-config"});
  EXPECT_EQ(dumped(g2), dumped(g));
  EXPECT_TRUE(g2.cfg.train_eps);
  EXPECT_FALSE(g2.cfg.overlap);
  EXPECT_TRUE(b.cfg.overlap);
  EXPECT_EQ(g2.cfg.metric, MetricKind::roc_auc);
  EXPECT_EQ(b.cfg.comm_timeout_s, 7.5);
  EXPECT_EQ(b.cfg.memory_budget_gib, 12.0);
  // A refresh configuration, and the defaults, round-trip too.
  const TrainCli r = parse({"--partition", "p", "--exchange", "refresh", "--staleness-bound", "3",
                            "--refresh-fraction", "0.05", "--refresh-exact-backward"});
  std::ofstream(dir.file("refresh.json")) << dumped(r);
  EXPECT_EQ(dumped(parse({"--config", dir.file("refresh.json")})), dumped(r));
  const TrainCli res = parse({"--partition", "p", "--model", "sage", "--architecture", "residual",
                              "--layers", "5", "--hidden", "512", "--dropout", "0.2"});
  std::ofstream(dir.file("residual.json")) << dumped(res);
  const TrainCli res2 = parse({"--config", dir.file("residual.json")});
  EXPECT_EQ(dumped(res2), dumped(res));
  EXPECT_EQ(res2.cfg.architecture, Architecture::residual);
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
  refused({"--partition", "p", "--exchange", "pipelined", "--no-overlap"}, "--exchange sync");
  refused({"--partition", "p", "--model", "gat", "--no-overlap"}, "never overlap");
  refused({"--partition", "p", "--architecture", "residual", "--no-overlap"}, "never overlap");
  refused({"--partition", "p", "--bogus", "1"}, "bogus");
  refused({"--model", "gcn"}, "--partition");
  refused({"--partition", "p", "--model", "gcn", "--attention-dropout", "0.5"}, "--attention-dropout");
  refused({"--partition", "p", "--model", "sage", "--value-dropout", "0.5"}, "--value-dropout");
  refused({"--partition", "p", "--model", "gin", "--output-heads", "2"}, "--output-heads");
  refused({"--partition", "p", "--model", "gcn", "--gin-eps", "0.1"}, "--gin-eps");
  refused({"--partition", "p", "--model", "gat", "--train-eps"}, "--train-eps");
  refused({"--partition", "p", "--activation", "tanh"}, "--activation");
  refused({"--partition", "p", "--model", "gat", "--attention-dropout", "1"}, "--attention-dropout");
  refused({"--partition", "p", "--patience", "5", "--eval-every", "10"}, "--patience");
  refused({"--partition", "p", "--select-by", "accuracy"}, "--select-by");
  refused({"--partition", "p", "--select-by", "loss", "--no-restore-best"}, "--select-by");
  refused({"--partition", "p", "--lr-schedule", "step"}, "--lr-step");
  refused({"--partition", "p", "--lr-step", "10"}, "--lr-step");
  refused({"--partition", "p", "--lr-schedule", "cosine", "--lr-gamma", "0.5"}, "--lr-gamma");
  refused({"--partition", "p", "--lr-schedule", "step", "--lr-step", "5", "--lr-min", "0.001"},
          "--lr-min");
  refused({"--partition", "p", "--lr-schedule", "cosine", "--lr-min", "0.5"}, "--lr-min");
  refused({"--partition", "p", "--lr-patience", "3"}, "--lr-patience");
  refused({"--partition", "p", "--lr-schedule", "exponential"}, "--lr-schedule");
  refused({"--partition", "p", "--metric", "auc"}, "--metric");
  refused({"--partition", "p", "--model", "gat", "--output-heads", "100000"}, "--output-heads");
  refused({"--partition", "p", "--architecture", "resnet"}, "--architecture");
  refused({"--partition", "p", "--architecture", "residual", "--model", "gin"},
          "--model gcn, sage or gat");
  // Residual GAT blocks split their width among the heads, end in a linear head and drop out in
  // their feed-forward only.
  refused({"--partition", "p", "--architecture", "residual", "--model", "gat", "--hidden", "10",
           "--heads", "4"},
          "multiple of --heads");
  refused({"--partition", "p", "--architecture", "residual", "--model", "gat", "--output-heads",
           "2"},
          "--output-heads");
  refused({"--partition", "p", "--architecture", "residual", "--model", "gat",
           "--attention-dropout", "0.1"},
          "--attention-dropout");
  EXPECT_EQ(parse({"--partition", "p", "--model", "gat", "--architecture", "residual", "--heads",
                   "8", "--hidden", "512"})
                .cfg.heads,
            8);
  refused({"--partition", "p", "--architecture", "residual", "--activation", "relu"},
          "--activation");
  refused({"--partition", "p", "--architecture", "residual", "--no-bias"}, "--no-bias");
  refused({"--partition", "p", "--architecture", "residual", "--halo-rows", "semantic"},
          "--halo-rows semantic");
  EXPECT_EQ(parse({"--partition", "p", "--model", "sage", "--architecture", "residual"})
                .cfg.architecture,
            Architecture::residual);
  EXPECT_EQ(parse({"--partition", "p", "--optimizer", "sgd", "--momentum", "0.9"}).cfg.momentum,
            0.9f);
  // --activation auto: ELU for GAT (Velickovic et al.), ReLU otherwise.
  EXPECT_EQ(parse({"--partition", "p", "--model", "gat"}).cfg.resolved_activation(), Activation::elu);
  EXPECT_EQ(parse({"--partition", "p", "--model", "gin"}).cfg.resolved_activation(), Activation::relu);
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
