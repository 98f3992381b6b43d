"""Roofline bound of one training step (an epoch of full-graph training) on this machine.

For a model, a partition and the machine's two limits (STREAM triad bandwidth and peak flops, as
`halognn-bench-kernels --limits-only --json` measures them), list every kernel the trainer runs
in one training step on every rank (forward, loss, backward, halo exchanges, gradient all-reduce,
optimiser), each with its compulsory bytes (every operand read once, every output written once,
a read-modify-write counted twice: the convention of halognn-bench-kernels) and its flops. The
bound is the sum over kernels of max(bytes / triad, flops / peak), with bytes and flops summed
over ranks: the ranks share the machine's memory and cores, so the sum is what the machine must
move and compute. A measured epoch can only come near it; `measured / bound` says how near.

The kernel sequence mirrors the layers (models/*_layer.cpp) and the trainer
(training/trainer.cpp): dense layer-0 features (the default graph), dropout on every layer's
input (in place after ReLU, its backward through the activated rows), ReLU between layers, the
aggregate-or-transform order each layer picks (the narrower
SpMM), the exchange of the halo rows of layers >= 1 forward and of their gradients backward,
Adam on every rank. docs/benchmarks.md "Epoch time and scaling" describes what is counted.

Run as a script to print one bound:
  /usr/bin/python3 launch/roofline.py --partition P --limits LIMITS.json --model gcn \
      --layers 3 --hidden 256
"""
import argparse
import json
import os

F32 = 4.0  # bytes of a float, of an int32 index


class Step:
    """The kernels of one training step on one rank: (name, bytes, flops) each."""

    def __init__(self):
        self.kernels = []

    def add(self, name, nbytes, flops=0.0):
        self.kernels.append((name, float(nbytes), float(flops)))

    def gemm(self, name, m, k, n, accumulate=False):
        """C (m x n) = A (m x k) B (k x n); accumulate: C is read too."""
        self.add(name, F32 * (m * k + k * n + m * n * (2 if accumulate else 1)), 2.0 * m * k * n)

    def spmm(self, name, rows, cols, entries, width, values=True, accumulate=False):
        """y (rows x width) = A (rows x cols, `entries` stored) x (cols x width)."""
        structure = F32 * (rows + 1) + F32 * entries * (2 if values else 1)
        self.add(name, structure + F32 * cols * width + F32 * rows * width * (2 if accumulate else 1),
                 2.0 * entries * width)


def layer_dims(model, layers, features, hidden, classes, heads):
    """(in, out, heads) of every layer; GAT hidden layers concatenate heads, the last averages
    one head per class (halognn-train's GAT)."""
    dims = []
    width = features
    for l in range(layers):
        last = l == layers - 1
        out = classes if last else hidden
        h = heads if (model == "gat" and not last) else 1
        dims.append((width, out, h))
        width = out * h
    return dims


