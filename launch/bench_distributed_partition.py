#!/usr/bin/env python3
"""Serial METIS against the distributed partitioner (--method parmetis) on K ranks.

For one dataset and one part count, runs `halognn-partition --method metis` once and
`mpirun -np K halognn-partition --method parmetis` for every K given, each process under
/usr/bin/time, and prints one markdown table: edge cut (and its ratio to METIS'), imbalance,
communication volume, wall time, the slowest rank's time per step, and the peak resident set of
every process (and the largest rank's as a fraction of the serial run's).

  launch/bench_distributed_partition.py --bin build/bin --data data/default --parts 4 --ranks 2 4
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, env=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout, wall


def peak_rss(files):
    """Max resident set (KiB, from /usr/bin/time -f %M) of each process, in rank order."""
    return [int(open(f).read().split()[-1]) for f in files]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin folder")
    ap.add_argument("--data", required=True, help="dataset directory")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--scratch", default=None, help="where partitions go (default: a temp dir)")
    a = ap.parse_args()
    scratch = a.scratch or tempfile.mkdtemp(prefix="halognn-bench-distpart-")
    tool = os.path.join(a.bin, "halognn-partition")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    try:
        out = os.path.join(scratch, "metis")
        tf = os.path.join(scratch, "time.metis")
        stdout, wall = run(["/usr/bin/time", "-f", "%M", "-o", tf, tool, "--data", a.data,
                            "--parts", str(a.parts), "--out", out, "--seed", str(a.seed)], env)
        m = json.load(open(os.path.join(out, "manifest.json")))
        steps = re.search(r"time: (.*)", stdout).group(1)
        rows.append(("metis (1 process)", m, wall, steps, peak_rss([tf])))
        shutil.rmtree(out)
        for k in a.ranks:
            out = os.path.join(scratch, f"parmetis{k}")
            tf = os.path.join(scratch, f"time.parmetis{k}")
            cmd = [a.mpiexec, "-np", str(k), "--oversubscribe", "--bind-to", "none",
                   "-x", "OMP_NUM_THREADS=1", "bash", "-c",
                   f'exec /usr/bin/time -f %M -o {tf}.$OMPI_COMM_WORLD_RANK "$@"', "bash",
                   tool, "--data", a.data, "--parts", str(a.parts), "--out", out,
                   "--seed", str(a.seed), "--method", "parmetis"]
            stdout, wall = run(cmd, env)
            m = json.load(open(os.path.join(out, "manifest.json")))
            steps = re.search(r"time \(slowest rank per step\): (.*?); total", stdout).group(1)
            rows.append((f"parmetis, {k} ranks", m, wall, steps,
                         peak_rss([f"{tf}.{r}" for r in range(k)])))
            shutil.rmtree(out)
    finally:
        if not a.scratch:
            shutil.rmtree(scratch, ignore_errors=True)

    serial_cut = rows[0][1]["edge_cut"]
    serial_rss = rows[0][4][0]
    d = rows[0][1]["dataset"]
    print(f"{d['name']}: {d['num_nodes']} nodes, {d['num_edges']} edges, {d['num_features']} "
          f"features; {a.parts} parts, seed {a.seed}")
    print("| run | edge cut | cut / METIS | imbalance | comm. volume | wall s | steps (slowest "
          "rank) | peak RSS per process (MiB) | largest / serial |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, m, wall, steps, rss in rows:
        print(f"| {name} | {m['edge_cut']} | {m['edge_cut'] / serial_cut:.3f} | "
              f"{m['imbalance']:.3f} | {m['total_volume']} | {wall:.1f} | {steps} | "
              f"{', '.join(f'{r / 1024:.0f}' for r in rss)} | {max(rss) / serial_rss:.2f} |")


if __name__ == "__main__":
    main()
