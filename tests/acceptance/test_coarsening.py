"""Thread coarsening (``PYSYCL_COARSEN``): kernels give the results NumPy gives whether
or not each work-item runs several work-items' bodies, for 1-, 2- and 3-D ranges not
divisible by the factor, ``get_range``/``get_id``/``get_linear_id``/``get_offset``, an
offset nd_range, nd_range kernels asking about work-groups in another dimension, an
early ``return``, atomics and reductions (every operator kind, span reducers, several
in one kernel, ``initialize_to_identity`` or not, buffers and USM); the kernels that must not be coarsened (barrier and
local memory, a required work-group size, the local linear id) are not. Each run is a
process of its own (``coarsen_cases.py``): the setting is read when kernels are built,
and a crash is a failure."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle.coarsening import COARSENING_SET

HERE = Path(__file__).resolve().parent
CAN = ("conv_acc", "conv_usm", "histogram", "nd_other_dim", "queries_2d", "queries_3d",
       "red_2d", "red_buffer", "red_scalars", "red_span", "stencil_1d")
CANNOT = ("red_nd", "with_barrier", "with_local_linear", "with_wg_size")
# What ``auto`` picks, on CUDA: the stencils (reuse along dimension 0 of a 2-D range) by
# 4, the range kernels with reductions by 32.
AUTO = {"conv_acc": "0x4", "conv_usm": "0x4", "red_2d": "0x32", "red_buffer": "0x32",
        "red_scalars": "0x32", "red_span": "0x32"}


def _run(device_param, setting: str, **env) -> dict[str, str]:
    # The child imports the pysycl this test imported (PYTHONPATH may be relative).
    path = os.pathsep.join(filter(None, [str(Path(sycl.__file__).resolve().parents[1]),
                                         os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, **{"PYSYCL_CACHE": "0", **env}, PYSYCL_COARSEN=setting,
               PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(HERE / "coarsen_cases.py"), device_param.backend,
                           str(device_param.index)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr      # a wrong result or a crash
    return dict(line.split() for line in done.stdout.splitlines())


@pytest.mark.parametrize("factor", [2, 4, 16])
def test_forced_factor_gives_numpy_results(device_param, factor, tmp_path):
    trace = tmp_path / "run.json"
    plans = _run(device_param, str(factor), PYSYCL_TRACE=str(trace))
    assert plans == {**{name: f"0x{factor}" for name in CAN}, **{name: "-" for name in CANNOT}}
    # Each build's slice in the timeline says what it did about coarsening, and why not.
    said = {e["name"].split()[1].rpartition(".")[2]: e["args"]["coarsening"]
            for e in json.loads(trace.read_text())["traceEvents"]
            if e.get("cat") == "build" and "coarsening" in e.get("args", {})}
    assert f"{factor} work-items per thread along dimension 0" in said["conv_usm"]
    assert "not coarsened: it uses local memory (parameter scratch)" in said["with_barrier"]
    assert "not coarsened: it has the work-group property sycl-work-group-size" in \
        said["with_wg_size"]
    assert "not coarsened: it asks for its local linear id" in said["with_local_linear"]
    assert "not coarsened: it has reductions and an nd_item" in said["red_nd"]


def test_cached_builds_keep_their_geometry(device_param, tmp_path):
    """Builds with different settings are different cache entries; a later process finds
    each (through the warm-start index) with the geometry it was built for."""
    cache = {"PYSYCL_CACHE": "1", "PYSYCL_CACHE_DIR": str(tmp_path / "cache")}
    for setting, plan in (("3", "0x3"), ("off", "-"), ("3", "0x3")):
        plans = _run(device_param, setting, **cache)
        assert {plans[name] for name in CAN} == {plan}


def test_auto_coarsens_stencils_and_reductions_on_cuda_only(device_param):
    plans = _run(device_param, "auto")
    expected = AUTO if device_param.backend == "cuda" else {}
    assert plans == {name: expected.get(name, "-") for name in CAN + CANNOT}


def test_off_coarsens_nothing(device_param):
    assert set(_run(device_param, "off").values()) == {"-"}


@sycl.kernel
def saved_rows(it: sycl.item[2], x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32],
               cols: np.int64):
    r, c = it.get_id(0), it.get_id(1)
    y[r * cols + c] = x[r * cols + c] * 2 + np.float32(r + it.get_range(0))


def test_saved_bundle_carries_its_coarsening(queue, tmp_path, monkeypatch):
    """A file saved from a coarsened build launches coarsened, whatever the loading
    process's setting: the image says so, the launcher does not ask the environment."""
    monkeypatch.setenv("PYSYCL_COARSEN", "3")
    kb = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                kernel_ids=[sycl.get_kernel_id(saved_rows)])
    path = tmp_path / "rows.syclbin"
    sycl.save_kernel_bundle(sycl.build(kb), path)
    monkeypatch.setenv("PYSYCL_COARSEN", "off")
    exe = sycl.load_kernel_bundle(queue.get_context(), path)
    image = next(img for img in exe if img.has_kernel(saved_rows, queue.get_device()))
    assert image.property_sets[COARSENING_SET] == {
        sycl.get_kernel_id(saved_rows).get_name(): struct.pack("<II", 0, 3)}
    rows, cols = 10, 6
    x = np.random.default_rng().standard_normal((rows, cols)).astype(np.float32)
    dx = sycl.malloc_shared((rows, cols), np.float32, queue)
    dx[:] = x
    dy = sycl.malloc_shared((rows, cols), np.float32, queue)
    queue.submit(lambda cgh: (cgh.use_kernel_bundle(exe), cgh.parallel_for(
        sycl.range(rows, cols), saved_rows, dx, dy, np.int64(cols)))).wait()
    expected = x * 2 + (np.arange(rows)[:, None] + rows).astype(np.float32)
    np.testing.assert_allclose(dy.to_numpy(), expected, rtol=1e-6)