def training_step(model, dims, n, m, edges, sent, dropout, ranks):
    """The kernels of one training step of one rank: n owned rows, m = owned + halo local rows,
    `edges` stored entries of its adjacency rows (no self-loops), `sent` rows it sends per
    exchange."""
    s = Step()
    halo = m - n
    params = 0
    # GCN and GAT aggregate over A + I, SAGE over A (its self term is a separate product).
    e = edges + (n if model in ("gcn", "gat") else 0)
    # After a ReLU (GCN, SAGE) dropout is applied in place. On one rank the next layer's dropout
    # pass applies the ReLU too (relu_dropout_forward: no ReLU pass). Backward, the owned rows'
    # dropout reads the activated rows instead of drawing the mask (relu_dropout_backward), and
    # the ReLU's backward runs only where peers' gradients were added (more than one rank). After
    # ELU (GAT) every pass runs and draws as written.
    fused = dropout > 0 and model in ("gcn", "sage")
    for l, (fi, fo, h) in enumerate(dims):
        last = l == len(dims) - 1
        w = fo * h
        if l > 0 and ranks > 1:
            # The owner reads its boundary rows, the receiver writes its halo rows.
            s.add(f"L{l} exchange forward", F32 * fi * (sent + halo))
        if dropout > 0:
            relu_here = l > 0 and fused and ranks == 1
            s.add(f"L{l} dropout" + (" (with the ReLU)" if relu_here else ""),
                  2 * F32 * m * fi + 8.0 * m, m * fi * (2 if relu_here else 1))
        if model == "gcn":
            params += fi * fo + fo
            if fi <= fo:
                s.spmm(f"L{l} spmm", n, m, e, fi)
                s.gemm(f"L{l} linear", n, fi, fo)
            else:
                s.gemm(f"L{l} linear", m, fi, fo)
                s.spmm(f"L{l} spmm_bias", n, m, e, fo)
        elif model == "sage":
            params += 2 * fi * fo + fo
            if fi <= fo:
                s.spmm(f"L{l} spmm (mean)", n, m, e, fi)
                s.add(f"L{l} linear (self + neighbours)", F32 * (2 * n * fi + 2 * fi * fo + n * fo),
                      4.0 * n * fi * fo)
            else:
                s.gemm(f"L{l} linear (neighbours)", m, fi, fo)
                s.gemm(f"L{l} linear (self)", n, fi, fo)
                s.spmm(f"L{l} spmm (mean)", n, m, e, fo, accumulate=True)
        else:  # gat
            params += fi * w + 2 * w + fo
            s.gemm(f"L{l} gemm x W", m, fi, w)
            # Both attention vectors' scores from one read of z (dst: the n owned rows).
            s.add(f"L{l} head_scores", F32 * m * w + F32 * (n + m) * h, 2.0 * (n + m) * w)
            s.add(f"L{l} gat_aggregate", F32 * (n + 1) + F32 * e + F32 * (m + n) * w
                  + F32 * (n + m) * h + F32 * e * h, 2.0 * e * w + 6.0 * e * h)
            s.add(f"L{l} bias", 2 * F32 * n * fo + F32 * fo, n * fo)
        if not last and not (fused and ranks == 1):
            s.add(f"L{l} relu", 2 * F32 * n * w, n * w)
    classes = dims[-1][1]
    s.add("softmax_cross_entropy", 2 * F32 * n * classes + F32 * n, 5.0 * n * classes)
    for l in range(len(dims) - 1, -1, -1):
        fi, fo, h = dims[l]
        w = fo * h
        last = l == len(dims) - 1
        if not last and not (fused and ranks == 1):
            s.add(f"L{l} relu_backward", 3 * F32 * n * w, n * w)
        need_gx = l > 0
        if model == "gcn":
            if fi <= fo:
                s.add(f"L{l} linear_grad", F32 * (n * fi + n * fo + fi * fo + fo), 2.0 * n * fi * fo)
                if need_gx:
                    s.gemm(f"L{l} gemm gy W^T", n, fo, fi)
                    s.spmm(f"L{l} spmm A^T", m, n, e, fi)
            else:
                s.add(f"L{l} column_sum", F32 * n * fo, n * fo)
                s.spmm(f"L{l} spmm A^T", m, n, e, fo)
                s.add(f"L{l} linear_grad", F32 * (m * fi + m * fo + fi * fo), 2.0 * m * fi * fo)
                if need_gx:
                    s.gemm(f"L{l} gemm gt W^T", m, fo, fi)
        elif model == "sage":
            s.add(f"L{l} linear_grad (self)", F32 * (n * fi + n * fo + fi * fo + fo), 2.0 * n * fi * fo)
            if fi <= fo:
                s.add(f"L{l} linear_grad (neighbours)", F32 * (n * fi + n * fo + fi * fo),
                      2.0 * n * fi * fo)
                if need_gx:
                    s.gemm(f"L{l} gemm gy W_n^T", n, fo, fi)
                    s.spmm(f"L{l} spmm A^T", m, n, e, fi)
            else:
                s.spmm(f"L{l} spmm A^T", m, n, e, fo)
                s.add(f"L{l} linear_grad (neighbours)", F32 * (m * fi + m * fo + fi * fo),
                      2.0 * m * fi * fo)
                if need_gx:
                    s.gemm(f"L{l} gemm gt W_n^T", m, fo, fi)
            if need_gx:
                s.gemm(f"L{l} gemm gy W_s^T (+=)", n, fo, fi, accumulate=True)
        else:  # gat
            s.add(f"L{l} column_sum", F32 * n * fo, n * fo)
            # Reads both structures, the values, the output gradient, alpha; writes the edge
            # gradients, the score gradients and gz.
            s.add(f"L{l} gat_aggregate_backward",
                  2 * (F32 * (n + 1) + F32 * e) + F32 * m * w + F32 * n * w + F32 * m * w
                  + 2 * F32 * e * h + F32 * (n + m) * h, 4.0 * e * w + 8.0 * e * h)
            # One pass: z read, gz read and written, the score gradients read.
            s.add(f"L{l} head_scores_backward", 3 * F32 * m * w + F32 * (n + m) * h,
                  4.0 * (n + m) * w)
            s.gemm(f"L{l} gemm x^T gz (+=)", fi, m, w, accumulate=True)
            if need_gx:
                s.gemm(f"L{l} gemm gz W^T", m, w, fi)
        if need_gx:
            if fused:
                s.add(f"L{l} relu_dropout_backward", 3 * F32 * n * fi, n * fi)
                if halo > 0:
                    s.add(f"L{l} dropout_backward (halo rows)", 2 * F32 * halo * fi + 8.0 * halo,
                          halo * fi)
            elif dropout > 0:
                s.add(f"L{l} dropout_backward", 2 * F32 * m * fi + 8.0 * m, m * fi)
            if ranks > 1:
                # The owner reads the received gradients and adds them into its boundary rows.
                s.add(f"L{l} exchange backward", F32 * fi * (halo + 2 * sent))
    if ranks > 1:
        # A ring all-reduce moves 2 (P-1)/P of the gradients through every rank: read and write.
        s.add("all-reduce of the gradients", 2 * F32 * params * 2.0 * (ranks - 1) / ranks,
              params * (ranks - 1) / ranks)
    s.add("adam_step", 28.0 * params, 12.0 * params)
    return s


