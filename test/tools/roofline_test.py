"""The epoch roofline model (launch/roofline.py) on hand-made partitions: a one-layer GCN on one
rank kernel by kernel against the counts written out below, and on two ranks the terms only a
distributed step has (halo exchanges of layers >= 1, the gradient all-reduce, the ReLU's backward
after the owned rows' dropout backward)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch"))
import roofline  # noqa: E402


def write_case(d, parts, owned, halo, sent, edges, features=4, classes=2):
    man = dict(parts=parts, owned=owned, halo=halo, sent_rows=sent, local_edges=edges,
               dataset=dict(num_features=features, num_classes=classes))
    json.dump(man, open(os.path.join(d, "manifest.json"), "w"))
    limits = os.path.join(d, "limits.json")
    json.dump(dict(triad_gb_per_s=1.0, peak_gflop_per_s=1.0), open(limits, "w"))
    return limits


class Roofline(unittest.TestCase):
    def test_one_layer_gcn_on_one_rank_counts_every_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            limits = write_case(d, 1, [10], [0], [0], [20])
            seconds, k = roofline.epoch_bound(d, limits, "gcn", 1, 16, dropout=0.0)
        # 4 -> 2 transforms first: x W over the 10 rows, then A + I (30 entries) with the bias.
        expected = {
            "L0 linear": (4 * (10 * 4 + 4 * 2 + 10 * 2), 2 * 10 * 4 * 2),
            "L0 spmm_bias": (4 * 11 + 8 * 30 + 4 * 10 * 2 + 4 * 10 * 2, 2 * 30 * 2),
            "softmax_cross_entropy": (2 * 4 * 10 * 2 + 4 * 10, 5 * 10 * 2),
            "L0 column_sum": (4 * 10 * 2, 10 * 2),
            "L0 spmm A^T": (4 * 11 + 8 * 30 + 4 * 10 * 2 + 4 * 10 * 2, 2 * 30 * 2),
            "L0 linear_grad": (4 * (10 * 4 + 10 * 2 + 4 * 2), 2 * 10 * 4 * 2),
            "adam_step": (28 * 10, 12 * 10),  # 4 x 2 weights and 2 biases
        }
        self.assertEqual({n: tuple(v) for n, v in k.items()}, expected)
        # Every kernel is memory-bound at 1 GB/s and 1 GFLOP/s: the bound is bytes / 1e9.
        self.assertAlmostEqual(seconds, sum(b for b, _ in expected.values()) / 1e9, places=15)

    def test_two_ranks_add_the_exchanges_of_deeper_layers_and_the_all_reduce(self):
        with tempfile.TemporaryDirectory() as d:
            limits = write_case(d, 2, [6, 4], [3, 5], [5, 3], [12, 8], features=8)
            _, k = roofline.epoch_bound(d, limits, "sage", 2, 16, dropout=0.5)
        # Layer 1's input is 16 wide: forward, rows read at the owners (5 + 3) and written at the
        # receivers (3 + 5); backward, gradients read at the receivers, added at the owners.
        self.assertEqual(k["L1 exchange forward"][0], 4 * 16 * (8 + 8))
        self.assertEqual(k["L1 exchange backward"][0], 4 * 16 * (8 + 2 * 8))
        self.assertNotIn("L0 exchange forward", k, "features cross once, at start-up")
        with tempfile.TemporaryDirectory() as d:
            limits = write_case(d, 1, [10], [0], [0], [20])
            _, one = roofline.epoch_bound(d, limits, "sage", 2, 16, dropout=0.5)
        self.assertFalse([n for n in one if "exchange" in n or "all-reduce" in n],
                         "one rank exchanges nothing")
        self.assertNotIn("L0 dropout_backward (halo rows)", k, "layer 0 has no input gradient")
        self.assertNotIn("L0 relu_dropout_backward", k, "layer 0 has no input gradient")
        # Layer 1's input after the ReLU, dropped out in place: the owned rows' dropout backward
        # reads the activated rows (y, g; writes g), the halo rows' draws the mask (8 bytes of
        # Philox state a row); the ReLU's backward still runs on two ranks, not on one.
        self.assertEqual(k["L1 relu_dropout_backward"][0], 3 * 4 * 10 * 16)
        self.assertEqual(k["L1 dropout_backward (halo rows)"][0], 2 * 4 * 8 * 16 + 8 * 8)
        self.assertEqual(k["L0 relu_backward"][0], 3 * 4 * 10 * 16)
        self.assertEqual(one["L1 relu_dropout_backward"][0], 3 * 4 * 10 * 16)
        self.assertNotIn("L1 dropout_backward (halo rows)", one, "one rank has no halo rows")
        self.assertNotIn("L0 relu_backward", one, "one rank adds nothing after the fused pass")
        # Forward: on one rank layer 1's dropout pass applies layer 0's ReLU (no ReLU pass); on
        # two the exchange sends the activated rows, so the ReLU runs on its own.
        self.assertEqual(one["L1 dropout (with the ReLU)"], [2 * 4 * 10 * 16 + 8 * 10, 2 * 10 * 16])
        self.assertNotIn("L0 relu", one)
        self.assertEqual(k["L0 relu"][0], 2 * 4 * 10 * 16)
        self.assertEqual(k["L1 dropout"][0], 2 * 4 * 18 * 16 + 8 * 18)
        params = 2 * 8 * 16 + 16 + 2 * 16 * 2 + 2
        self.assertEqual(k["all-reduce of the gradients"][0], 2 * 4 * params * 2 * 0.5 * 2)
        self.assertEqual(k["adam_step"][0], 2 * 28 * params)


if __name__ == "__main__":
    unittest.main()
