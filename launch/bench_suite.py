#!/usr/bin/python3
"""halognn benchmark suite: runs the experiments recorded in docs/benchmarks.md and prints each
result as a markdown table (and writes JSON next to it).

usage: bench_suite.py EXPERIMENT [--build BUILD_DIR] [--work DIR] [--seeds 5] [--first-seed 1]
                                  [--epochs N] ...
  accuracy  test score of the best-validation model (restored), mean/std over seeds, for datasets
            x models x ranks x codecs, with each dataset's published protocol (DATASETS, PROTOCOLS)
            beside the published numbers (PUBLISHED)
  scaling   epoch time split and bytes per epoch on the default graph at 1, 2, 4 ranks, against the
            roofline bound (launch/roofline.py), beside a plain PyTorch run of the same model
            (1 rank) in the same invocation; --repeats N: the median of N interleaved runs
  codecs    the codec table: bytes, accuracy and epoch-time breakdown per codec
  sweep     emulated-bandwidth sweep of sync/pipelined x fp32/q1 (+ PNG plot)
  overlap   sync epochs with and without overlap (--no-overlap) per bandwidth and codec,
            interleaved and repeated: epoch time split, compute beside the exchange, speed-up
  curves    convergence curves (test accuracy per epoch) of sync fp32 and pipelined q1 (PNG)
  compare   the same runs with two builds (--build and --baseline), interleaved, repeated: epoch
            times side by side and their ratio (a refactoring must not slow anything down)
Run with /usr/bin/python3 (Debian's numpy/matplotlib). Needs the tools built in BUILD_DIR/bin.
"""
import argparse
import concurrent.futures
import glob
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import roofline  # launch/roofline.py, beside this script

PARTITION_FORMAT = 3  # kPartitionFormatVersion in partition/partition_io.hpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "datasets")

SHCHUR_CONVERT = ["--largest-component", "--binary-features", "--seed", "SEED"]

# Datasets of the accuracy experiment: the source folder, `halognn-data convert` options (SEED
# stands for the run's seed where the split changes with it), the training protocol and the score.
DATASETS = {
    "cora": dict(src="cora", convert=[], protocol="planetoid"),
    "citeseer": dict(src="citeseer", convert=[], protocol="planetoid"),
    # Shchur et al.: largest connected component, features as binary bag-of-words (their
    # pipeline binarises Coauthor's word counts), 20/30 per class train/val, the rest test, one
    # random split per seed.
    "amazon-photo": dict(src="amazon-photo", convert=SHCHUR_CONVERT, protocol="shchur"),
    "amazon-computers": dict(src="amazon-computers", convert=SHCHUR_CONVERT, protocol="shchur"),
    "coauthor-cs": dict(src="coauthor-cs", convert=SHCHUR_CONVERT, protocol="shchur"),
    "coauthor-physics": dict(src="coauthor-physics", convert=SHCHUR_CONVERT, protocol="shchur"),
    "facebook-page-page": dict(src="facebook-page-page", convert=["--seed", "SEED"], protocol="shchur"),
    # Platonov et al.: their stored splits; seed s uses split s - 1.
    "tolokers": dict(src="tolokers", convert=["--split", "SPLIT"], protocol="platonov",
                     metric="roc-auc"),
    "chameleon-filtered": dict(src="chameleon", convert=["--name", "chameleon_filtered", "--split", "SPLIT"],
                               protocol="platonov"),
    "squirrel-filtered": dict(src="squirrel", convert=["--name", "squirrel_filtered", "--split", "SPLIT"],
                              protocol="platonov"),
}

# Hyper-parameters and training procedure per protocol and model, as published:
#   planetoid  Kipf & Welling (GCN: 2 x 16 without biases, dropout 0.5, lr 0.01, L2 5e-4 on the
#              first layer, 200 epochs, row-normalised features; SAGE and GIN take the same with
#              biases), Velickovic et al.
#              (GAT: 8 heads x 8, ELU, dropout 0.6 on inputs, attention coefficients and the
#              aggregated values, lr 0.005, L2 5e-4, patience 100 on validation loss and accuracy)
#   shchur     Shchur et al.'s tuned settings and procedure (early stopping with patience 50 on the
#              validation loss, the best model restored, at most 100000 epochs, raw features)
#   platonov   the heterophilous sets. MODEL-resL: Platonov et al.'s own models and training
#              (their train.py defaults): an input linear layer, L residual blocks of 512 with
#              layer norm (GAT blocks: 8 heads) and a feed-forward of two linear layers (GELU,
#              dropout 0.2), an output head; Adam at lr 3e-5 without weight decay, 1000 steps,
#              the step with the best validation score kept; they report the L of 1 to 5 with
#              the best mean validation score (their notebooks/results.ipynb), the "val %"
#              column here. MODEL alone: the standard 2-layer model, trained to the best
#              validation score with patience 100.
PLATONOV_PLAIN = ["--epochs", "1000", "--patience", "100", "--select-by", "score"]


