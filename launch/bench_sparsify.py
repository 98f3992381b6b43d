#!/usr/bin/env python3
"""Sparsified input features (docs/partitioning.md "Sparsified features") against dense ones.

Modes:
  startup   per dataset: partition dense and with --sparsify-features K, train a few epochs on P
            ranks; a table of the partition's bytes on disk, each rank's peak resident memory
            (/usr/bin/time %M around every rank), the start-up time (launch to the start of
            epoch 0: the first epoch line's time stamp minus that epoch's own time, evaluation
            excluded) and the feature bytes the run reports (metrics "feature_bytes").
  accuracy  per dataset, model and K (and dense): test accuracy over seeds with the published
            protocol (bench_suite.PROTOCOLS), 1 rank (training is exact across rank counts), plus
            the cosine similarity of the decoded input features to the original ones (mean over
            nodes), computed here with numpy from the same definition (core/data/feature_sparsify.hpp).
Run with /usr/bin/python3; needs the tools in BUILD/bin and converted datasets (halognn-data
convert) in --data.
"""
import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_suite  # noqa: E402  (PROTOCOLS, DATASETS)


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if p.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + p.stdout[-3000:])
    return p.stdout


def partition(args, data, k, parts):
    out = os.path.join(args.work, "%s.p%d.k%d" % (os.path.basename(data), parts, k))
    if not os.path.exists(os.path.join(out, "manifest.json")):
        cmd = [os.path.join(args.build, "bin", "halognn-partition"), "--data", data, "--parts",
               str(parts), "--out", out]
        if k:
            cmd += ["--sparsify-features", str(k)]
        run(cmd)
    return out


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def mib(b):
    return b / 1048576.0


