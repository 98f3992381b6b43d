#!/usr/bin/env python3
"""halognn against PyTorch Geometric on one GPU: epoch time and peak GPU memory (docs/gpu.md).

For each graph size: generates the graph with halognn-data, partitions it into 1, 2 and 4 parts
with halognn-partition, trains GCN and GraphSAGE (3 layers, 256 hidden, dropout 0.5, Adam, full
graph) with halognn-train on the GPU (ranks sharing the GPU through the MPI transport), and the
same models with PyTorch Geometric (GCNConv with cached normalisation, SAGEConv with mean
aggregation, the adjacency as a torch sparse CSR matrix) on the same dataset, each in its own
process. Prints one table: median epoch time over the timed epochs (training step only, the
device drained before the clock stops) and the peak of GPU memory allocated (PyTorch's
max_memory_allocated; halognn's device_peak_bytes, the high-water mark of its memory pool).

usage: bench_pyg.py --bin BUILD/bin --work DIR [--sizes NODES:EDGES,...] [--models gcn,sage]
                    [--ranks 1,2,4] [--features 100] [--classes 47] [--epochs 10] [--warmup 3]
                    [--pyg-modes sparse,edge_index] [--no-overlap-too] [--json FILE]
       bench_pyg.py --pyg-run --data DIR --model gcn|sage --mode sparse|edge_index [...]
EDGES counts undirected edges drawn (halognn-data generate --edges); ogbn-products' size is
2000000:60000000.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def pyg_run(a):
    """One PyG training run in this process; prints one JSON line."""
    import numpy as np
    import torch
    import torch_geometric
    from torch_geometric.nn import GCNConv, SAGEConv
    from torch_geometric.utils import to_torch_csr_tensor

    dev = torch.device("cuda")
    man = json.load(open(os.path.join(a.data, "manifest.json")))
    edges = torch.from_numpy(np.load(os.path.join(a.data, "edges.npy")).astype(np.int64)).to(dev)
    x = torch.from_numpy(np.load(os.path.join(a.data, "features.npy")).astype(np.float32)).to(dev)
    y = torch.from_numpy(np.load(os.path.join(a.data, "labels.npy")).astype(np.int64)).to(dev)
    train = torch.from_numpy(np.load(os.path.join(a.data, "train_idx.npy")).astype(np.int64)).to(dev)
    n = x.shape[0]
    # Symmetrise, drop self-loops and duplicates, as halognn does.
    src = torch.cat([edges[:, 0], edges[:, 1]])
    dst = torch.cat([edges[:, 1], edges[:, 0]])
    keep = src != dst
    key = torch.unique(src[keep] * n + dst[keep])
    del edges, src, dst, keep
    edge_index = torch.stack([key // n, key % n])
    del key
    adj = to_torch_csr_tensor(edge_index, size=(n, n)) if a.mode == "sparse" else edge_index
    if a.mode == "sparse":
        del edge_index
    torch.manual_seed(1)
    dims = [x.shape[1]] + [a.hidden] * (a.layers - 1) + [int(man["num_classes"])]
    if a.model == "gcn":
        convs = [GCNConv(i, o, cached=True) for i, o in zip(dims[:-1], dims[1:])]
    else:
        convs = [SAGEConv(i, o, aggr="mean") for i, o in zip(dims[:-1], dims[1:])]
    convs = torch.nn.ModuleList(convs).to(dev)
    opt = torch.optim.Adam(convs.parameters(), lr=0.01, weight_decay=5e-4)

    def step():
        convs.train()
        opt.zero_grad()
        h = x
        for k, conv in enumerate(convs):
            h = torch.nn.functional.dropout(h, a.dropout, True)
            h = conv(h, adj)
            if k + 1 < len(convs):
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h[train], y[train])
        loss.backward()
        opt.step()
        return loss

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    times, loss = [], None
    for e in range(a.warmup + a.epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        if e >= a.warmup:
            times.append(time.perf_counter() - t0)
    print(json.dumps({"impl": "pyg-" + a.mode, "model": a.model, "ranks": 1,
                      "epoch_s": statistics.median(times), "loss": float(loss),
                      "peak_bytes": torch.cuda.max_memory_allocated(),
                      "torch": torch.__version__, "pyg": torch_geometric.__version__,
                      "tf32": bool(torch.backends.cuda.matmul.allow_tf32)}))


def run(cmd, env=None):
    """Runs cmd; returns its output and wall seconds, or raises with the output's end."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-3000:]))
    return r.stdout, time.perf_counter() - t0