def platonov_residual(model, blocks):
    """Platonov et al.'s residual model with `blocks` blocks, trained as they train it."""
    heads = ["--heads", "8"] if model == "gat" else []  # their --num_heads default
    return ["--model", model, "--architecture", "residual", "--layers", str(blocks), "--hidden",
            "512", "--dropout", "0.2", "--lr", "3e-5", "--weight-decay", "0", "--epochs", "1000",
            "--select-by", "score"] + heads


PROTOCOLS = {
    "planetoid": {
        # Kipf & Welling's reference GCN has no biases (GraphConvolution's bias=False).
        "gcn": ["--model", "gcn", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr", "0.01",
                "--weight-decay", "5e-4", "--decay-first-layer-only", "--epochs", "200",
                "--row-normalize", "--no-bias"],
        # The same with L2 on every layer's weights (the table shows both: the choice moves
        # CiteSeer by about half a point).
        "gcn-l2all": ["--model", "gcn", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr",
                      "0.01", "--weight-decay", "5e-4", "--epochs", "200", "--row-normalize",
                      "--no-bias"],
        "sage": ["--model", "sage", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr", "0.01",
                 "--weight-decay", "5e-4", "--decay-first-layer-only", "--epochs", "200",
                 "--row-normalize"],
        "gin": ["--model", "gin", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr", "0.01",
                "--weight-decay", "5e-4", "--decay-first-layer-only", "--epochs", "200",
                "--row-normalize"],
        "gat": ["--model", "gat", "--layers", "2", "--hidden", "8", "--heads", "8", "--dropout", "0.6",
                "--attention-dropout", "0.6", "--value-dropout", "0.6", "--lr", "0.005",
                "--weight-decay", "5e-4", "--epochs", "100000", "--patience", "100",
                "--select-by", "both", "--row-normalize"],
    },
    "shchur": {
        "gcn": ["--model", "gcn", "--layers", "2", "--hidden", "64", "--dropout", "0.8", "--lr", "0.01",
                "--weight-decay", "1e-3", "--decay-first-layer-only"],
        "sage": ["--model", "sage", "--layers", "2", "--hidden", "32", "--dropout", "0.4", "--lr", "0.001",
                 "--weight-decay", "0.1", "--decay-first-layer-only"],
        "gin": ["--model", "gin", "--layers", "2", "--hidden", "64", "--dropout", "0.8", "--lr", "0.01",
                "--weight-decay", "1e-3", "--decay-first-layer-only"],
        "gat": ["--model", "gat", "--layers", "2", "--hidden", "8", "--heads", "8", "--dropout", "0.6",
                "--attention-dropout", "0.3", "--value-dropout", "0.6", "--lr", "0.01",
                "--weight-decay", "0.01"],
        # Their validation loss, which early stopping watches, includes the L2 penalty
        # (gnnbench/models/base_model.py: the loss is cross-entropy plus the regularisation losses).
        "_all": ["--epochs", "100000", "--patience", "50", "--select-by", "loss", "--val-loss-l2"],
    },
    "platonov": {
        "gcn": ["--model", "gcn", "--layers", "2", "--hidden", "64", "--dropout", "0.5", "--lr", "0.01",
                "--weight-decay", "5e-4"] + PLATONOV_PLAIN,
        "sage": ["--model", "sage", "--layers", "2", "--hidden", "64", "--dropout", "0.5", "--lr", "0.01",
                 "--weight-decay", "5e-4"] + PLATONOV_PLAIN,
        "gin": ["--model", "gin", "--layers", "2", "--hidden", "64", "--dropout", "0.5", "--lr", "0.01",
                "--weight-decay", "5e-4"] + PLATONOV_PLAIN,
        "gat": ["--model", "gat", "--layers", "2", "--hidden", "8", "--heads", "8", "--dropout", "0.5",
                "--attention-dropout", "0.5", "--lr", "0.005", "--weight-decay", "5e-4"] + PLATONOV_PLAIN,
        **{f"{m}-res{b}": platonov_residual(m, b) for m in ("gcn", "sage", "gat")
           for b in range(1, 6)},
    },
}

