"""``python -m benchmarks.scale``: the distributed heat stencil at 1, 2 and 4 MPI ranks.

Weak scaling keeps the rows per rank fixed (efficiency = T(1) / T(n)); strong scaling
keeps the grid fixed (efficiency = T(1) / (n * T(n))). Each figure is the slowest rank's
time over the timed steps, the median of ``--repeat`` runs; "halo" is the share of that
time spent in the halo exchange (MPI Sendrecv of two rows).

    python -m benchmarks.scale --rows-per-rank 1024 --cols 2048 --steps 50

Ranks beyond the cores of this machine share cores, which the efficiency then shows.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _worker(rows: int, cols: int, steps: int, repeat: int, memory: str = "shared") -> None:
    """Run under mpiexec: prints one JSON line (rank 0) with the slowest rank's figures."""
    from mpi4py import MPI
    from pysycl.examples import heat_mpi

    comm = MPI.COMM_WORLD
    runs = []
    for _ in range(repeat):
        out = heat_mpi.run(comm, rows, cols, steps, memory=memory)
        slowest = comm.allreduce(out["seconds"], op=MPI.MAX)
        halo = comm.allreduce(out["halo_s"], op=MPI.MAX)
        runs.append((slowest, halo))
    if comm.Get_rank() == 0:
        seconds, halo = sorted(runs)[len(runs) // 2]
        print(json.dumps({"ranks": comm.Get_size(), "rows": rows, "cols": cols,
                          "steps": steps, "seconds": seconds, "halo_s": halo,
                          "device": out["device"], "halo": out["halo"],
                          "cores": len(os.sched_getaffinity(0))}))


def _mpiexec() -> str:
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if not found:
        raise SystemExit("no mpiexec: pip install -e '.[mpi]'")
    return found


def measure(ranks: int, rows: int, cols: int, steps: int, repeat: int,
            memory: str = "shared") -> dict:
    cmd = [_mpiexec(), "-n", str(ranks), sys.executable, "-m", "benchmarks.scale",
           "--worker", str(rows), str(cols), str(steps), str(repeat), "--memory", memory]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="weak and strong scaling of the heat stencil")
    p.add_argument("--rows-per-rank", type=int, default=1024)
    p.add_argument("--cols", type=int, default=2048)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--memory", choices=("shared", "device"), default="shared",
                   help="USM kind of the grid (device: GPUs, halos staged or CUDA-aware)")
    p.add_argument("--worker", nargs=4, type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker(*args.worker, memory=args.memory)
        return 0
    counts = [int(r) for r in args.ranks.split(",")]
    print(f"heat stencil, {args.cols} columns, {args.steps} steps, {args.memory} memory, "
          f"{len(os.sched_getaffinity(0))} cores")
    print("| scaling | ranks | grid | time | efficiency | halo share | where |")
    print("|---|---|---|---|---|---|---|")
    for kind in ("weak", "strong"):
        base = None
        for n in counts:
            rows = args.rows_per_rank * (n if kind == "weak" else max(counts))
            r = measure(n, rows, args.cols, args.steps, args.repeat, args.memory)
            base = base or r["seconds"]
            eff = base / r["seconds"] if kind == "weak" else base / (n * r["seconds"])
            print(f"| {kind} | {n} | {rows}x{args.cols} | {r['seconds'] * 1e3:.1f} ms | "
                  f"{eff:.2f} | {r['halo_s'] / r['seconds']:.0%} | {r['device']}, "
                  f"{r['halo']} halos |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