def startup(args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("| dataset | features | partition on disk | peak RSS per rank (MiB) | start-up (s) | "
          "feature bytes in memory, all ranks | sent once | epoch (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for data in args.data:
        for k in ([] if args.skip_dense else [0]) + args.k:
            part = partition(args, data, k, args.ranks)
            metrics = os.path.join(args.work, "startup.jsonl")
            if os.path.exists(metrics):
                os.remove(metrics)
            cmd = ["mpirun", "-np", str(args.ranks), "--oversubscribe", "/usr/bin/time", "-f",
                   "rank_rss_kb %M", os.path.join(args.build, "bin", "halognn-train"),
                   "--partition", part, "--model", "gcn", "--hidden", "64", "--epochs",
                   str(args.epochs), "--metrics", metrics]
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=env)
            first = None
            lines = []
            for line in p.stdout:
                lines.append(line)
                if first is None and line.startswith("epoch"):
                    first = time.monotonic() - t0
            if p.wait() != 0:
                sys.exit("failed: " + " ".join(cmd) + "\n" + "".join(lines[-30:]))
            rss = [int(m.group(1)) / 1024.0 for m in
                   (re.match(r"rank_rss_kb (\d+)", l) for l in lines) if m]
            recs = [json.loads(l) for l in open(metrics)]
            ep0 = recs[0]["epoch_s"]
            fin = recs[-1]
            fb = fin["feature_bytes"]
            epoch_s = statistics.median(r["epoch_s"] for r in recs if "epoch_s" in r)
            print("| %s | %s | %.1f MiB | %s | %.1f | %.1f MiB of %.1f dense (%s) | %.1f MiB | %.2f |" % (
                os.path.basename(data), "k=%d" % k if k else "dense fp32", mib(dir_bytes(part)),
                " / ".join("%.0f" % r for r in sorted(rss)), first - ep0, mib(fb["memory"]),
                mib(fb["memory_dense"]), fin["feature_form"], mib(fb["sent"]), epoch_s), flush=True)


def sparsify_numpy(x, k):
    """Decodes the sparsified form of x (rows x cols) as core/data/feature_sparsify.cpp defines it
    (every node in the sample)."""
    import numpy as np
    n, cols = x.shape
    out = np.zeros_like(x)
    for c0 in range(0, cols, 256):
        w = min(256, cols - c0)
        kc = min(k, w // 2)
        if kc == 0:
            continue
        chunk = x[:, c0:c0 + w]
        # value descending, column ascending: a stable sort of -value
        order = np.argsort(-chunk, axis=1, kind="stable")
        large = order[:, :kc]
        rest = order[:, kc:]
        rest_vals = np.take_along_axis(chunk, rest, axis=1)
        # the rest by value ascending, column ascending: sort by column, then stably by value
        by_col = np.argsort(rest, axis=1, kind="stable")
        rest_c = np.take_along_axis(rest, by_col, axis=1)
        rest_v = np.take_along_axis(rest_vals, by_col, axis=1)
        sub = np.argsort(rest_v, axis=1, kind="stable")
        small = np.take_along_axis(rest_c, sub[:, :kc], axis=1)
        lv = np.take_along_axis(chunk, large, axis=1).astype(np.float64).mean(axis=0)
        sv = np.take_along_axis(chunk, small, axis=1).astype(np.float64).mean(axis=0)
        rows = np.arange(n)[:, None]
        out[rows, c0 + large] = lv.astype(np.float32)[None, :]
        out[rows, c0 + small] = sv.astype(np.float32)[None, :]
    return out


def cosine(a, b):
    import numpy as np
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    ok = (na > 0) & (nb > 0)
    return float(((a * b).sum(axis=1)[ok] / (na[ok] * nb[ok])).mean())


def accuracy(args):
    import numpy as np
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("| dataset | model | features | ratio | input cosine | test accuracy (mean ± sd over %d seeds, "
          "then each seed's) |" % len(args.seeds))
    print("|---|---|---|---|---|---|")
    for data in args.data:
        name = os.path.basename(data)
        protocol = bench_suite.DATASETS[name]["protocol"]
        x = np.load(os.path.join(data, "features.npy"))
        cos = {0: 1.0}
        for k in args.k:
            cos[k] = cosine(x.astype(np.float64), sparsify_numpy(x, k).astype(np.float64))
        for model in args.models:
            for k in ([] if args.skip_dense else [0]) + args.k:
                part = partition(args, data, k, 1)

                def one(seed):
                    metrics = os.path.join(args.work, "acc-%s-%s-k%d-%d.jsonl" % (name, model, k, seed))
                    if os.path.exists(metrics):
                        os.remove(metrics)
                    run([os.path.join(args.build, "bin", "halognn-train"), "--partition", part,
                         "--quiet", "--seed", str(seed), "--metrics", metrics, "--device", args.device] +
                        bench_suite.PROTOCOLS[protocol][model] +
                        bench_suite.PROTOCOLS[protocol].get("_all", []), env=env)
                    return 100 * [json.loads(l) for l in open(metrics)][-1]["final_test_acc"]

                with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
                    accs = list(pool.map(one, args.seeds))
                ratio = "1" if not k else "%.1f" % json.load(
                    open(os.path.join(part, "manifest.json")))["features"]["ratio"]
                print("| %s | %s | %s | %s | %.4f | %.2f ± %.2f (%s) |" % (
                    name, model, "k=%d" % k if k else "dense", ratio, cos[k],
                    statistics.mean(accs), statistics.stdev(accs) if len(accs) > 1 else 0.0,
                    ", ".join("%.2f" % a for a in accs)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["startup", "accuracy"])
    ap.add_argument("--data", nargs="+", required=True, help="converted dataset directories")
    ap.add_argument("--build", default=os.path.join(bench_suite.ROOT, "build"))
    ap.add_argument("--work", required=True, help="scratch directory for partitions and metrics")
    ap.add_argument("--k", type=int, nargs="+", default=[16])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--skip-dense", action="store_true",
                    help="only the sparsified runs (startup: when the dense one does not fit; "
                         "accuracy: when the dense rows are measured already)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank")
    ap.add_argument("--models", nargs="+", default=["gcn", "sage"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--jobs", type=int, default=1, help="accuracy: seeds trained at a time")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="accuracy: halognn-train --device")
    args = ap.parse_args()
    if args.mode != "accuracy" and (args.jobs != 1 or args.device != "cpu"):
        ap.error("--jobs and --device apply to the accuracy mode only")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    for data in args.data:  # the benchmark compares against fp32: it needs the dense features
        if "sparsified_features" in json.load(open(os.path.join(data, "manifest.json"))):
            sys.exit("bench_sparsify.py: %s holds sparsified features (halognn-data sparsify); "
                     "give the dense dataset" % data)
    os.makedirs(args.work, exist_ok=True)
    (startup if args.mode == "startup" else accuracy)(args)


if __name__ == "__main__":
    main()