# Published test scores in % (mean ± sd where given): Kipf & Welling 2017 (GCN, Planetoid split),
# Velickovic et al. 2018 (GAT), Shchur et al. 2018 Table 1 (GCN, GAT, GraphSAGE-mean; 100 random
# splits x 20 initialisations), Platonov et al. 2023 (ROC AUC for Tolokers; residual GNNs).
PUBLISHED = {
    ("cora", "gcn"): ("81.5", "Kipf & Welling"),
    ("citeseer", "gcn"): ("70.3", "Kipf & Welling"),
    ("cora", "gat"): ("83.0 ± 0.7", "Veličković et al."),
    ("citeseer", "gat"): ("72.5 ± 0.7", "Veličković et al."),
    ("amazon-computers", "gcn"): ("82.6 ± 2.4", "Shchur et al."),
    ("amazon-computers", "gat"): ("78.0 ± 19.0", "Shchur et al."),
    ("amazon-computers", "sage"): ("82.4 ± 1.8", "Shchur et al."),
    ("amazon-photo", "gcn"): ("91.2 ± 1.2", "Shchur et al."),
    ("amazon-photo", "gat"): ("85.7 ± 20.3", "Shchur et al."),
    ("amazon-photo", "sage"): ("91.4 ± 1.3", "Shchur et al."),
    ("coauthor-cs", "gcn"): ("91.1 ± 0.5", "Shchur et al."),
    ("coauthor-cs", "gat"): ("90.5 ± 0.6", "Shchur et al."),
    ("coauthor-cs", "sage"): ("91.3 ± 2.8", "Shchur et al."),
    ("coauthor-physics", "gcn"): ("92.8 ± 1.0", "Shchur et al."),
    ("coauthor-physics", "gat"): ("92.5 ± 0.9", "Shchur et al."),
    ("coauthor-physics", "sage"): ("93.0 ± 0.8", "Shchur et al."),
    ("tolokers", "gcn"): ("83.64 ± 0.67", "Platonov et al."),
    ("tolokers", "sage"): ("82.43 ± 0.44", "Platonov et al."),
    ("tolokers", "gat"): ("83.70 ± 0.47", "Platonov et al."),
    ("chameleon-filtered", "gcn"): ("40.89 ± 4.12", "Platonov et al."),
    ("chameleon-filtered", "sage"): ("37.77 ± 4.14", "Platonov et al."),
    ("chameleon-filtered", "gat"): ("39.21 ± 3.08", "Platonov et al."),
    ("squirrel-filtered", "gcn"): ("39.47 ± 1.47", "Platonov et al."),
    ("squirrel-filtered", "sage"): ("36.09 ± 1.99", "Platonov et al."),
    ("squirrel-filtered", "gat"): ("35.62 ± 2.06", "Platonov et al."),
}


def train_args(ds, model, seed):
    """The halognn-train options of one accuracy run (protocol, model, metric, seed)."""
    spec = DATASETS[ds]
    proto = PROTOCOLS[spec["protocol"]]
    if model not in proto:
        sys.exit(f"bench_suite: no {model} settings for the {spec['protocol']} protocol "
                 f"(choose from: {', '.join(k for k in proto if not k.startswith('_'))})")
    args = proto[model] + proto.get("_all", []) + ["--seed", str(seed)]
    if "metric" in spec:
        args += ["--metric", spec["metric"]]
    return args


def without(args, *options):
    """args minus each option in `options` and its value."""
    out, skip = [], False
    for x in args:
        if skip:
            skip = False
        elif x in options:
            skip = True
        else:
            out.append(x)
    return out


