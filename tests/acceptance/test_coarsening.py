"""Thread coarsening (``PYSYCL_COARSEN``): kernels give the results NumPy gives whether
or not each work-item runs several work-items' bodies, for 1-, 2- and 3-D ranges not
divisible by the factor, ``get_range``/``get_id``/``get_linear_id``/``get_offset``, an
offset nd_range, nd_range kernels asking about work-groups in another dimension, an
early ``return`` and atomics; the kernels that must not be coarsened (barrier and
local memory, a required work-group size, the local linear id) are not. Each run is a
process of its own (``coarsen_cases.py``): the setting is read when kernels are built,
and a crash is a failure."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pysycl

HERE = Path(__file__).resolve().parent
CAN = ("conv_acc", "conv_usm", "histogram", "nd_other_dim", "queries_2d", "queries_3d",
       "stencil_1d")
CANNOT = ("with_barrier", "with_local_linear", "with_wg_size")
# What ``auto`` picks: the stencils (reuse along dimension 0 of a 2-D range), on CUDA.
AUTO = {"conv_acc": "0x4", "conv_usm": "0x4"}


def _run(device_param, setting: str) -> dict[str, str]:
    # The child imports the pysycl this test imported (PYTHONPATH may be relative).
    path = os.pathsep.join(filter(None, [str(Path(pysycl.__file__).resolve().parents[1]),
                                         os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYSYCL_COARSEN=setting, PYSYCL_CACHE="0", PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(HERE / "coarsen_cases.py"), device_param.backend,
                           str(device_param.index)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr      # a wrong result or a crash
    return dict(line.split() for line in done.stdout.splitlines())


@pytest.mark.parametrize("factor", [2, 4])
def test_forced_factor_gives_numpy_results(device_param, factor):
    plans = _run(device_param, str(factor))
    assert plans == {**{name: f"0x{factor}" for name in CAN}, **{name: "-" for name in CANNOT}}


def test_auto_coarsens_stencils_on_cuda_only(device_param):
    plans = _run(device_param, "auto")
    expected = AUTO if device_param.backend == "cuda" else {}
    assert plans == {name: expected.get(name, "-") for name in CAN + CANNOT}


def test_off_coarsens_nothing(device_param):
    assert set(_run(device_param, "off").values()) == {"-"}