def halognn_run(a, part, model, ranks, metrics, overlap=True):
    env = dict(os.environ, OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 2) // ranks)),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if os.path.exists(metrics):
        os.unlink(metrics)
    run(["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
         os.path.join(a.bin, "halognn-train"), "--partition", part, "--model", model,
         "--layers", "3", "--hidden", "256", "--dropout", str(a.dropout),
         "--epochs", str(a.warmup + a.epochs), "--eval-every", str(a.warmup + a.epochs),
         "--device", "cuda", "--transport", "mpi", "--quiet", "--metrics", metrics]
        + ([] if overlap else ["--no-overlap"]), env=env)
    rows = [json.loads(l) for l in open(metrics) if l.strip()]
    epochs = [r for r in rows if "epoch_s" in r]
    return {"impl": "halognn" if overlap else "halognn-no-overlap", "model": model, "ranks": ranks,
            "epoch_s": statistics.median(e["epoch_s"] for e in epochs[a.warmup:]),
            "loss": epochs[-1]["loss"], "peak_bytes": max(e.get("device_peak_bytes", 0) for e in epochs),
            "compute_s": statistics.median(e["compute_s"] for e in epochs[a.warmup:]),
            "comm_s": statistics.median(e["comm_s"] for e in epochs[a.warmup:]),
            "codec_s": statistics.median(e["codec_s"] for e in epochs[a.warmup:]),
            "bytes_sent": epochs[-1]["bytes_sent"], "order": a.order}