class Env:
    def __init__(self, a, build=None, work=None, partition_format=PARTITION_FORMAT):
        self.bin = os.path.join(os.path.abspath(build or a.build), "bin")
        self.work = os.path.abspath(work or a.work)
        self.partition_format = partition_format  # None: whatever the build's own tool wrote
        self.reuse = a.reuse
        self.datasets_dir = os.path.abspath(a.datasets_dir)
        os.makedirs(self.work, exist_ok=True)
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1")

    def run(self, args, ranks=1, threads=None):
        env = dict(self.env)
        cores = os.cpu_count() or 1
        env["OMP_NUM_THREADS"] = str(threads or max(1, cores // max(ranks, 1)))
        # --bind-to none: Open MPI binds a rank to one core by default, which would put all of
        # a rank's OpenMP threads on that core.
        tool = [os.path.join(self.bin, args[0])] + args[1:]
        cmd = tool if ranks == 0 else ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to",
                                       "none", "-x", "OMP_NUM_THREADS"] + tool
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"bench_suite: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
        return r.stdout

    @staticmethod
    def instance(name, seed):
        """The converted dataset a run uses: its split may depend on the seed (DATASETS)."""
        spec = DATASETS.get(name)
        if spec and any(o in ("SEED", "SPLIT") for o in spec["convert"]):
            return f"{name}-s{seed}"
        return name

    def dataset(self, name, seed=1):
        inst = self.instance(name, seed)
        d = os.path.join(self.work, inst)
        if name == "default":
            cmd = ["halognn-data", "generate", "--out", d]
        else:
            spec = DATASETS.get(name, dict(src=name, convert=[]))
            opts = [str(seed) if o == "SEED" else str(seed - 1) if o == "SPLIT" else o
                    for o in spec["convert"]]
            cmd = ["halognn-data", "convert", "--input", os.path.join(self.datasets_dir, spec["src"]),
                   "--out", d] + opts
        # The command that made the dataset is kept beside it: a dataset (and its partitions)
        # made with other options, e.g. by an older protocol, is made again.
        record = d + ".command.json"
        made = json.load(open(record)) if os.path.exists(record) else None
        if made != cmd or not os.path.exists(os.path.join(d, "manifest.json")):
            for old in [d] + glob.glob(glob.escape(d) + ".p*"):
                shutil.rmtree(old, ignore_errors=True)
            self.run(cmd, ranks=0)
            json.dump(cmd, open(record, "w"))
        return d

    def partition(self, name, parts, seed=1, extra=(), suffix=""):
        """The partition of dataset `name` into `parts`; with `extra` halognn-partition options it
        is kept apart under the name suffix `suffix` (e.g. "sem" for --groups semantic)."""
        assert not extra or suffix, "a partition made with extra options needs its own suffix"
        p = os.path.join(self.work, f"{self.instance(name, seed)}.p{parts}" + (f".{suffix}" if suffix else ""))
        manifest = os.path.join(p, "manifest.json")
        # A partition of an older format (partition/partition_io.hpp) is made again.
        stale = (self.partition_format is not None and os.path.exists(manifest) and
                 json.load(open(manifest)).get("version") != self.partition_format)
        if not os.path.exists(manifest) or stale:
            self.run(["halognn-partition", "--data", self.dataset(name, seed), "--parts", str(parts),
                      "--out", p] + list(extra), ranks=0)
        return p

    def train(self, name, ranks, args, tag, threads=None, seed=1):
        metrics = os.path.join(self.work, f"m-{tag}.jsonl")
        if not (self.reuse and os.path.exists(metrics)):
            self.run(["halognn-train", "--partition", self.partition(name, ranks, seed), "--quiet",
                      "--metrics", metrics] + args, ranks=ranks, threads=threads)
        lines = [json.loads(l) for l in open(metrics)]
        return lines[:-1], lines[-1]


def mean_std(xs):
    return (statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def pct(m_s):
    return f"{100 * m_s[0]:.1f} ± {100 * m_s[1]:.1f}"


def accuracy(e, a):
    """Test score of the final model (the best validation evaluation, restored) per dataset,
    model, rank count, codec and exchange mode; mean ± sd over seeds F..F+N-1 (--first-seed F,
    --seeds N; seed s trains on the dataset's stored split s - 1 where it has splits). The runs go
    --jobs at a time (datasets and partitions are made first, one after another)."""
    seeds = range(a.first_seed, a.first_seed + a.seeds)
    configs = []
    for ds in a.datasets:
        for model in a.models:
            for ranks in a.ranks:
                for codec in a.codecs:
                    for mode in a.modes:
                        extra = ["--codec", codec] if codec != "fp32" else []
                        if mode != "sync":
                            every = mode.split(":")[1] if ":" in mode else "0"
                            extra += ["--exchange", "pipelined", "--sync-every", every]
                        if a.device != "cpu":
                            extra += ["--device", a.device]
                        configs.append((ds, model, ranks, codec, mode, tuple(extra)))
    runs = [(c, s) for c in configs for s in seeds]
    for (ds, _, ranks, _, _, _), s in runs:
        e.partition(ds, ranks, s)

    def one(run):
        (ds, model, ranks, codec, mode, extra), s = run
        t0 = time.time()
        # One thread per rank: accuracy runs are not timed, and spinning OpenMP threads on a
        # shared machine only slow them down.
        tag = f"acc-{ds}-{model}-{ranks}-{codec}-{mode}-{s}"
        _, f = e.train(ds, ranks, train_args(ds, model, s) + list(extra), tag, threads=1, seed=s)
        if sys.stderr.isatty():
            print(f"{tag}: test {100 * f['final_test_acc']:.2f} after {f['epochs_run']} epochs",
                  file=sys.stderr, flush=True)
        return f, time.time() - t0

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        finals = dict(zip(runs, pool.map(one, runs)))
    rows, results = [], []
    for c in configs:
        ds, model, ranks, codec, mode, _ = c
        fs = [finals[(c, s)] for s in seeds]
        scores = [f["final_test_acc"] for f, _ in fs]
        vals = [f["final_val_acc"] for f, _ in fs]
        epochs = [f["epochs_run"] for f, _ in fs]
        metric = fs[-1][0]["metric"]
        ms = mean_std(scores)
        results.append(dict(dataset=ds, model=model, ranks=ranks, codec=codec, mode=mode,
                            test=scores, val=vals, epochs=epochs, metric=metric))
        pub, src = PUBLISHED.get((ds, model.split("-")[0]), ("–", ""))
        delta = f"{100 * ms[0] - float(pub.split()[0]):+.1f}" if pub != "–" else ""
        # The validation score picks among variants (Platonov et al.'s depth). The time column
        # sums the seeds' own run times.
        rows.append([ds, model, ranks, codec, mode, pct(mean_std(vals)), pct(ms), pub, delta,
                     f"{statistics.mean(epochs):.0f}", metric,
                     f"{sum(t for _, t in fs):.0f} s"])
    print(table(["dataset", "model", "ranks", "codec", "exchange", "val %",
                 f"test % (mean ± sd, seeds {seeds[0]}-{seeds[-1]})", "published", "Δ", "epochs (mean)",
                 "metric", "run time"], rows))
    # The same, one row per dataset, model, codec and exchange, one column per rank count.
    wide = []
    for ds in a.datasets:
        for model in a.models:
            for codec in a.codecs:
                for mode in a.modes:
                    rs = [r for r in results if (r["dataset"], r["model"], r["codec"], r["mode"]) ==
                          (ds, model, codec, mode)]
                    by_ranks = {r["ranks"]: r for r in rs}
                    pub, src = PUBLISHED.get((ds, model.split("-")[0]), ("–", ""))
                    first = by_ranks[a.ranks[0]]
                    delta = (f"{100 * statistics.mean(first['test']) - float(pub.split()[0]):+.1f}"
                             if pub != "–" else "")
                    wide.append([ds, model] + ([codec, mode] if len(a.codecs) > 1 or len(a.modes) > 1 else [])
                                + [pct(mean_std(by_ranks[k]["test"])) for k in a.ranks]
                                + [pub + (f" ({src})" if src else ""), delta,
                                   f"{statistics.mean(first['epochs']):.0f}"])
    print()
    print(table(["dataset", "model"] + (["codec", "exchange"] if len(a.codecs) > 1 or len(a.modes) > 1 else [])
                + [f"{k} rank{'s' if k > 1 else ''}" for k in a.ranks]
                + ["published", f"Δ ({a.ranks[0]} rank{'s' if a.ranks[0] > 1 else ''})",
                   "epochs run (mean)"], wide))
    return results


def median_run(runs):
    """Of several runs' epoch_stats, the one with the median epoch time (the lower of the two
    middle ones for an even count): a whole run, so its time split stays consistent."""
    return sorted(runs, key=lambda x: x["epoch_s"])[(len(runs) - 1) // 2]


def epoch_stats(epochs, skip):
    ep = epochs[skip:]
    f = lambda k: statistics.mean(x[k] for x in ep)
    return dict(epoch_s=f("epoch_s"), compute_s=f("compute_s"), comm_s=f("comm_s"),
                codec_s=f("codec_s"), bytes=f("bytes_sent"))


def scaling(e, a):
    rows, results = [], []
    if any(m in ("gcn", "sage", "gat") for m in a.models) and importlib.util.find_spec("torch") is None:
        sys.exit("bench_suite: scaling runs the PyTorch baseline beside GCN, SAGE and GAT: install "
                 "Debian's python3-torch (apt-get install python3-torch)")
    # The machine's limits, measured in this run, for the roofline bound of every epoch.
    limits = os.path.join(e.work, "limits.json")
    e.run(["halognn-bench-kernels", "--limits-only", "--json", limits], ranks=0)
    lim = json.load(open(limits))
    print(f"limits: triad {lim['triad_gb_per_s']:.1f} GB/s, peak {lim['peak_gflop_per_s']:.1f} "
          f"GFLOP/s ({lim['threads']} threads)", file=sys.stderr)
    # --repeats runs of every (model, ranks), the repeats interleaved (round r runs every cell
    # once) so that load changes on a shared machine hit every cell alike; each run's epoch time
    # is its mean over epochs 1.. (epoch 0 pays first-touch allocation), and the cell reports the
    # run with the median epoch time.
    repeats = a.repeats or 1  # None: the default, one run
    runs = {}
    for r in range(repeats):
        for model in a.models:
            for ranks in a.ranks:
                args = ["--model", model, "--layers", "3", "--hidden", "256", "--epochs",
                        str(a.epochs), "--eval-every", str(a.epochs)]
                tag = f"scale-{model}-{ranks}" + (f"-{r}" if repeats > 1 else "")
                ep, _ = e.train("default", ranks, args, tag)
                runs.setdefault((model, ranks), []).append(epoch_stats(ep, 1))
    for model in a.models:
        for ranks in a.ranks:
            st = median_run(runs[(model, ranks)])
            bound, _ = roofline.epoch_bound(e.partition("default", ranks), limits, model, 3, 256)
            results.append(dict(model=model, ranks=ranks, bound_s=bound, **st,
                                run_epoch_s=[x["epoch_s"] for x in runs[(model, ranks)]]))
            rows.append([model, ranks, f"{st['epoch_s']:.3f}", f"{bound:.3f}",
                         f"{st['epoch_s'] / bound:.1f}", f"{st['compute_s']:.3f}",
                         f"{st['comm_s']:.3f}", f"{st['codec_s']:.3f}", f"{st['bytes'] / 1e6:.1f}"]
                        + ([" ".join(f"{x['epoch_s']:.3f}" for x in runs[(model, ranks)])]
                           if repeats > 1 else []))
        if model in ("gcn", "sage", "gat"):
            out = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "launch", "bench_torch_baseline.py"),
                                  "--data", e.dataset("default"), "--model", model, "--epochs",
                                  str(a.epochs - 1), "--warmup", "1"],
                                 capture_output=True, text=True, check=True).stdout
            t = json.loads(out)
            results.append(dict(t, model=model))
            ours = next(r for r in results if r.get("model") == model and r.get("ranks") == 1)
            rows.append([f"{model} (PyTorch {t['torch']}, {t['threads']} threads)", 1,
                         f"{t['epoch_s_mean']:.3f}", "", "", "", "", "", "0"]
                        + [""] * (repeats > 1))
            rows.append([f"{model}: PyTorch / halognn at 1 rank", "", f"{t['epoch_s_mean'] / ours['epoch_s']:.2f}x",
                         "", "", "", "", "", ""] + [""] * (repeats > 1))
    print(table(["model (3 x 256, default graph)", "ranks", "epoch s", "roofline bound s",
                 "measured / bound", "compute s", "comm wait s", "codec s", "MB sent / epoch"]
                + ([f"epoch s of each run ({repeats})"] if repeats > 1 else []), rows))
    return results


