"""launch/bench_suite.py's choice of the reported run among repeats (scaling --repeats): the run
with the median epoch time, whole, and the options that bound --repeats."""
import os
import subprocess
import sys
import unittest

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch")
sys.path.insert(0, LAUNCH)
import bench_suite  # noqa: E402


def run(epoch_s, comm_s):
    return dict(epoch_s=epoch_s, compute_s=epoch_s - comm_s, comm_s=comm_s, codec_s=0.0, bytes=0.0)


class MedianRun(unittest.TestCase):
    def test_the_median_run_is_reported_whole(self):
        runs = [run(3.0, 0.3), run(1.0, 0.1), run(2.0, 0.2)]
        self.assertEqual(bench_suite.median_run(runs), run(2.0, 0.2))

    def test_an_even_count_reports_the_lower_middle_run(self):
        runs = [run(4.0, 0.4), run(1.0, 0.1), run(3.0, 0.3), run(2.0, 0.2)]
        self.assertEqual(bench_suite.median_run(runs), run(2.0, 0.2))

    def test_one_run_is_itself(self):
        self.assertEqual(bench_suite.median_run([run(5.0, 0.5)]), run(5.0, 0.5))


class RepeatsOption(unittest.TestCase):
    def error(self, *args):
        r = subprocess.run(["/usr/bin/python3", os.path.join(LAUNCH, "bench_suite.py"), *args],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        return r.stderr.strip().splitlines()[-1]

    def test_repeats_below_one_and_on_other_experiments_are_refused(self):
        self.assertIn("--repeats must be at least 1", self.error("scaling", "--repeats", "0"))
        self.assertIn("--repeats applies to the compare, overlap and scaling experiments only",
                      self.error("codecs", "--repeats", "2"))


if __name__ == "__main__":
    unittest.main()
