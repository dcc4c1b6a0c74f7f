"""Heat diffusion (a 5-point Jacobi stencil) over a 2-D grid split across MPI ranks.

Each rank owns a band of rows plus one halo row above and below, in shared USM that MPI
reads and writes directly (no copies); every step exchanges halo rows with the
neighbouring ranks, then runs one kernel. The stencil's weights are a specialization
constant, so the compiler sees them as literals. The global boundary is held at zero.

    mpiexec -n 4 python -m pysycl.examples.heat_mpi --rows 1024 --cols 1024 --steps 100 --check

``--check`` gathers the grid on rank 0 and compares it with the same steps in NumPy.
Needs mpi4py and an MPI library (``pip install -e ".[mpi]"`` brings both from PyPI).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from mpi4py import MPI

import pysycl as sycl

weights_id = sycl.specialization_id(np.dtype((np.float32, (2,))),
                                    np.array([0.6, 0.1], np.float32))


@sycl.kernel
def jacobi_step(it: sycl.item[2], h: sycl.kernel_handler, u: sycl.global_ptr[np.float32],
                v: sycl.global_ptr[np.float32], cols: np.int64):
    """v = w0 * u + w1 * (sum of the 4 neighbours) on the owned rows (row 0 and the last
    row of the band are halos); columns outside the grid count as 0."""
    w = h.get_specialization_constant(weights_id)
    i = it.get_id(0) + 1
    j = it.get_id(1)
    at = i * cols + j
    around = u[at - cols] + u[at + cols]
    if j > 0:
        around += u[at - 1]
    if j < cols - 1:
        around += u[at + 1]
    v[at] = w[0] * u[at] + w[1] * around


def band(rows: int, rank: int, size: int) -> tuple[int, int]:
    """First row and row count of ``rank``'s band (the first ``rows % size`` get one more)."""
    base, extra = divmod(rows, size)
    first = rank * base + min(rank, extra)
    return first, base + (1 if rank < extra else 0)


def initial_grid(rows: int, cols: int, seed: int = 2020) -> np.ndarray:
    return np.random.default_rng(seed).random((rows, cols), dtype=np.float32)


def reference(grid: np.ndarray, weights: np.ndarray, steps: int) -> np.ndarray:
    """The same steps in NumPy, in float32."""
    u = grid.astype(np.float32)
    w0, w1 = (np.float32(x) for x in weights)
    for _ in range(steps):
        p = np.pad(u, 1)
        u = w0 * u + w1 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
    return u


class HeatBand:
    """One rank's band of the grid on its queue: ``step()`` exchanges halos and runs the
    kernel; ``halo_s`` and ``compute_s`` add up where the time went."""

    def __init__(self, comm, q, grid: np.ndarray, weights: np.ndarray):
        self.comm, self.q = comm, q
        rank, size = comm.Get_rank(), comm.Get_size()
        first, count = band(grid.shape[0], rank, size)
        self.rows, self.cols = count, grid.shape[1]
        self.up = rank - 1 if rank > 0 else MPI.PROC_NULL
        self.down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
        self.u = sycl.malloc_shared((count + 2, self.cols), np.float32, q)
        self.v = sycl.malloc_shared((count + 2, self.cols), np.float32, q)
        for arr in (self.u, self.v):
            arr[:] = 0
        np.asarray(self.u)[1:-1] = grid[first:first + count]
        self.weights = np.asarray(weights, np.float32)
        self.halo_s = self.compute_s = 0.0

    def exchange_halos(self) -> None:
        u = np.asarray(self.u)          # a view of the shared USM: MPI reads it in place
        t0 = time.perf_counter()
        self.comm.Sendrecv(u[1], dest=self.up, recvbuf=u[-1], source=self.down)
        self.comm.Sendrecv(u[-2], dest=self.down, recvbuf=u[0], source=self.up)
        self.halo_s += time.perf_counter() - t0

    def step(self) -> None:
        self.exchange_halos()
        t0 = time.perf_counter()
        u, v, cols, weights = self.u, self.v, self.cols, self.weights

        def cgf(cgh):
            cgh.set_specialization_constant(weights_id, weights)
            cgh.parallel_for(sycl.range(self.rows, cols), jacobi_step, u, v, np.int64(cols))
        self.q.submit(cgf).wait()
        self.u, self.v = v, u
        self.compute_s += time.perf_counter() - t0

    def owned(self) -> np.ndarray:
        return np.array(np.asarray(self.u)[1:-1])


def gather(comm, part: np.ndarray, rows: int) -> np.ndarray | None:
    """The whole grid on rank 0 (None elsewhere)."""
    counts = [band(rows, r, comm.Get_size())[1] * part.shape[1] for r in range(comm.Get_size())]
    whole = np.empty((rows, part.shape[1]), np.float32) if comm.Get_rank() == 0 else None
    comm.Gatherv(part, (whole, counts) if whole is not None else None, root=0)
    return whole


def run(comm, rows: int, cols: int, steps: int, weights=(0.6, 0.1), q=None) -> dict:
    """Run ``steps`` steps on this rank's device; returns timings and the band."""
    q = q or sycl.queue(sycl.device_for_rank(comm))
    heat = HeatBand(comm, q, initial_grid(rows, cols), np.asarray(weights, np.float32))
    heat.step()                                  # build the kernel for these weights
    heat.halo_s = heat.compute_s = 0.0
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(steps - 1):
        heat.step()
    comm.Barrier()
    return {"seconds": time.perf_counter() - t0, "halo_s": heat.halo_s,
            "compute_s": heat.compute_s, "band": heat.owned(), "device": q.get_device().name}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--cols", type=int, default=512)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--check", action="store_true", help="compare with NumPy on rank 0")
    args = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    if args.rows < comm.Get_size():
        raise SystemExit(f"--rows {args.rows} is fewer than the {comm.Get_size()} ranks")
    out = run(comm, args.rows, args.cols, args.steps)
    whole = gather(comm, out["band"], args.rows)
    if comm.Get_rank() != 0:
        return 0
    print(f"{comm.Get_size()} ranks, {args.rows}x{args.cols}, {args.steps} steps on "
          f"{out['device']}: {out['seconds'] * 1e3:.1f} ms "
          f"(halo exchange {out['halo_s'] * 1e3:.1f} ms on rank 0)")
    if args.check:
        expected = reference(initial_grid(args.rows, args.cols), np.array([0.6, 0.1]),
                             args.steps)
        ok = np.allclose(whole, expected, rtol=1e-5, atol=1e-6)
        print("matches NumPy" if ok else
              f"MISMATCH: max abs error {np.abs(whole - expected).max()}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