def codecs(e, a):
    rows, results = [], []
    base = None
    for codec in a.codecs:
        args = ["--model", a.models[0], "--layers", "3", "--hidden", "256", "--epochs", str(a.epochs),
                "--eval-every", "1", "--codec", codec]
        ep, f = e.train("default", a.ranks[0], args, f"codec-{codec}")
        st = epoch_stats(ep, 1)
        tr = ep[-1]["traffic"]
        payload = tr["fwd"]["payload"] + tr["bwd"]["payload"]
        meta = tr["fwd"]["metadata"] + tr["bwd"]["metadata"]
        if codec == "fp32":
            base = payload + meta
        results.append(dict(codec=codec, payload=payload, metadata=meta, test=f["test_acc_at_best_val"], **st))
        rows.append([codec, f"{payload / 1e6:.2f}", f"{meta / 1e6:.3f}",
                     f"{base / (payload + meta):.1f}x" if base else "",
                     f"{100 * f['test_acc_at_best_val']:.2f}", f"{st['epoch_s']:.3f}",
                     f"{st['compute_s']:.3f}", f"{st['comm_s']:.3f}", f"{st['codec_s']:.3f}",
                     f"{100 * st['codec_s'] / st['compute_s']:.1f}%"])
    print(table(["codec", "halo payload MB/epoch", "metadata MB/epoch", "fp32 / codec bytes",
                 f"test acc % ({a.epochs} epochs)", "epoch s", "compute s", "comm wait s", "codec s",
                 "codec / compute"], rows))
    return results


