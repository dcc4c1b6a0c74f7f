"""A short run of the bundle-file fuzzer (``benchmarks/fuzz_syclbin.py``; the long run
is ``python -m benchmarks.stress fuzz``): 200 structure-aware mutations of real saved
bundles, each loaded and run in a worker process. No case may end in an exception
other than ``sycl.exception``, a dead worker or a hang; the run must have exercised
both refusals and kernels that ran and matched NumPy."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks import fuzz_syclbin  # noqa: E402


def test_mutated_bundle_files_are_refused_or_run_correctly(tmp_path):
    summary = fuzz_syclbin.run(200, seed=20261127, jobs=1, out=tmp_path / "findings",
                               timeout=120)
    report = summary.report()
    assert summary.cases == 200, report
    assert summary.failed() == 0, report
    counts = summary.counts
    assert counts["refused"] >= 20 and counts["ran"] >= 20 and counts["loaded"] >= 5, report
