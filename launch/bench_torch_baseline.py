#!/usr/bin/python3
"""Plain PyTorch baseline for the 1-rank epoch-time comparison (docs/benchmarks.md).

Trains the same model halognn-train builds (GCN: symmetric normalisation with self-loops and
global degrees; GraphSAGE-mean: separate self and neighbour weights; GAT with one head: edge
softmax over A + I, LeakyReLU slope 0.2, bias, ELU between layers; ReLU between the other models'
layers, dropout on layer inputs, Adam, full-graph softmax cross-entropy on the training nodes) on a
halognn dataset directory, and prints the mean epoch time. Uses Debian's python3-torch (run with
/usr/bin/python3).

GAT's attention-weighted aggregation is a torch.autograd.Function (`WeightedSpmm`): the sums are
torch.sparse.mm on CSR forward and over the transpose backward, and the coefficients' gradient
(gy_v . z_u on every entry) is taken in blocks of entries. torch.sparse.mm's own backward to a
sparse matrix's values builds a dense n x n gradient (40 GB at 10^5 nodes), and gathering z_u for
every entry at once, as message-passing libraries do, holds entries x width floats (4 GB a layer on
the default graph); the blocks keep the baseline within this machine's memory.

usage: bench_torch_baseline.py --data DIR [--model gcn|sage|gat] [--layers 3] [--hidden 256]
                               [--epochs 10] [--warmup 2] [--threads N]
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch

# torch 1.13 warns on every use that sparse CSR tensors and scatter_reduce are in beta.
warnings.filterwarnings("ignore", message=".*(is in beta|in beta state)")


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


class WeightedSpmm(torch.autograd.Function):
    """y_v = sum over entries (v, u) of w_vu z_u, for the entries of `graph` (sorted by row)."""

    @staticmethod
    def forward(ctx, w, z, graph):
        ctx.save_for_backward(w, z)
        ctx.graph = graph
        return graph.matrix(w) @ z

    @staticmethod
    def backward(ctx, gy):
        w, z = ctx.saved_tensors
        g = ctx.graph
        gw = torch.empty_like(w)
        for b in range(0, len(w), g.block):
            e = slice(b, b + g.block)
            gw[e] = (gy[g.row[e]] * z[g.col[e]]).sum(1)
        return gw, g.transpose_matrix(w) @ gy, None


class EntryGraph:
    """The entries (row, col) of A + I sorted by row, CSR pointers both ways, the entry permutation
    that sorts them by column."""

    def __init__(self, n, src, dst, block=1 << 18):
        self.n, self.block = n, block
        row = torch.from_numpy(np.concatenate([dst, np.arange(n)]))
        col = torch.from_numpy(np.concatenate([src, np.arange(n)]))
        order = torch.argsort(row * n + col)
        self.row, self.col = row[order], col[order]
        self.perm = torch.argsort(self.col * n + self.row)
        self.ptr = self.pointers(self.row)
        self.t_ptr, self.t_col = self.pointers(self.col[self.perm]), self.row[self.perm]

    def pointers(self, sorted_rows):
        return torch.cat([torch.zeros(1, dtype=torch.int64),
                          torch.cumsum(torch.bincount(sorted_rows, minlength=self.n), 0)])

    def matrix(self, w):
        return torch.sparse_csr_tensor(self.ptr, self.col, w, (self.n, self.n))

    def transpose_matrix(self, w):
        return torch.sparse_csr_tensor(self.t_ptr, self.t_col, w[self.perm], (self.n, self.n))


class Gat(torch.nn.Module):
    def __init__(self, dims, graph, dropout):
        super().__init__()
        glorot = lambda r, c: torch.nn.Parameter(
            torch.empty(r, c).uniform_(-1, 1) * float(np.sqrt(6.0 / (r + c))))
        self.weights = torch.nn.ParameterList(glorot(i, o) for i, o in zip(dims[:-1], dims[1:]))
        self.att_src = torch.nn.ParameterList(glorot(1, o) for o in dims[1:])
        self.att_dst = torch.nn.ParameterList(glorot(1, o) for o in dims[1:])
        self.biases = torch.nn.ParameterList(torch.nn.Parameter(torch.zeros(o)) for o in dims[1:])
        self.graph, self.dropout = graph, dropout

    def forward(self, x):
        g = self.graph
        for k, w in enumerate(self.weights):
            x = torch.nn.functional.dropout(x, self.dropout, self.training)
            z = x @ w
            s_src, s_dst = (z @ self.att_src[k].t())[:, 0], (z @ self.att_dst[k].t())[:, 0]
            e = torch.nn.functional.leaky_relu(s_dst[g.row] + s_src[g.col], 0.2)
            # Softmax over each row's entries, shifted by the row's maximum (a constant of the
            # row: no gradient flows through it).
            top = e.new_full((g.n,), -float("inf")).scatter_reduce(0, g.row, e.detach(), "amax")
            ex = torch.exp(e - top[g.row])
            alpha = ex / ex.new_zeros(g.n).index_add(0, g.row, ex)[g.row]
            x = WeightedSpmm.apply(alpha, z, g) + self.biases[k]
            if k + 1 < len(self.weights):
                x = torch.nn.functional.elu(x)
        return x


def build_model(kind, n, src, dst, dims, dropout):
    if kind == "gat":
        return Gat(dims, EntryGraph(n, src, dst), dropout)
    deg = np.bincount(src, minlength=n).astype(np.float64)
    if kind == "gcn":
        # \hat A = D^-1/2 (A + I) D^-1/2 with degrees counting the self-loop.
        r = np.concatenate([src, np.arange(n)])
        c = np.concatenate([dst, np.arange(n)])
        w = 1.0 / np.sqrt((deg[r] + 1) * (deg[c] + 1))
    else:
        r, c = src, dst
        w = 1.0 / np.maximum(deg[r], 1)
    a_op = torch.sparse_coo_tensor(np.vstack([r, c]), w.astype(np.float32), (n, n)).coalesce()
    a_op = a_op.to_sparse_csr()
    return (Gcn if kind == "gcn" else Sage)(dims, a_op, dropout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model", default="gcn", choices=["gcn", "sage", "gat"])
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
    classes = int(man["num_classes"])
    dims = [x.shape[1]] + [a.hidden] * (a.layers - 1) + [classes]
    model = build_model(a.model, n, src, dst, dims, a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    xt, yt, tr = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(train)
    times, losses = [], []
    for e in range(a.warmup + a.epochs):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(xt)
        loss = torch.nn.functional.cross_entropy(out[tr], yt[tr])
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        losses.append(float(loss))
        if e >= a.warmup:
            times.append(dt)
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "model": a.model, "layers": a.layers, "hidden": a.hidden, "nodes": n,
                      "directed_edges": int(len(src)), "epochs": a.epochs,
                      "epoch_s_mean": float(np.mean(times)), "epoch_s_min": float(np.min(times)),
                      "loss": float(loss), "losses": losses}))


if __name__ == "__main__":
    sys.exit(main())