SWEEP_CONFIGS = [("sync fp32", ["--codec", "fp32"]),
                 ("pipelined fp32", ["--codec", "fp32", "--exchange", "pipelined"]),
                 ("sync q1", ["--codec", "q1"]),
                 ("pipelined q1", ["--codec", "q1", "--exchange", "pipelined"]),
                 ("pipelined q1, bound 5", ["--codec", "q1", "--exchange", "pipelined",
                                            "--sync-every", "5"])]


def sweep(e, a):
    results = []
    for bw in a.bandwidths:
        for name, cfg in SWEEP_CONFIGS:
            args = ["--model", a.models[0], "--layers", "3", "--hidden", "256", "--epochs",
                    str(a.epochs), "--eval-every", str(a.epochs)] + cfg
            if bw != "none":
                args += ["--emulate-link", f"{bw},{a.latency_us}"]
            ep, _ = e.train("default", a.ranks[0], args, f"sweep-{bw}-{name.replace(' ', '_').replace(',', '')}")
            # Skip epoch 0 (synchronous in every mode, and warm-up) and epoch 1, which only fills
            # the pipeline (nothing is in flight after a synchronous epoch): steady state from 2 on.
            st = epoch_stats(ep, 2)
            results.append(dict(bandwidth=bw, config=name, **st))
            print(bw, name, st, file=sys.stderr, flush=True)
    rows = []
    for bw in a.bandwidths:
        rs = [r for r in results if r["bandwidth"] == bw]
        base = rs[0]
        for r in rs:
            rows.append([bw, r["config"], f"{r['epoch_s']:.3f}", f"{r['compute_s']:.3f}", f"{r['codec_s']:.3f}",
                         f"{r['comm_s']:.3f}", f"{100 * base['comm_s'] / base['epoch_s']:.0f}%" if r is base else "",
                         f"{base['epoch_s'] / r['epoch_s']:.2f}x"])
    print(table(["link Gb/s", "configuration", "epoch s", "compute s", "codec s", "comm wait s",
                 "comm share of sync fp32", "speed-up vs sync fp32"], rows))
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        bws = [b for b in a.bandwidths if b != "none"]
        for name, _ in SWEEP_CONFIGS:
            ys = [next(r["epoch_s"] for r in results if r["bandwidth"] == b and r["config"] == name) for b in bws]
            ax.plot([float(b) for b in bws], ys, marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("emulated link bandwidth (Gb/s, %s us latency)" % a.latency_us)
        ax.set_ylabel("epoch time (s)")
        ax.set_title(f"SAGE 3x256, default graph, {a.ranks[0]} ranks (emulated link)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.plot, dpi=110)
    return results


def overlap(e, a):
    """Sync epochs with and without overlap (--no-overlap), per link bandwidth and codec, the two
    interleaved --repeats times so that load changes hit both alike (docs/training.md "Overlap")."""
    rows, results = [], []
    for bw in a.bandwidths:
        for codec in a.codecs:
            runs = {"overlap": [], "no overlap": []}
            for rep_i in range(a.repeats):
                for label, extra in (("overlap", []), ("no overlap", ["--no-overlap"])):
                    args = ["--model", a.models[0], "--layers", "3", "--hidden", "256", "--epochs",
                            str(a.epochs), "--eval-every", str(a.epochs), "--codec", codec] + extra
                    if bw != "none":
                        args += ["--emulate-link", f"{bw},{a.latency_us}"]
                    tag = f"overlap-{bw}-{codec}-{label.replace(' ', '_')}-{rep_i}"
                    ep, _ = e.train("default", a.ranks[0], args, tag)
                    st = epoch_stats(ep, 1)
                    st["overlap_s"] = statistics.mean(x["overlap_s"] for x in ep[1:])
                    runs[label].append(st)
            med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in runs.items()}
            results.append(dict(bandwidth=bw, codec=codec, runs=runs, median=med))
            for label in ("no overlap", "overlap"):
                m = med[label]
                rows.append([bw, codec, label, f"{m['epoch_s']:.3f}", f"{m['compute_s']:.3f}",
                             f"{m['overlap_s']:.3f}", f"{m['comm_s']:.3f}", f"{m['codec_s']:.3f}",
                             " ".join(f"{r['epoch_s']:.2f}" for r in runs[label]),
                             f"{med['no overlap']['epoch_s'] / m['epoch_s']:.2f}x"])
    print(table([f"link Gb/s", "codec", f"{a.models[0]} 3 x 256, {a.ranks[0]} ranks", "epoch s (median)",
                 "compute s", "of it beside the exchange s", "comm wait s", "codec s", "epoch s of each run",
                 "speed-up"], rows))
    return results


def curves(e, a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    configs = [("sync fp32", []), ("sync q1", ["--codec", "q1"]),
               ("pipelined q1, bound 5", ["--codec", "q1", "--exchange", "pipelined", "--sync-every", "5"]),
               ("pipelined q1", ["--codec", "q1", "--exchange", "pipelined"])]
    fig, axes = plt.subplots(1, len(a.datasets), figsize=(5 * len(a.datasets), 4), squeeze=False)
    results = []
    for ax, ds in zip(axes[0], a.datasets):
        for name, cfg in configs:
            ep, _ = e.train(ds, a.ranks[0], without(PROTOCOLS["planetoid"][a.models[0]], "--epochs",
                                                    "--patience", "--select-by") + cfg +
                            ["--epochs", str(a.epochs), "--seed", "1"], f"curve-{ds}-{name.replace(' ', '_').replace(',', '')}")
            ys = [x["test_acc"] for x in ep]
            results.append(dict(dataset=ds, config=name, test_acc=ys))
            ax.plot(range(len(ys)), ys, label=name)
        ax.set_title(f"{ds}: {a.models[0].upper()}, {a.ranks[0]} ranks")
        ax.set_xlabel("epoch")
        ax.set_ylabel("test accuracy")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(a.plot, dpi=110)
    print(f"wrote {a.plot}")
    return results


def compare(e, a):
    if not a.baseline:
        sys.exit("bench_suite: compare needs --baseline BUILD_DIR (the build to compare against)")
    # The baseline generates and partitions with its own tools, in its own folder: an older
    # build may not read this build's formats.
    base = Env(a, a.baseline, work=os.path.join(a.work, "baseline"), partition_format=None)
    configs = [c for c in SWEEP_CONFIGS if c[0] in a.configs]
    if len(configs) != len(a.configs):
        sys.exit(f"bench_suite: --configs must name entries of {[c[0] for c in SWEEP_CONFIGS]}")
    results = []
    for model in a.models:
        for ranks in a.ranks:
            rows = []
            for name, cfg in configs:
                args = ["--model", model, "--layers", "3", "--hidden", "256", "--epochs",
                        str(a.epochs), "--eval-every", str(a.epochs)] + cfg
                times = {"baseline": [], "this build": []}
                tag = f"{model}-{ranks}-" + name.replace(" ", "_").replace(",", "")
                for rep_i in range(a.repeats):
                    # Interleaved, so that load changes on a shared machine hit both builds alike.
                    for label, env in (("baseline", base), ("this build", e)):
                        metrics = os.path.join(e.work, f"cmp-{tag}-{label.replace(' ', '_')}-{rep_i}.jsonl")
                        env.run(["halognn-train", "--partition", env.partition("default", ranks),
                                 "--quiet", "--metrics", metrics] + args, ranks=ranks)
                        ep = [json.loads(l) for l in open(metrics)][:-1]
                        times[label].append(epoch_stats(ep, 2)["epoch_s"])
                b, t = statistics.median(times["baseline"]), statistics.median(times["this build"])
                results.append(dict(model=model, ranks=ranks, config=name, baseline=times["baseline"],
                                    this_build=times["this build"]))
                rows.append([name, f"{b:.3f}", f"{t:.3f}", f"{t / b:.3f}",
                             " ".join(f"{x:.2f}" for x in times["baseline"]),
                             " ".join(f"{x:.2f}" for x in times["this build"])])
            print(table([f"{model} 3 x 256, default graph, {ranks} ranks", "baseline epoch s (median)",
                         "this build epoch s (median)", "this / baseline", "baseline runs",
                         "this build runs"], rows), flush=True)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("experiment", choices=["accuracy", "scaling", "codecs", "sweep", "overlap", "curves",
                                          "compare"])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--models", nargs="+", default=["gcn"])
    p.add_argument("--ranks", nargs="+", type=int, default=[1])
    p.add_argument("--codecs", nargs="+", default=["fp32"])
    p.add_argument("--modes", nargs="+", default=["sync"], help="sync | pipelined[:BOUND]")
    p.add_argument("--seeds", type=int, default=5, help="accuracy: runs per configuration")
    p.add_argument("--first-seed", type=int, default=1,
                   help="accuracy: the first seed (seeds F .. F + --seeds - 1)")
    p.add_argument("--jobs", type=int, default=1, help="accuracy: runs at a time")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="accuracy: halognn-train --device")
    p.add_argument("--datasets-dir", default=SHARED,
                   help="the source datasets (default: ../shared/datasets beside the checkout)")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--bandwidths", nargs="+", default=["0.1", "1", "10", "100", "none"])
    p.add_argument("--latency-us", default="5")
    p.add_argument("--baseline", default="", help="compare: the other build directory")
    p.add_argument("--configs", nargs="+", default=["sync fp32", "pipelined q1"],
                   help="compare: names from the sweep's configurations")
    p.add_argument("--repeats", type=int, default=None,
                   help="compare, overlap: runs per build or mode and configuration (default 3); "
                        "scaling: runs per model and rank count, the median run reported "
                        "(default 1)")
    p.add_argument("--plot", default="")
    p.add_argument("--json", default="")
    p.add_argument("--reuse", action="store_true",
                   help="tabulate existing per-run metrics files in --work instead of re-running them")
    a = p.parse_args()
    if a.experiment != "accuracy" and (a.jobs != 1 or a.device != "cpu"):
        p.error("--jobs and --device apply to the accuracy experiment only")
    if a.jobs < 1:
        p.error("--jobs must be at least 1")
    if a.experiment != "accuracy" and a.first_seed != 1:
        p.error("--first-seed applies to the accuracy experiment only")
    if a.first_seed < 1 or a.seeds < 1:
        p.error("--first-seed and --seeds must be at least 1")
    if a.repeats is not None:
        if a.experiment not in ("compare", "overlap", "scaling"):
            p.error("--repeats applies to the compare, overlap and scaling experiments only")
        if a.repeats < 1:
            p.error("--repeats must be at least 1")
    elif a.experiment in ("compare", "overlap"):
        a.repeats = 3
    run_experiment(globals()[a.experiment], a)


def run_experiment(experiment, a):
    """Runs one experiment, prints its wall time and command, and writes its results to --json."""
    t0 = time.time()
    res = experiment(Env(a), a)
    print(f"\n({a.experiment}: {time.time() - t0:.0f} s; command: {' '.join(sys.argv)})")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump(res, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
