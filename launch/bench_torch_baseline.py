#!/usr/bin/python3
"""Plain PyTorch baseline for the 1-rank epoch-time comparison (docs/benchmarks.md).

Trains the same model halognn-train builds (GCN: symmetric normalisation with self-loops and
global degrees; GraphSAGE-mean: separate self and neighbour weights; ReLU, dropout on layer
inputs, Adam, full-graph softmax cross-entropy on the training nodes) on a halognn dataset
directory, and prints the mean epoch time. Uses Debian's python3-torch (run with /usr/bin/python3).

usage: bench_torch_baseline.py --data DIR [--model gcn|sage] [--layers 3] [--hidden 256]
                               [--epochs 10] [--warmup 2] [--threads N]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch


def load(dir_):
    man = json.load(open(os.path.join(dir_, "manifest.json")))
    if "sparsified_features" in man:
        sys.exit("bench_torch_baseline.py: %s holds sparsified features (halognn-data sparsify); "
                 "the baseline needs the dense features.npy" % dir_)
    edges = np.load(os.path.join(dir_, "edges.npy")).astype(np.int64)
    x = np.load(os.path.join(dir_, "features.npy")).astype(np.float32)
    y = np.load(os.path.join(dir_, "labels.npy")).astype(np.int64)
    train = np.load(os.path.join(dir_, "train_idx.npy")).astype(np.int64)
    return man, edges, x, y, train


def adjacency(n, edges):
    # Symmetrise, drop self-loops and duplicates (as halognn does).
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    keep = src != dst
    key = np.unique(src[keep] * n + dst[keep])
    return key // n, key % n


class Gcn(torch.nn.Module):
    def __init__(self, dims, a_hat, dropout):
        super().__init__()
        self.lins = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:]))
        self.a_hat, self.dropout = a_hat, dropout

    def forward(self, x):
        for k, lin in enumerate(self.lins):
            x = torch.nn.functional.dropout(x, self.dropout, self.training)
            # Aggregate first when it is narrower, as halognn does.
            if lin.in_features <= lin.out_features:
                x = lin(torch.sparse.mm(self.a_hat, x))
            else:
                x = torch.sparse.mm(self.a_hat, x @ lin.weight.t()) + lin.bias
            if k + 1 < len(self.lins):
                x = torch.relu(x)
        return x


class Sage(torch.nn.Module):
    def __init__(self, dims, a_mean, dropout):
        super().__init__()
        self.self_lins = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:]))
        self.neigh_lins = torch.nn.ModuleList(
            torch.nn.Linear(i, o, bias=False) for i, o in zip(dims[:-1], dims[1:]))
        self.a_mean, self.dropout = a_mean, dropout

    def forward(self, x):
        for k, (ls, ln) in enumerate(zip(self.self_lins, self.neigh_lins)):
            x = torch.nn.functional.dropout(x, self.dropout, self.training)
            x = ls(x) + ln(torch.sparse.mm(self.a_mean, x))
            if k + 1 < len(self.self_lins):
                x = torch.relu(x)
        return x


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model", default="gcn", choices=["gcn", "sage"])
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    man, edges, x, y, train = load(a.data)
    n = x.shape[0]
    src, dst = adjacency(n, edges)
    deg = np.bincount(src, minlength=n).astype(np.float64)
    if a.model == "gcn":
        # \hat A = D^-1/2 (A + I) D^-1/2 with degrees counting the self-loop.
        r = np.concatenate([src, np.arange(n)])
        c = np.concatenate([dst, np.arange(n)])
        w = 1.0 / np.sqrt((deg[r] + 1) * (deg[c] + 1))
    else:
        r, c = src, dst
        w = 1.0 / np.maximum(deg[r], 1)
    a_op = torch.sparse_coo_tensor(np.vstack([r, c]), w.astype(np.float32), (n, n)).coalesce()
    a_op = a_op.to_sparse_csr()
    classes = int(man["num_classes"])
    dims = [x.shape[1]] + [a.hidden] * (a.layers - 1) + [classes]
    model = (Gcn if a.model == "gcn" else Sage)(dims, a_op, a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    xt, yt, tr = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(train)
    times = []
    for e in range(a.warmup + a.epochs):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(xt)
        loss = torch.nn.functional.cross_entropy(out[tr], yt[tr])
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if e >= a.warmup:
            times.append(dt)
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "model": a.model, "layers": a.layers, "hidden": a.hidden, "nodes": n,
                      "directed_edges": int(len(src)), "epochs": a.epochs,
                      "epoch_s_mean": float(np.mean(times)), "epoch_s_min": float(np.min(times)),
                      "loss": float(loss)}))


if __name__ == "__main__":
    sys.exit(main())
