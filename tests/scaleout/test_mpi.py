"""MPI across processes: the distributed heat example under ``mpiexec -n 2`` and ``-n 4``
gives the one-process NumPy result; ranks find their node-local rank and a device."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaleout_env import child_env

pytest.importorskip("mpi4py")


def _mpiexec() -> str:
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if not found:
        pytest.skip("no mpiexec (pip install -e '.[mpi]' brings MPICH)")
    return found


def _mpirun(n: int, *args: str, timeout: float = 300) -> str:
    proc = subprocess.run([_mpiexec(), "-n", str(n), sys.executable, *args],
                          capture_output=True, text=True, timeout=timeout, env=child_env())
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("ranks, memory", [(2, "shared"), (4, "shared"), (2, "device")])
def test_heat_example_matches_numpy(ranks, memory):
    # 37 rows: bands of unequal height; 29 columns: no power of two anywhere. Device
    # memory exchanges halos through host buffers (pointer arithmetic on USM addresses).
    out = _mpirun(ranks, "-m", "pysycl.examples.heat_mpi", "--rows", "37", "--cols", "29",
                  "--steps", "12", "--check", "--memory", memory)
    assert f"{ranks} ranks" in out and "matches NumPy" in out
    assert ("staged halos" if memory == "device" else "direct halos") in out


def test_each_rank_knows_its_node_local_rank_and_gets_a_device():
    # Rank 0 prints every rank's line: lines that several ranks print at once may
    # interleave in mpiexec's merged output.
    code = ("from mpi4py import MPI\nimport pysycl as sycl\n"
            "c = MPI.COMM_WORLD\n"
            "mine = [c.Get_rank(), *sycl.node_local_rank(c), *sycl.node_local_rank(),"
            " sycl.device_for_rank(c).is_cpu() or sycl.device_for_rank(c).is_gpu()]\n"
            "rows = c.gather(mine, root=0)\n"
            "if c.Get_rank() == 0:\n"
            "    for row in rows: print('RANK', *row, flush=True)\n")
    lines = [l.split()[1:] for l in _mpirun(2, "-c", code).splitlines() if l.startswith("RANK")]
    assert sorted(lines) == [["0", "0", "2", "0", "2", "True"], ["1", "1", "2", "1", "2", "True"]]