def pyg(a, data, model, mode, base, nodes, edges):
    """One PyG run in its own process (its own CUDA context and memory statistics)."""
    if mode == "edge_index":
        # Directed edges after symmetrisation, about twice those drawn.
        need = 2.0 * edges * a.hidden * 4 / 1e9
        if need > a.edge_index_max_gb:
            return dict(base, impl="pyg-" + mode, model=model, ranks=1,
                        error="not run: its %.0f GB of per-edge messages exceed the GPU" % need)
    cmd = [sys.executable, os.path.abspath(__file__), "--pyg-run", "--data", data,
           "--model", model, "--mode", mode, "--layers", str(a.layers),
           "--hidden", str(a.hidden), "--dropout", str(a.dropout),
           "--epochs", str(a.epochs), "--warmup", str(a.warmup)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode == 0:
        return dict(base, **json.loads(r.stdout.strip().splitlines()[-1]))
    err = r.stderr.strip().splitlines()
    oom = any("OutOfMemory" in l or "out of memory" in l for l in err)
    return dict(base, impl="pyg-" + mode, model=model, ranks=1,
                error="out of GPU memory" if oom else (err[-1] if err else "failed"))


def wait_for_prepare(pidfile):
    """Waits while a --prepare run into the same folder is alive."""
    try:
        pid = int(open(pidfile).read())
    except (OSError, ValueError):
        return
    waited = False
    while True:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        if not waited:
            print("# waiting for the --prepare run (pid %d)" % pid, flush=True)
            waited = True
        time.sleep(2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pyg-run", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data")
    p.add_argument("--mode", default="sparse", choices=["sparse", "edge_index"])
    p.add_argument("--model", default="gcn", choices=["gcn", "sage"])
    p.add_argument("--bin", help="folder of halognn-data, halognn-partition, halognn-train")
    p.add_argument("--work", help="folder for the datasets, partitions and metrics")
    p.add_argument("--sizes", default="200000:6000000,2000000:60000000")
    p.add_argument("--models", default="gcn,sage")
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--pyg-modes", default="sparse,edge_index")
    p.add_argument("--order", default="rcm",
                   help="halognn-partition --order (blocks is slow on millions of nodes)")
    p.add_argument("--edge-index-max-gb", type=float, default=60,
                   help="skip PyG's edge_index mode where its per-edge messages (directed edges "
                        "x hidden x 4 bytes) would exceed this")
    p.add_argument("--features", type=int, default=100)
    p.add_argument("--classes", type=int, default=47)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--no-overlap-too", action="store_true",
                   help="also run every multi-rank halognn row with --no-overlap (the exchange "
                        "waited for before any aggregation) beside the default overlap")
    p.add_argument("--json", help="also write every result as JSON lines here")
    p.add_argument("--prepare", action="store_true",
                   help="only generate and partition into --work (a later run reuses them and "
                        "waits for a prepare still running there)")
    a = p.parse_args()
    if a.pyg_run:
        return pyg_run(a)
    if not a.bin or not a.work:
        p.error("--bin and --work are required")
    os.makedirs(a.work, exist_ok=True)
    pidfile = os.path.join(a.work, "prepare.pid")
    if a.prepare:
        open(pidfile, "w").write(str(os.getpid()))
    else:
        wait_for_prepare(pidfile)
    results = []
    out = open(a.json, "w") if a.json else None

    def record(r):
        results.append(r)
        print("  " + json.dumps(r), flush=True)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()

    for size in a.sizes.split(","):
        nodes, edges = (int(v) for v in size.split(":"))
        data = os.path.join(a.work, "data_%d_%d" % (nodes, edges))
        if not os.path.exists(os.path.join(data, "manifest.json")):
            _, t = run([os.path.join(a.bin, "halognn-data"), "generate", "--out", data,
                        "--nodes", str(nodes), "--edges", str(edges), "--features", str(a.features),
                        "--classes", str(a.classes), "--seed", "1"])
            print("# generated %d nodes / %d edges in %.0f s" % (nodes, edges, t), flush=True)
        base = {"nodes": nodes, "edges_drawn": edges}

        def partition(ranks):
            part = os.path.join(a.work, "part_%d_%d_%d_%s" % (nodes, edges, ranks, a.order))
            if not os.path.exists(part):
                _, t = run([os.path.join(a.bin, "halognn-partition"), "--data", data,
                            "--parts", str(ranks), "--order", a.order, "--out", part])
                print("# partitioned into %d in %.0f s" % (ranks, t), flush=True)
            return part

        for ranks in (int(r) for r in a.ranks.split(",")):
            part = partition(ranks)
            if a.prepare:
                continue
            for model in a.models.split(","):
                if ranks == 1:
                    for mode in a.pyg_modes.split(","):
                        record(pyg(a, data, model, mode, base, nodes, edges))
                metrics = os.path.join(a.work, "m_%d_%s_%d.jsonl" % (nodes, model, ranks))
                for overlap in [True] + ([False] if a.no_overlap_too and ranks > 1 else []):
                    try:
                        record(dict(base, **halognn_run(a, part, model, ranks, metrics, overlap)))
                    except RuntimeError as e:
                        lines = [l for l in str(e).splitlines() if l.strip("- ")]
                        ours = [l for l in lines if "halognn-train" in l and "failed (" not in l]
                        record(dict(base, impl="halognn" if overlap else "halognn-no-overlap",
                                    model=model, ranks=ranks, error=(ours or lines or ["failed"])[0]))

    if a.prepare:
        os.unlink(pidfile)
        return 0
    print("\n%-9s %-10s %-5s %-18s %5s %10s %9s %9s %12s %9s" % (
        "nodes", "edges", "model", "impl", "ranks", "epoch ms", "comm ms", "peak GiB",
        "vs pyg-sparse", "loss"))
    for r in results:
        ref = [q for q in results if q["nodes"] == r["nodes"] and q["model"] == r["model"]
               and q["impl"] == "pyg-sparse" and "epoch_s" in q]
        if "error" in r:
            print("%-9d %-10d %-5s %-18s %5d %s" % (r["nodes"], r["edges_drawn"], r["model"],
                                                   r["impl"], r["ranks"], r["error"]))
            continue
        speed = "%.2fx" % (ref[0]["epoch_s"] / r["epoch_s"]) if ref else "-"
        comm = "%.1f" % (r["comm_s"] * 1e3) if "comm_s" in r else "-"
        print("%-9d %-10d %-5s %-18s %5d %10.1f %9s %9.2f %12s %9.4f" % (
            r["nodes"], r["edges_drawn"], r["model"], r["impl"], r["ranks"], r["epoch_s"] * 1e3,
            comm, r["peak_bytes"] / 2**30, speed, r["loss"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
