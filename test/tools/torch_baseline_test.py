"""launch/bench_torch_baseline.py's GAT: the attention-weighted aggregation's backward (the
coefficients' gradient taken in blocks of entries, z's over the transpose) against finite
differences, and the whole model against a dense formulation of the same layers."""
import os
import sys
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch"))
import bench_torch_baseline as tb  # noqa: E402


def graph(n, pairs, seed):
    """A symmetric graph without self-loops from `pairs` random pairs, as the baseline builds it."""
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(pairs, 2))
    return tb.adjacency(n, edges)


class WeightedSpmm(unittest.TestCase):
    def test_backward_matches_finite_differences(self):
        n = 23
        src, dst = graph(n, 60, 1)
        # Blocks of 7 entries: the coefficients' gradient crosses several blocks and a partial one.
        g = tb.EntryGraph(n, src, dst, block=7)
        self.assertGreater(len(g.row), 3 * 7)
        torch.manual_seed(2)
        w = torch.rand(len(g.row), dtype=torch.float64, requires_grad=True)
        z = torch.randn(n, 5, dtype=torch.float64, requires_grad=True)
        spmm = lambda w, z: tb.WeightedSpmm.apply(w, z, g)  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(spmm, (w, z)))

    def test_forward_sums_each_rows_entries(self):
        n = 9
        src, dst = graph(n, 20, 3)
        g = tb.EntryGraph(n, src, dst)
        w = torch.rand(len(g.row), dtype=torch.float64)
        z = torch.randn(n, 4, dtype=torch.float64)
        dense = torch.zeros(n, n, dtype=torch.float64)
        dense[g.row, g.col] = w
        torch.testing.assert_close(tb.WeightedSpmm.apply(w, z, g), dense @ z)


def dense_gat(model, x, adj):
    """The same GAT with the edge softmax over a dense mask of A + I."""
    mask = adj | torch.eye(adj.shape[0], dtype=torch.bool)
    for k, w in enumerate(model.weights):
        z = x @ w
        s_src, s_dst = (z @ model.att_src[k].t())[:, 0], (z @ model.att_dst[k].t())[:, 0]
        e = torch.nn.functional.leaky_relu(s_dst[:, None] + s_src[None, :], 0.2)
        alpha = torch.softmax(e.masked_fill(~mask, -float("inf")), dim=1)
        x = alpha @ z + model.biases[k]
        if k + 1 < len(model.weights):
            x = torch.nn.functional.elu(x)
    return x


class Gat(unittest.TestCase):
    def test_model_and_gradients_equal_a_dense_formulation(self):
        n = 31
        src, dst = graph(n, 80, 4)
        adj = torch.zeros(n, n, dtype=torch.bool)
        adj[torch.from_numpy(dst), torch.from_numpy(src)] = True
        torch.manual_seed(5)
        model = tb.build_model("gat", n, src, dst, [6, 8, 8, 3], dropout=0.0).double()
        model.graph.block = 16
        # Scores of several magnitudes, so that the row maximum's shift matters in float.
        x = 4 * torch.randn(n, 6, dtype=torch.float64)
        got = model(x)
        got.square().sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        want = dense_gat(model, x, adj)
        want.square().sum().backward()
        torch.testing.assert_close(got, want)
        for g, p in zip(grads, model.parameters()):
            torch.testing.assert_close(g, p.grad)


if __name__ == "__main__":
    unittest.main()
