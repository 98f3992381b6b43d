"""halognn-bench-kernels' gather limit (launch/bench_limits.hpp, row_read_gbs) on a small graph:
one per SpMM width and one under each GAT aggregation (at --hidden), over the rows of the width
the kernel gathers in one pass (the SpMM and the GAT forward: a feature block of the
--spmm-cache-mib budget, 16 columns at F = 16, 32 of 64 at F = 64 for 5000 rows and 1 MiB, where
52 fit: whole register groups of 32; the GAT backward: the head's whole rows, 64 columns), printed
under the kernel's row and written to the JSON file."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BIN = sys.argv.pop(1) if len(sys.argv) > 1 else "build/bin"


class GatherLimit(unittest.TestCase):
    def test_one_limit_per_width_over_the_feature_block(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "kernels.json")
            run = subprocess.run(
                [os.path.join(BIN, "halognn-bench-kernels"), "--nodes", "5000", "--edges", "40000",
                 "--widths", "16,64", "--hidden", "64", "--reps", "1", "--triad-mib", "4",
                 "--spmm-cache-mib", "1", "--json", out],
                capture_output=True, text=True, timeout=120,
                env=dict(os.environ, OMP_NUM_THREADS="2"))
            self.assertEqual(run.returncode, 0, run.stderr)
            lines = [l for l in run.stdout.splitlines() if l.strip().startswith("gather limit:")]
            self.assertEqual(len(lines), 4, run.stdout)
            self.assertIn("the same 16-float rows read from a 0.3 MiB block", lines[0])
            self.assertIn("the same 32-float rows read from a 0.6 MiB block", lines[1])
            self.assertIn("; gat_aggregate gathers rows at", lines[2])
            self.assertIn("the same 64-float rows read from a 1.2 MiB block", lines[3])
            self.assertIn("; gat_aggregate_backward gathers rows at", lines[3])
            limits = json.load(open(out))["gather_limits"]
        self.assertEqual([(g["kernel"], g["f"], g["block_cols"]) for g in limits],
                         [("spmm (values)", 16, 16), ("spmm (values)", 64, 32),
                          ("gat_aggregate", 64, 32), ("gat_aggregate_backward", 64, 64)])
        for g in limits:
            self.assertGreater(g["row_read_gb_per_s"], 0)
            self.assertGreater(g["kernel_gather_gb_per_s"], 0)


if __name__ == "__main__":
    unittest.main()
