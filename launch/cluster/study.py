#!/usr/bin/python3
"""halognn scaling study across hosts: each cell of a grid ranks x hosts x link bandwidth x
exchange policy x codec is trained twice, once for real on the namespace cluster
(launch/cluster/netns_cluster.sh: one rank per host or several, Open MPI over TCP through links
shaped to the bandwidth) and once on shared memory under the in-process emulated link
(halognn-train --emulate-link GBPS,US), whose epoch time is the prediction the real run checks.

usage:
  study.py run [--hosts 2 4] [--ranks 2 4] [--bandwidths 10 1 0.1] \\
               [--configs sync/fp32 sync/q1 pipelined/q1] [--epochs 4] [--skip 2] [--out FILE]
  study.py report [--in FILE] [--plots PREFIX]      markdown tables on stdout, PNG plots

`run` appends one JSON line per training run to --out (rows already there are not run again, so
an interrupted study resumes where it stopped) and one line per link probe (bulk TCP throughput
and round-trip time of the shaped link, launch/cluster/link_probe.py). Needs root (namespaces).
A rank count must be a multiple of the host count; cells where it is not are skipped. Epoch times
are means over epochs SKIP.. (epoch 0 is a warm-up and synchronous in every mode; epoch 1 only
fills the pipeline). Run with /usr/bin/python3 (Debian's matplotlib for the plots).
"""
import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "launch"))
import bench_suite  # noqa: E402  (datasets, partitions and tables as the benchmark suite makes them)

CLUSTER = os.path.join(HERE, "netns_cluster.sh")
PROBE = os.path.join(HERE, "link_probe.py")

# Exchange policies: a name, the halognn-train options that select it and, where the policy needs
# a partition of its own, the halognn-partition options and the name suffix of that partition. A new
# policy is one more entry here; a study cell is POLICY/CODEC (codec options are added separately).
POLICIES = {
    "sync": dict(train=["--exchange", "sync"]),
    "pipelined": dict(train=["--exchange", "pipelined"]),
    "pipelined-se5": dict(train=["--exchange", "pipelined", "--sync-every", "5"]),
    # Selective refresh: every row at least every 4 epochs, and the 5% of the others with the
    # largest gradients every epoch (docs/halo_exchange.md "Selective refresh").
    "refresh": dict(train=["--exchange", "refresh", "--staleness-bound", "4", "--refresh-fraction", "0.05"]),
    # One row per semantic group instead of every boundary row (docs/semantic_groups.md).
    "semantic": dict(train=["--halo-rows", "semantic"], partition=["--groups", "semantic"], suffix="sem"),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_config(text):
    policy, _, codec = text.partition("/")
    if policy not in POLICIES or not codec:
        sys.exit(f"study.py: --configs '{text}': POLICY/CODEC with POLICY one of {', '.join(POLICIES)}")
    return policy, codec


def read_rows(path):
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"study.py: {path}:{n}: not a JSON line ({e})")
    return rows


def append_row(path, row):
    """Rewrites the file with the new row, atomically: an interrupted study never leaves half a line."""
    text = open(path).read() if os.path.exists(path) else ""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text + json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Cluster:
    """One namespace cluster, brought up for a host count and torn down on every exit path."""

    def __init__(self, name, hosts, slots):
        self.name, self.hosts = name, hosts
        subprocess.run([CLUSTER, "down", "--name", name], check=True)
        subprocess.run([CLUSTER, "up", "--name", name, "--hosts", str(hosts), "--slots", str(slots)],
                       check=True, stdout=subprocess.DEVNULL)

    def down(self):
        subprocess.run([CLUSTER, "down", "--name", self.name], check=False)

    def shape(self, gbps):
        subprocess.run([CLUSTER, "shape", "--name", self.name, "--rate", str(gbps)], check=True)

    def counters(self):
        out = subprocess.run([CLUSTER, "counters", "--name", self.name], check=True,
                             capture_output=True, text=True).stdout
        tx = rx = 0
        for line in out.splitlines():
            _, t, r = line.split()
            tx, rx = tx + int(t), rx + int(r)
        return tx, rx

    def probe(self, mb):
        server = subprocess.Popen([CLUSTER, "exec", "--name", self.name, "h1", "/usr/bin/python3", PROBE,
                                   "server", "10.77.0.2"])
        try:
            out = subprocess.run([CLUSTER, "exec", "--name", self.name, "h0", "/usr/bin/python3", PROBE,
                                  "client", "10.77.0.2", "--mb", str(mb)],
                                 check=True, capture_output=True, text=True, timeout=600).stdout
        finally:
            server.wait(timeout=60)
        return json.loads(out)


