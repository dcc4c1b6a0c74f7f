"""Dask: a pysycl kernel per block of a Dask array on a LocalCluster of two worker
processes, each with its own queue; the result equals NumPy's."""
from __future__ import annotations

import numpy as np
import pytest

from scaleout_env import child_env

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


def test_map_blocks_on_two_worker_processes(rng, monkeypatch):
    from pysycl.examples import dask_blocks

    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])  # workers import this pysycl
    x = rng.random((300, 77), dtype=np.float32)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        blocks = da.from_array(x, chunks=(75, 77))
        y = blocks.map_blocks(dask_blocks.smooth_rows, dtype=np.float32).compute()
        pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2
    np.testing.assert_allclose(y, dask_blocks.reference(x), rtol=1e-6)
