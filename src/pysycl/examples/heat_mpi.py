"""Heat diffusion (a 5-point Jacobi stencil) over a 2-D grid split across MPI ranks.

Each rank owns a band of rows plus one halo row above and below, in shared USM that MPI
reads and writes directly (no copies), or, with ``--memory device`` (GPUs), in device
USM that a CUDA-aware MPI reads in place and any other MPI through small host buffers;
every step exchanges halo rows with the
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
                v: sycl.global_ptr[np.float32], cols: np.int64, first: np.int64):
    """v = w0 * u + w1 * (sum of the 4 neighbours) on rows ``first`` on (row 0 and the
    last row of the band are halos); columns outside the grid count as 0."""
    w = h.get_specialization_constant(weights_id)
    i = it.get_id(0) + first
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
    """One rank's band of the grid on its (in-order) queue: ``step()`` exchanges halos
    and runs the kernel; ``halo_s`` adds up the time in MPI calls, ``step_s`` the
    host's time in whole steps.

    ``memory``: ``"shared"`` USM, which MPI reads and writes in place through NumPy
    views (any MPI library; on a GPU the driver migrates pages), or ``"device"`` USM
    (GPUs), whose halo rows MPI reads in place when it is CUDA-aware (``halo`` =
    ``"direct"``) or which go through small host buffers (``"staged"``)."""

    def __init__(self, comm, q, grid: np.ndarray, weights: np.ndarray,
                 memory: str = "shared", halo: str = "auto"):
        self.comm, self.q = comm, q
        rank, size = comm.Get_rank(), comm.Get_size()
        first, count = band(grid.shape[0], rank, size)
        self.rows, self.cols = count, grid.shape[1]
        self.up = rank - 1 if rank > 0 else MPI.PROC_NULL
        self.down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
        self.memory = memory
        self.halo = _halo_mode(q, memory, halo)
        start = np.zeros((count + 2, self.cols), np.float32)
        start[1:-1] = grid[first:first + count]
        malloc = sycl.malloc_device if memory == "device" else sycl.malloc_shared
        self.u = malloc((count + 2, self.cols), np.float32, q)
        self.v = malloc((count + 2, self.cols), np.float32, q)
        for arr in (self.u, self.v):
            q.memcpy(arr, start, start.nbytes).wait()
        # (send up, send down, receive from above, receive from below): pinned host
        # memory, which the device copies at full speed
        staging = sycl.malloc_host((4, self.cols), np.float32, q)
        self.staging = staging, np.asarray(staging)
        self.weights = np.asarray(weights, np.float32)
        self.edges = None              # the last step's edge-row kernel (device memory)
        self.halo_s = self.step_s = 0.0

    def _row(self, i: int):
        """Row ``i`` of ``u`` as something MPI can read and write in place."""
        if self.memory == "shared":
            return np.asarray(self.u)[i]
        return _DeviceRow(self.u.ptr + i * self.cols * 4, self.cols)

    def _sweep(self, first: int, count: int):
        """Submit the kernel over ``count`` rows from row ``first`` (u -> v)."""
        u, v, cols, weights = self.u, self.v, self.cols, self.weights

        def cgf(cgh):
            cgh.set_specialization_constant(weights_id, weights)
            cgh.parallel_for(sycl.range(count, cols), jacobi_step, u, v, np.int64(cols),
                             np.int64(first))
        return self.q.submit(cgf)

    def _sendrecv_halos(self, rows) -> None:
        """``rows`` = (my first row, my last row, halo below, halo above) as MPI buffers."""
        t0 = time.perf_counter()
        self.comm.Sendrecv(rows[0], dest=self.up, recvbuf=rows[2], source=self.down)
        self.comm.Sendrecv(rows[1], dest=self.down, recvbuf=rows[3], source=self.up)
        self.halo_s += time.perf_counter() - t0

    def step(self) -> None:
        t0 = time.perf_counter()
        if self.memory == "shared":
            last = self.rows + 1
            self._sendrecv_halos([self._row(i) for i in (1, last - 1, last, 0)])
            self._sweep(1, self.rows).wait()
        else:
            self._overlapped_step()
        self.u, self.v = self.v, self.u
        self.step_s += time.perf_counter() - t0

    def _overlapped_step(self) -> None:
        """Device memory: the interior rows (which need no halo) run on the GPU while
        the host exchanges halos; the two edge rows follow once the halos are in. The
        queue is in order, so each command follows the one before it; the host waits
        only for the edge rows' copies out (staged) or the last step (direct)."""
        q, rows, row = self.q, self.rows, self.cols * 4
        last, base = rows + 1, self.u.ptr
        up, down = self.up != MPI.PROC_NULL, self.down != MPI.PROC_NULL
        if self.halo == "staged":
            pinned, st = self.staging
            out = [q.memcpy(pinned.ptr, base + row, row)] if up else []
            if down:
                out.append(q.memcpy(pinned.ptr + row, base + (last - 1) * row, row))
        if rows > 2:
            self._sweep(2, rows - 2)
        if self.halo == "staged":
            for e in out:
                e.wait()
            self._sendrecv_halos([st[0], st[1], st[3], st[2]])
            if down:
                q.memcpy(base + last * row, pinned.ptr + 3 * row, row)
            if up:
                q.memcpy(base, pinned.ptr + 2 * row, row)
        else:
            if self.edges is not None:
                self.edges.wait()     # the last step's rows are what MPI sends
            self._sendrecv_halos([self._row(i) for i in (1, last - 1, last, 0)])
        self.edges = self._sweep(1, 1)
        if rows > 1:
            self.edges = self._sweep(rows, 1)

    def owned(self) -> np.ndarray:
        self.q.wait()
        whole = np.empty((self.rows + 2, self.cols), np.float32)
        self.q.memcpy(whole, self.u, whole.nbytes).wait()
        return whole[1:-1].copy()