def epoch_stats(metrics_path, skip):
    lines = [json.loads(l) for l in open(metrics_path)]
    epochs, final = lines[:-1], lines[-1]
    if len(epochs) <= skip:
        sys.exit(f"study.py: {metrics_path}: {len(epochs)} epochs, nothing left after skipping {skip}")
    st = bench_suite.epoch_stats(epochs, skip)
    st["epoch_s_each"] = [e["epoch_s"] for e in epochs]
    st["test_acc"] = final["test_acc_at_best_val"]
    st["val_acc"] = final["best_val_acc"]
    st["total_bytes_sent"] = final["total_bytes_sent"]
    return st


def run_grid(a):
    if os.geteuid() != 0:
        sys.exit("study.py: run needs root (it builds hosts from network namespaces)")
    configs = [parse_config(c) for c in a.configs]
    env = bench_suite.Env(argparse.Namespace(build=a.build, work=a.work, reuse=False))
    trainer = os.path.join(env.bin, "halognn-train")
    out = os.path.abspath(a.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    runs_dir = os.path.join(env.work, "study-runs")
    os.makedirs(runs_dir, exist_ok=True)
    rows = read_rows(out)
    model = ["--model", a.model, "--layers", str(a.layers), "--hidden", str(a.hidden)]
    common = model + ["--epochs", str(a.epochs), "--eval-every", str(a.epochs), "--seed", "1"]
    cells = [(h, r) for h in a.hosts for r in a.ranks if r % h == 0]
    if not cells:
        sys.exit("study.py: no cell has a rank count that is a multiple of its host count")
    date = datetime.date.today().isoformat()

    def have(**key):
        return any(all(row.get(k) == v for k, v in key.items()) for row in rows)

    def add(row):
        row.update(date=date, load1=os.getloadavg()[0], model=model, epochs=a.epochs, skip=a.skip)
        append_row(out, row)
        rows.append(row)

    def train(tag, cmd, ranks):
        metrics = os.path.join(runs_dir, tag + ".jsonl")
        # Waiting ranks yield their core in both modes (netns_cluster.sh explains why the namespace
        # cluster needs it), so measurement and prediction run the same MPI.
        run_env = dict(env.env, OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 1) // ranks)),
                       OMPI_MCA_mpi_yield_when_idle="1")
        t0 = time.time()
        r = subprocess.run(cmd + ["--metrics", metrics], env=run_env, capture_output=True, text=True,
                           timeout=a.run_timeout)
        if r.returncode != 0:
            sys.exit(f"study.py: {tag} failed (exit {r.returncode}):\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
        return metrics, time.time() - t0

    def partition(policy, ranks):
        pol = POLICIES[policy]
        return env.partition("default", ranks, extra=pol.get("partition", ()), suffix=pol.get("suffix", ""))

    def emulated(hosts, ranks, gbps, lat_us, policy, codec):
        key = dict(kind="run", mode="emulated", hosts=hosts, ranks=ranks, gbps=gbps, policy=policy,
                   codec=codec, model=model, epochs=a.epochs)
        if have(**key):
            return
        tag = f"emu-h{hosts}-r{ranks}-{gbps}-{policy}-{codec}"
        # Consecutive ranks share a host, as --map-by ppr:N:node places them on the namespace cluster.
        link = f"{gbps},{lat_us:g},{ranks // hosts}"
        cmd = ["mpirun", "-np", str(ranks), "--bind-to", "none", "-x", "OMP_NUM_THREADS", trainer,
               "--partition", partition(policy, ranks), "--quiet",
               "--emulate-link", link, "--codec", codec] + POLICIES[policy]["train"] + common
        metrics, wall = train(tag, cmd, ranks)
        st = epoch_stats(metrics, a.skip)
        add(dict(key, emulate_link=link, latency_us=lat_us, wall_s=wall, metrics=metrics, **st))
        log(f"  emulated  h{hosts} r{ranks} {gbps} Gb/s {policy}/{codec}: epoch {st['epoch_s']:.2f} s")

    stop = {"signal": None}

    def on_signal(sig, _):
        stop["signal"] = sig
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    for hosts in sorted(set(h for h, _ in cells)):
        slots = max(r // hosts for h, r in cells if h == hosts)
        cluster = Cluster(a.name, hosts, slots)
        try:
            for gbps in a.bandwidths:
                cluster.shape(gbps)
                probe_key = dict(kind="probe", hosts=hosts, gbps=gbps)
                if have(**probe_key):
                    lat_us = next(r for r in rows if all(r.get(k) == v for k, v in probe_key.items()))["latency_us"]
                else:
                    # Enough data for about a second at the nominal rate, at least 16 MB.
                    pr = cluster.probe(max(16, int(float(gbps) * 1e9 / 8 / 2**20)))
                    lat_us = round(pr["rtt_us_median"] / 2)
                    add(dict(probe_key, latency_us=lat_us, **pr))
                    log(f"hosts {hosts}, link {gbps} Gb/s: TCP {pr['tcp_gbps']:.3f} Gb/s, RTT {pr['rtt_us_median']:.0f} us")
                for h, ranks in cells:
                    if h != hosts:
                        continue
                    for policy, codec in configs:
                        key = dict(kind="run", mode="namespace", hosts=hosts, ranks=ranks, gbps=gbps,
                                   policy=policy, codec=codec, model=model, epochs=a.epochs)
                        if not have(**key):
                            tag = f"ns-h{hosts}-r{ranks}-{gbps}-{policy}-{codec}"
                            cmd = [CLUSTER, "mpirun", "--name", a.name, "-np", str(ranks), "--map-by",
                                   f"ppr:{ranks // hosts}:node", "--bind-to", "none", "-x", "OMP_NUM_THREADS",
                                   trainer, "--partition", partition(policy, ranks), "--quiet",
                                   "--codec", codec] + POLICIES[policy]["train"] + common
                            tx0, rx0 = cluster.counters()
                            metrics, wall = train(tag, cmd, ranks)
                            tx1, rx1 = cluster.counters()
                            st = epoch_stats(metrics, a.skip)
                            add(dict(key, latency_us=lat_us, wall_s=wall, metrics=metrics,
                                     wire_tx_bytes=tx1 - tx0, wire_rx_bytes=rx1 - rx0, **st))
                            log(f"  namespace h{hosts} r{ranks} {gbps} Gb/s {policy}/{codec}: "
                                f"epoch {st['epoch_s']:.2f} s, {(tx1 - tx0) / 1e6:.0f} MB on the wire")
                        emulated(hosts, ranks, gbps, lat_us, policy, codec)
        except KeyboardInterrupt:
            sys.exit(f"study.py: interrupted{' by signal %d' % stop['signal'] if stop['signal'] else ''}; "
                     f"{out} holds every finished run (run again to resume)")
        finally:
            cluster.down()
    log(f"study.py: {len(rows)} rows in {out}")


# ------------------------------------------------------------------------------------------------
# report

def paired(rows):
    """(real row, emulated row) for every real run, matched on hosts, ranks, bandwidth, policy, codec."""
    cell = lambda r: (r["hosts"], r["ranks"], r["gbps"], r["policy"], r["codec"], json.dumps(r["model"]), r["epochs"])
    emu = {cell(r): r for r in rows if r.get("kind") == "run" and r["mode"] == "emulated"}
    out = []
    for r in rows:
        if r.get("kind") == "run" and r["mode"] == "namespace":
            e = emu.get(cell(r))
            out.append((r, e))
    order = lambda p: (p[0]["hosts"], p[0]["ranks"], -float(p[0]["gbps"]), p[0]["policy"] != "sync", p[0]["policy"], p[0]["codec"])
    return sorted(out, key=order)


def cfg_name(r):
    return f"{r['policy']} {r['codec']}"


def report(a):
    rows = read_rows(a.input)
    if not rows:
        sys.exit(f"study.py: {a.input}: no rows")
    pairs = paired(rows)
    probes = sorted((r for r in rows if r.get("kind") == "probe"), key=lambda r: (r["hosts"], -float(r["gbps"])))
    print("Link probes (launch/cluster/link_probe.py, h0 -> h1, one TCP stream):\n")
    print(bench_suite.table(["hosts", "link Gb/s", "TCP Gb/s", "of nominal", "RTT us (median)", "emulated latency us"],
                            [[p["hosts"], p["gbps"], f"{p['tcp_gbps']:.3f}",
                              f"{100 * p['tcp_gbps'] / float(p['gbps']):.0f}%", f"{p['rtt_us_median']:.0f}",
                              p["latency_us"]] for p in probes]))
    hdr = ["hosts", "ranks", "link Gb/s", "configuration", "measured epoch s", "compute", "codec", "comm wait",
           "emulated epoch s", "compute", "codec", "comm wait", "emulated / measured", "within 15%"]
    body, inside = [], 0
    for r, e in pairs:
        line = [r["hosts"], r["ranks"], r["gbps"], cfg_name(r), f"**{r['epoch_s']:.2f}**", f"{r['compute_s']:.2f}",
                f"{r['codec_s']:.2f}", f"{r['comm_s']:.2f}"]
        if e:
            ratio = e["epoch_s"] / r["epoch_s"]
            ok = abs(ratio - 1) <= 0.15
            inside += ok
            line += [f"**{e['epoch_s']:.2f}**", f"{e['compute_s']:.2f}", f"{e['codec_s']:.2f}", f"{e['comm_s']:.2f}",
                     f"{ratio:.2f}", "yes" if ok else "**no**"]
        else:
            line += ["–"] * 6
        body.append(line)
    print("\nEpoch time, measured on the namespace cluster beside the emulated link's prediction "
          f"(means over epochs {rows[-1]['skip']}..{rows[-1]['epochs'] - 1}):\n")
    print(bench_suite.table(hdr, body))
    print(f"\n{inside} of {len(pairs)} predictions within 15% of the measured epoch time.")
    hdr = ["hosts", "ranks", "link Gb/s", "configuration", "MB sent / epoch (trainer)", "MB on the wire (run)",
           "MB counted (run)", "wire / counted", "test acc % (measured)", "test acc % (emulated)"]
    body = []
    for r, e in pairs:
        body.append([r["hosts"], r["ranks"], r["gbps"], cfg_name(r), f"{r['bytes'] / 1e6:.1f}",
                     f"{r['wire_tx_bytes'] / 1e6:.1f}", f"{r['total_bytes_sent'] / 1e6:.1f}",
                     f"{r['wire_tx_bytes'] / r['total_bytes_sent']:.3f}", f"{100 * r['test_acc']:.2f}",
                     f"{100 * e['test_acc']:.2f}" if e else "–"])
    print("\nBytes and accuracy (wire: all hosts' NIC transmit counters over the whole run; counted: "
          "the trainer's total_bytes_sent over the whole run, features and evaluation included):\n")
    print(bench_suite.table(hdr, body))
    if a.plots:
        plot(pairs, a.plots)


def plot(pairs, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfgs = []
    for r, _ in pairs:
        if cfg_name(r) not in cfgs:
            cfgs.append(cfg_name(r))
    topo = sorted({(r["hosts"], r["ranks"]) for r, _ in pairs})
    bws = sorted({float(r["gbps"]) for r, _ in pairs})
    colors = {c: f"C{i}" for i, c in enumerate(cfgs)}
    get = lambda h, n, b, c: next(((r, e) for r, e in pairs if (r["hosts"], r["ranks"]) == (h, n)
                                   and float(r["gbps"]) == b and cfg_name(r) == c), (None, None))
    written = []

    # 1. Epoch time against bandwidth: measured (solid) and emulated (dashed), one panel per topology.
    fig, axes = plt.subplots(1, len(topo), figsize=(5 * len(topo), 4.2), squeeze=False)
    for ax, (h, n) in zip(axes[0], topo):
        for c in cfgs:
            pts = [(b, *get(h, n, b, c)) for b in bws]
            pts = [(b, r, e) for b, r, e in pts if r]
            ax.plot([b for b, _, _ in pts], [r["epoch_s"] for _, r, _ in pts], "o-", color=colors[c], label=f"{c} (measured)")
            ep = [(b, e) for b, _, e in pts if e]
            ax.plot([b for b, _ in ep], [e["epoch_s"] for _, e in ep], "x--", color=colors[c], label=f"{c} (emulated)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("link bandwidth (Gb/s)")
        ax.set_ylabel("epoch time (s)")
        ax.set_title(f"{h} hosts, {n} ranks")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    written.append(f"{prefix}_bandwidth.png")
    fig.savefig(written[-1], dpi=100)

    # 2. The split (compute / codec / comm wait) against bandwidth: measured (M) and emulated (E)
    #    bars side by side, one panel per topology.
    parts = [("compute_s", "compute", "#4c72b0"), ("codec_s", "codec", "#dd8452"), ("comm_s", "comm wait", "#c44e52")]
    fig, axes = plt.subplots(len(topo), 1, figsize=(max(8, 1.1 * len(bws) * len(cfgs)), 3.6 * len(topo)), squeeze=False)
    for ax, (h, n) in zip(axes[:, 0], topo):
        x, labels = 0, []
        for b in sorted(bws, reverse=True):
            for c in cfgs:
                r, e = get(h, n, b, c)
                for run, tag, alpha in ((r, "M", 1.0), (e, "E", 0.55)):
                    if run:
                        bottom = 0
                        for k, name, col in parts:
                            ax.bar(x, run[k], bottom=bottom, color=col, alpha=alpha, width=0.8,
                                   label=name if x == 0 else None)
                            bottom += run[k]
                    labels.append((x, f"{tag}"))
                    x += 1
                ax.text(x - 1.5, -0.12, f"{b:g} Gb/s\n{c}", transform=ax.get_xaxis_transform(), ha="center",
                        va="top", fontsize=6)
                x += 0.6
        ax.set_xticks([p for p, _ in labels])
        ax.set_xticklabels([t for _, t in labels], fontsize=6)
        ax.set_ylabel("seconds per epoch")
        ax.set_title(f"{h} hosts, {n} ranks: measured (M) and emulated (E) epoch split", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    written.append(f"{prefix}_split.png")
    fig.savefig(written[-1], dpi=100)

    # 3. Against ranks (and hosts): epoch time per topology at each bandwidth.
    fig, axes = plt.subplots(1, len(bws), figsize=(4.5 * len(bws), 4), squeeze=False)
    for ax, b in zip(axes[0], sorted(bws, reverse=True)):
        xs = list(range(len(topo)))
        for c in cfgs:
            m = [get(h, n, b, c) for h, n in topo]
            ax.plot([x for x, (r, _) in zip(xs, m) if r], [r["epoch_s"] for r, _ in m if r], "o-", color=colors[c], label=f"{c}")
            ax.plot([x for x, (_, e) in zip(xs, m) if e], [e["epoch_s"] for _, e in m if e], "x--", color=colors[c])
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{n} ranks\n{h} hosts" for h, n in topo], fontsize=8)
        ax.set_ylabel("epoch time (s)")
        ax.set_title(f"{b:g} Gb/s (solid: measured, dashed: emulated)", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    written.append(f"{prefix}_ranks.png")
    fig.savefig(written[-1], dpi=100)

    # 4. Bytes per epoch and accuracy, per configuration and topology.
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    w = 0.8 / len(cfgs)
    for i, c in enumerate(cfgs):
        xs = [t + i * w for t in range(len(topo))]
        ref = [get(h, n, bws[-1], c)[0] for h, n in topo]
        ax1.bar(xs, [r["bytes"] / 1e6 if r else 0 for r in ref], width=w, color=colors[c], label=c)
        accs = [[100 * r["test_acc"] for b in bws for r in [get(h, n, b, c)[0]] if r] for h, n in topo]
        ax2.bar(xs, [statistics.mean(v) if v else 0 for v in accs], width=w, color=colors[c], label=c,
                yerr=[(max(v) - min(v)) / 2 if v else 0 for v in accs])
    for ax in (ax1, ax2):
        ax.set_xticks([t + 0.4 - w / 2 for t in range(len(topo))])
        ax.set_xticklabels([f"{n} ranks / {h} hosts" for h, n in topo], fontsize=8)
    ax1.set_yscale("log")
    ax1.set_ylabel("MB sent per epoch (all ranks)")
    ax1.set_title("bytes per epoch", fontsize=9)
    ax2.set_ylabel("test accuracy % (mean over bandwidths)")
    ax2.set_ylim(0, 100)
    ax2.set_title("accuracy after the study's epochs", fontsize=9)
    ax1.legend(fontsize=7)
    fig.tight_layout()
    written.append(f"{prefix}_bytes_accuracy.png")
    fig.savefig(written[-1], dpi=100)
    print("\nwrote " + ", ".join(written))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--build", default=os.path.join(ROOT, "build"))
    r.add_argument("--work", default=os.path.join(ROOT, "build", "bench"),
                   help="datasets, partitions and per-run metrics (shared with bench_suite.py)")
    r.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "study.jsonl"))
    r.add_argument("--name", default="hgs", help="namespace cluster name")
    r.add_argument("--hosts", nargs="+", type=int, default=[2, 4])
    r.add_argument("--ranks", nargs="+", type=int, default=[2, 4])
    r.add_argument("--bandwidths", nargs="+", default=["10", "1", "0.1"], help="Gb/s per link")
    r.add_argument("--configs", nargs="+", default=["sync/fp32", "sync/q1", "pipelined/q1"],
                   help="POLICY/CODEC; policies: " + ", ".join(POLICIES))
    r.add_argument("--model", default="sage")
    r.add_argument("--layers", type=int, default=3)
    r.add_argument("--hidden", type=int, default=256)
    r.add_argument("--epochs", type=int, default=4)
    r.add_argument("--skip", type=int, default=2, help="leading epochs left out of the means")
    r.add_argument("--run-timeout", type=int, default=3600, help="seconds before one training run is abandoned")
    q = sub.add_parser("report")
    q.add_argument("--in", dest="input", default=os.path.join(ROOT, "build", "bench", "study.jsonl"))
    q.add_argument("--plots", default="", help="write PREFIX_{bandwidth,split,ranks,bytes_accuracy}.png")
    a = p.parse_args()
    t0 = time.time()
    if a.command == "run":
        for b in a.bandwidths:
            try:
                assert float(b) > 0
            except (ValueError, AssertionError):
                sys.exit(f"study.py: --bandwidths '{b}': a positive number of Gb/s")
        if a.epochs <= a.skip:
            sys.exit(f"study.py: --epochs {a.epochs} must exceed --skip {a.skip}")
        run_grid(a)
    else:
        report(a)
    log(f"({a.command}: {time.time() - t0:.0f} s; command: {' '.join(sys.argv)})")


if __name__ == "__main__":
    main()