def epoch_bound(partition, limits, model, layers, hidden, heads=1, dropout=0.5):
    """The bound in seconds and the kernels summed over ranks ({name: [bytes, flops]})."""
    man = json.load(open(os.path.join(partition, "manifest.json")))
    ds = man["dataset"]
    dims = layer_dims(model, layers, ds["num_features"], hidden, ds["num_classes"], heads)
    ranks = man["parts"]
    total = {}
    for r in range(ranks):
        n = man["owned"][r]
        step = training_step(model, dims, n, n + man["halo"][r], man["local_edges"][r],
                             man["sent_rows"][r], dropout, ranks)
        for name, b, f in step.kernels:
            acc = total.setdefault(name, [0.0, 0.0])
            acc[0] += b
            acc[1] += f
    lim = json.load(open(limits))
    bw, peak = lim["triad_gb_per_s"] * 1e9, lim["peak_gflop_per_s"] * 1e9
    seconds = sum(max(b / bw, f / peak) for b, f in total.values())
    return seconds, total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--partition", required=True)
    p.add_argument("--limits", required=True, help="halognn-bench-kernels --limits-only --json FILE")
    p.add_argument("--model", default="gcn", choices=["gcn", "sage", "gat"])
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.5)
    a = p.parse_args()
    seconds, total = epoch_bound(a.partition, a.limits, a.model, a.layers, a.hidden, a.heads, a.dropout)
    lim = json.load(open(a.limits))
    bw, peak = lim["triad_gb_per_s"] * 1e9, lim["peak_gflop_per_s"] * 1e9
    print(f"| kernel | MB | GFLOP | bound ms |\n|---|---|---|---|")
    for name, (b, f) in total.items():
        print(f"| {name} | {b / 1e6:.1f} | {f / 1e9:.2f} | {1e3 * max(b / bw, f / peak):.2f} |")
    print(f"\nbound of one training step: {seconds:.4f} s")


if __name__ == "__main__":
    main()