class _DeviceRow:
    """A row of device memory for a CUDA-aware MPI (``__cuda_array_interface__``)."""

    def __init__(self, ptr: int, cols: int):
        self.__cuda_array_interface__ = {"shape": (cols,), "typestr": "<f4",
                                         "data": (ptr, False), "version": 3, "strides": None,
                                         "stream": None}


def cuda_aware_mpi() -> bool:
    """Whether this MPI library reads CUDA device memory (MPIX_Query_cuda_support)."""
    query = getattr(MPI, "Query_cuda_support", None)
    try:
        if query is not None:
            return bool(query())
        # Open MPI and MPICH export it from the MPI library mpi4py loaded.
        import ctypes
        return bool(ctypes.CDLL(None).MPIX_Query_cuda_support())
    except Exception:   # noqa: BLE001 - an MPI without the query: assume not
        return False


def _halo_mode(q, memory: str, halo: str) -> str:
    if memory not in ("shared", "device"):
        raise SystemExit(f"--memory {memory!r}: expected shared or device")
    if memory == "shared":
        return "direct"
    if halo == "auto":
        on_gpu = q.get_device().backend == sycl.backend.cuda
        return "direct" if on_gpu and cuda_aware_mpi() else "staged"
    if halo == "direct" and q.get_device().backend != sycl.backend.cuda:
        raise SystemExit("--halo direct with device memory needs a CUDA device")
    if halo == "direct" and not cuda_aware_mpi():
        # MPI would read device addresses as host memory: a crash, or wrong halos.
        raise SystemExit(f"--halo direct: this MPI library ({MPI.Get_library_version()[:40]}"
                         "...) cannot read CUDA device memory (MPIX_Query_cuda_support is "
                         "0); use --halo staged")
    return halo


def gather(comm, part: np.ndarray, rows: int) -> np.ndarray | None:
    """The whole grid on rank 0 (None elsewhere)."""
    counts = [band(rows, r, comm.Get_size())[1] * part.shape[1] for r in range(comm.Get_size())]
    whole = np.empty((rows, part.shape[1]), np.float32) if comm.Get_rank() == 0 else None
    comm.Gatherv(part, (whole, counts) if whole is not None else None, root=0)
    return whole


def run(comm, rows: int, cols: int, steps: int, weights=(0.6, 0.1), q=None,
        memory: str = "shared", halo: str = "auto") -> dict:
    """Run ``steps`` steps on this rank's device; returns timings and the band."""
    q = q or sycl.queue(sycl.device_for_rank(comm), sycl.property.queue.in_order())
    heat = HeatBand(comm, q, initial_grid(rows, cols), np.asarray(weights, np.float32),
                    memory, halo)
    heat.step()                                  # build the kernel for these weights
    q.wait()
    heat.halo_s = heat.step_s = 0.0
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(steps - 1):
        heat.step()
    q.wait()
    comm.Barrier()
    return {"seconds": time.perf_counter() - t0, "halo_s": heat.halo_s,
            "step_s": heat.step_s, "band": heat.owned(), "device": q.get_device().name,
            "halo": heat.halo}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--cols", type=int, default=512)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--memory", choices=("shared", "device"), default="shared",
                   help="USM kind of the grid (device: GPUs)")
    p.add_argument("--halo", choices=("auto", "direct", "staged"), default="auto",
                   help="device memory: MPI on it in place (a CUDA-aware MPI) or staged "
                        "through the host; auto asks the MPI library")
    p.add_argument("--check", action="store_true", help="compare with NumPy on rank 0")
    args = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    if args.rows < comm.Get_size():
        raise SystemExit(f"--rows {args.rows} is fewer than the {comm.Get_size()} ranks")
    out = run(comm, args.rows, args.cols, args.steps, memory=args.memory, halo=args.halo)
    whole = gather(comm, out["band"], args.rows)
    if comm.Get_rank() != 0:
        return 0
    print(f"{comm.Get_size()} ranks, {args.rows}x{args.cols}, {args.steps} steps on "
          f"{out['device']}: {out['seconds'] * 1e3:.1f} ms "
          f"(halo exchange {out['halo_s'] * 1e3:.1f} ms on rank 0, {args.memory} memory, "
          f"{out['halo']} halos)")
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
