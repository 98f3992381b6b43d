#!/usr/bin/python3
"""halognn halo-reduction benchmarks: semantic groups and selective refresh against the plain
exchange, on the real datasets (docs/benchmarks.md, "Semantic groups" and "Selective refresh").

usage: bench_halo.py EXPERIMENT [--build BUILD_DIR] [--work DIR] [--datasets ...] [--models ...]
  semantic  the SC-GNN Table 1 protocol: halo MB per epoch and epoch time (without and with an
            emulated --link-gbps link) at every --ranks, accuracy (mean over --seeds) at every
            --acc-ranks, for fp32, q1, semantic, semantic + q1, semantic + drop-o2o and pipelined
            semantic + q1; the elbow plot and the group-size distribution (PNG, --plot PREFIX)
  refresh   accuracy against halo bytes of the refresh policy for every --bounds x --fractions x
            {fp32, q1}, beside sync fp32, sync q1 and pipelined q1 (table and PNG, --plot PREFIX)
--protocol fixed (default) trains every run --epochs with one set of settings; --protocol published
trains each dataset with its published protocol (early stopping where published).
Run with /usr/bin/python3 (Debian's numpy/matplotlib). Needs the tools built in BUILD_DIR/bin.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_suite  # noqa: E402  (Env, table, run_experiment)


def finished(metrics):
    """Whether a metrics file ends with a run's final line (a killed run's file does not)."""
    if not os.path.exists(metrics):
        return False
    lines = open(metrics).read().splitlines()
    return bool(lines) and "test_acc_at_best_val" in json.loads(lines[-1])


def run(e, part, ranks, args, tag, threads=1):
    """One training run; its per-epoch lines and final line (reused when --reuse and present)."""
    metrics = os.path.join(e.work, f"h-{tag}.jsonl")
    if not (e.reuse and finished(metrics)):
        e.run(["halognn-train", "--partition", part, "--quiet", "--metrics", metrics] + args,
              ranks=ranks, threads=threads)
    lines = [json.loads(l) for l in open(metrics)]
    return lines[:-1], lines[-1]


# --protocol fixed: Kipf & Welling's GCN settings (L2 on every layer), the same for SAGE;
# Velickovic et al.'s GAT sizes; fixed --epochs, no early stopping: every exchange configuration
# trains the same epochs. --protocol published: each dataset's published protocol
# (bench_suite.PROTOCOLS: Kipf & Welling for Planetoid, Shchur et al.'s settings with early
# stopping on the validation loss for Amazon and Coauthor), which Amazon-Computers needs to converge.
MODEL_ARGS = {
    "gcn": ["--model", "gcn", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr", "0.01",
            "--weight-decay", "5e-4"],
    "sage": ["--model", "sage", "--layers", "2", "--hidden", "16", "--dropout", "0.5", "--lr", "0.01",
             "--weight-decay", "5e-4"],
    "gat": ["--model", "gat", "--layers", "2", "--hidden", "8", "--heads", "8", "--dropout", "0.6",
            "--lr", "0.005", "--weight-decay", "5e-4"],
}


def model_args(a, ds, model, epochs=None):
    """The model and training options of one run; `epochs` fixes the epoch count (a short run
    for bytes or time: no early stopping)."""
    if a.protocol == "published":
        args = bench_suite.without(bench_suite.train_args(ds, model, 1), "--seed")
    else:
        norm = ["--row-normalize"] if ds in ("cora", "citeseer", "pubmed") else []
        args = MODEL_ARGS[model] + norm + ["--epochs", str(a.epochs)]
    if epochs is not None:
        args = bench_suite.without(args, "--epochs", "--patience", "--select-by") + ["--epochs", str(epochs)]
    return args


def per_epoch_mb(epochs):
    """Training halo bytes per epoch (layers >= 1; layer-0 features cross once, at start-up; the
    gradient all-reduce is not halo traffic)."""
    return statistics.mean(x["traffic"]["total"]["total"] for x in epochs) / 1e6


def median_epoch_s(epochs, skip=2):
    return statistics.median(x["epoch_s"] for x in epochs[skip:])


def mean_sd(xs):
    return statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0


SEMANTIC_CONFIGS = [
    ("fp32", "sem", []),
    ("q1", "sem", ["--codec", "q1"]),
    ("semantic", "sem", ["--halo-rows", "semantic"]),
    ("semantic + q1", "sem", ["--halo-rows", "semantic", "--codec", "q1"]),
    ("semantic + drop-o2o", "drop", ["--halo-rows", "semantic"]),
    ("pipelined semantic + q1", "sem", ["--halo-rows", "semantic", "--codec", "q1", "--exchange", "pipelined"]),
]


def semantic(e, a):
    rows, results = [], []
    for ds in a.datasets:
        for parts in a.ranks:
            parts_dir = {"sem": e.partition(ds, parts, extra=["--groups", "semantic"], suffix="sem"),
                         "drop": e.partition(ds, parts, extra=["--groups", "semantic", "--drop-o2o"],
                                             suffix="semdrop")}
            report = json.load(open(os.path.join(parts_dir["sem"], "manifest.json")))["groups"]
            for model in a.models:
                fp32_mb = None
                for name, which, cfg in SEMANTIC_CONFIGS:
                    tag = f"sem-{ds}-{parts}-{model}-{name.replace(' ', '').replace('+', '_')}"
                    r = dict(dataset=ds, parts=parts, model=model, config=name)
                    if parts in a.acc_ranks:
                        accs = []
                        for s in range(a.seeds):
                            _, f = run(e, parts_dir[which], parts,
                                       model_args(a, ds, model) + cfg + ["--seed", str(s + 1)], f"{tag}-{s}")
                            accs.append(f["test_acc_at_best_val"])
                        r["test"] = accs
                    # Bytes and epoch time without and with the emulated link: short runs of the
                    # same --link-epochs for every configuration and part count.
                    short = model_args(a, ds, model, a.link_epochs) + cfg + [
                        "--seed", "1", "--eval-every", str(a.link_epochs)]
                    ep, _ = run(e, parts_dir[which], parts, short, f"{tag}-time")
                    r.update(mb=per_epoch_mb(ep), epoch_s=median_epoch_s(ep))
                    ep, _ = run(e, parts_dir[which], parts,
                                short + ["--emulate-link", f"{a.link_gbps},{a.latency_us}"], f"{tag}-link")
                    r["epoch_s_link"] = median_epoch_s(ep)
                    if name == "fp32":
                        fp32_mb = r["mb"]
                    results.append(r)
                    acc = (f"{100 * mean_sd(r['test'])[0]:.1f} ± {100 * mean_sd(r['test'])[1]:.1f}"
                           if "test" in r else "–")
                    rows.append([ds, parts, model, name, f"{r['mb']:.3f}", f"{fp32_mb / r['mb']:.1f}x",
                                 acc, f"{r['epoch_s']:.3f}",
                                 f"{r['epoch_s_link']:.3f}"])
                    print(rows[-1], file=sys.stderr, flush=True)
            results.append(dict(dataset=ds, parts=parts, groups_report=report))
    print(bench_suite.table(
        ["dataset", "parts", "model", "exchange", "halo MB / epoch", "fp32 / this",
         f"test acc % ({a.seeds} seeds)", "epoch s", f"epoch s, {a.link_gbps} Gb/s link"], rows))
    group_stats(results)
    if a.plot:
        plot_groups(results, a.plot)
    return results


def group_stats(results):
    """Per dataset and part count: rows plain vs semantic, error, edge classes, grouping time."""
    rows = []
    for r in results:
        if "groups_report" not in r:
            continue
        g = r["groups_report"]
        links = g["links"]
        plain = sum(l["rows_plain"] for l in links)
        sem = sum(l["rows_semantic"] for l in links)
        edges = sum(l["edges"] for l in links)
        kinds = {k: sum(l["edges_by_kind"][k] for l in links) for k in links[0]["edges_by_kind"]}
        err = sum(l["error"] * l["edges"] for l in links) / max(edges, 1)
        rows.append([r["dataset"], r["parts"], plain, sem, f"{plain / max(sem, 1):.1f}x",
                     " / ".join(f"{100 * v / max(edges, 1):.0f}" for v in kinds.values()),
                     f"{err:.3f}", f"{g['seconds']:.2f}"])
    if rows:
        kinds = "/".join(results[-1]["groups_report"]["links"][0]["edges_by_kind"].keys())
        print()
        print(bench_suite.table(["dataset", "parts", "boundary rows (plain)", "groups", "plain / groups",
                                 f"cross edges % {kinds}", "error (edge-weighted)", "grouping s"], rows))


def plot_groups(results, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    reports = {}
    for r in results:
        if "groups_report" in r:
            reports.setdefault(r["dataset"], r)  # the first (smallest) part count of each dataset
    fig, axes = plt.subplots(1, len(reports), figsize=(4.2 * len(reports), 3.6), squeeze=False)
    for ax, (ds, r) in zip(axes[0], reports.items()):
        # The three links with the most U nodes: inertia (normalised) against the M2M group count.
        links = sorted(r["groups_report"]["links"], key=lambda l: -l["u_nodes"])[:3]
        for l in links:
            c = l["inertia_curve"]
            if len(c) < 2:
                continue
            ks, ys = [p[0] for p in c], [p[1] for p in c]
            ax.plot(ks, [y / max(ys[0], 1e-12) for y in ys], marker=".", label=f"{l['from']}→{l['to']}")
            if l.get("m2m_groups"):  # the count chosen at the elbow
                ax.axvline(l["m2m_groups"], color=ax.lines[-1].get_color(), alpha=0.4, linestyle="--")
        ax.set_title(f"{ds}, {r['parts']} parts")
        ax.set_xlabel("M2M groups")
        ax.set_ylabel("inertia / inertia at fewest groups")
        ax.set_xscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(prefix + "_elbow.png", dpi=100)
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(len(reports), 1)
    for i, (ds, r) in enumerate(reports.items()):
        bins = []
        for l in r["groups_report"]["links"]:
            h = l.get("group_sizes_log2", [])
            bins += [0] * (len(h) - len(bins))
            for b, c in enumerate(h):
                bins[b] += c
        total = max(sum(bins), 1)
        ax.bar([b + i * width for b in range(len(bins))], [c / total for c in bins], width, label=ds)
    ax.set_xlabel("group size (members), bin b = 2^b .. 2^(b+1) - 1")
    ax.set_ylabel("share of groups")
    ax.set_title("semantic group sizes, all links")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(prefix + "_group_sizes.png", dpi=100)
    print(f"wrote {prefix}_elbow.png, {prefix}_group_sizes.png")


def refresh_configs(a):
    cfgs = [("sync fp32", []), ("sync q1", ["--codec", "q1"]),
            ("pipelined q1", ["--codec", "q1", "--exchange", "pipelined"])]
    for codec in ("fp32", "q1"):
        for s in a.bounds:
            for r in a.fractions:
                cfgs.append((f"refresh s={s} r={r} {codec}",
                             ["--codec", codec, "--exchange", "refresh", "--staleness-bound", str(s),
                              "--refresh-fraction", str(r)]))
    return cfgs


def refresh(e, a):
    rows, results = [], []
    for ds in a.datasets:
        for model in a.models:
            parts = a.ranks[0]
            part = e.partition(ds, parts)
            base_mb = base_acc = None
            for name, cfg in refresh_configs(a):
                accs, mb = [], None
                for s in range(a.seeds):
                    ep, f = run(e, part, parts, model_args(a, ds, model) + cfg + ["--seed", str(s + 1)],
                                f"ref-{ds}-{parts}-{model}-{name.replace(' ', '_').replace('=', '')}-{s}")
                    accs.append(f["test_acc_at_best_val"])
                    mb = mb or per_epoch_mb(ep)
                m, sd = mean_sd(accs)
                if name == "sync fp32":
                    base_mb, base_acc = mb, m
                results.append(dict(dataset=ds, model=model, parts=parts, config=name, mb=mb, test=accs))
                rows.append([ds, model, name, f"{mb:.3f}", f"{base_mb / mb:.1f}x", f"{100 * m:.1f} ± {100 * sd:.1f}",
                             f"{100 * (m - base_acc):+.1f}"])
                print(rows[-1], file=sys.stderr, flush=True)
    print(bench_suite.table(["dataset", "model", "exchange", "halo MB / epoch", "sync fp32 / this",
                             f"test acc % ({a.seeds} seeds)", "vs sync fp32 (points)"], rows))
    if a.plot:
        plot_refresh(results, a.plot)
    return results


def frontier(points):
    """The best mean accuracy reachable at or below each byte count: (bytes, accuracy) steps."""
    fx, fy, best = [], [], -1.0
    for mb, acc in sorted(points):
        if acc > best:
            best = acc
            fx.append(mb)
            fy.append(acc)
    return fx, fy


def plot_refresh(results, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    datasets = sorted({r["dataset"] for r in results})
    models = sorted({r["model"] for r in results})
    fig, axes = plt.subplots(len(datasets), len(models), figsize=(5.2 * len(models), 4 * len(datasets)),
                             squeeze=False)
    # Each technique alone and combined: its own frontier (the exact sync fp32 run is the common
    # starting point of every line).
    techniques = (("quantized (sync, pipelined)", lambda c: c.startswith(("sync", "pipelined")), "tab:red"),
                  ("refresh fp32", lambda c: c == "sync fp32" or (c.startswith("refresh") and c.endswith("fp32")),
                   "tab:blue"),
                  ("refresh + q1", lambda c: c == "sync fp32" or (c.startswith("refresh") and c.endswith("q1")),
                   "tab:purple"))
    for row, ds in enumerate(datasets):
        for col, model in enumerate(models):
            ax = axes[row][col]
            pts = [r for r in results if r["dataset"] == ds and r["model"] == model]
            if not pts:
                ax.set_visible(False)
                continue
            acc = {r["config"]: 100 * statistics.mean(r["test"]) for r in pts}
            for family, marker in (("sync", "s"), ("pipelined", "^"), ("refresh", "o")):
                for codec, color in (("fp32", "tab:blue"), ("q1", "tab:red")):
                    sel = [r for r in pts if r["config"].startswith(family) and r["config"].endswith(codec)]
                    if sel:
                        ax.scatter([r["mb"] for r in sel], [acc[r["config"]] for r in sel], marker=marker,
                                   color=color, label=f"{family} {codec}", alpha=0.7)
            for name, member, color in techniques:
                fx, fy = frontier([(r["mb"], acc[r["config"]]) for r in pts if member(r["config"])])
                ax.step(fx, fy, where="post", color=color, alpha=0.6, label=f"frontier: {name}")
            fx, fy = frontier([(r["mb"], acc[r["config"]]) for r in pts])
            ax.step(fx, fy, where="post", color="gray", linewidth=3, alpha=0.35, label="frontier: all")
            ax.set_xscale("log")
            ax.set_xlabel("halo MB per epoch")
            ax.set_ylabel(f"test accuracy % (mean of {len(pts[0]['test'])} seeds)")
            ax.set_title(f"{ds}, {model.upper()}, {pts[0]['parts']} ranks")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(prefix + "_frontier.png", dpi=80)
    print(f"wrote {prefix}_frontier.png")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("experiment", choices=["semantic", "refresh"])
    p.add_argument("--build", default=os.path.join(bench_suite.ROOT, "build"))
    p.add_argument("--work", default=os.path.join(bench_suite.ROOT, "build", "bench"))
    p.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    p.add_argument("--models", nargs="+", default=["gcn"])
    p.add_argument("--ranks", nargs="+", type=int, default=[4], help="part counts (refresh: the first)")
    p.add_argument("--acc-ranks", nargs="+", type=int, default=[4],
                   help="semantic: part counts with accuracy (every part count: bytes and time)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=200, help="--protocol fixed: epochs of every run")
    p.add_argument("--protocol", choices=["fixed", "published"], default="fixed",
                   help="fixed: the same settings and --epochs everywhere; published: each "
                        "dataset's published protocol (bench_suite.PROTOCOLS, early stopping)")
    p.add_argument("--link-gbps", default="1")
    p.add_argument("--latency-us", default="5")
    p.add_argument("--link-epochs", type=int, default=12,
                   help="semantic: epochs of the runs that measure bytes and time")
    p.add_argument("--bounds", nargs="+", type=int, default=[2, 4, 8])
    p.add_argument("--fractions", nargs="+", default=["0", "0.05", "0.2"])
    p.add_argument("--plot", default="")
    p.add_argument("--json", default="")
    p.add_argument("--reuse", action="store_true",
                   help="tabulate existing per-run metrics files in --work instead of re-running them")
    a = p.parse_args()
    bench_suite.run_experiment(globals()[a.experiment], a)


if __name__ == "__main__":
    main()
