"""``sycl.restrict`` where aliasing blocks vectorisation (native CPU).

``a[i] = b[i] + c[i]`` and a row sum accumulated in memory (``out[i] += m[i, k]``), each as two kernels that differ only in
``sycl.restrict`` on their pointer arguments (``sycl.annotated_ptr[T, props]``). Without
the property LLVM must assume the output may overlap the inputs; with it the parameters
are ``noalias`` and the loop vectorises without runtime overlap checks. Prints the
median time per launch of each and the ratio plain/restrict.

    python -m benchmarks.bench_restrict [--n N] [--reps R]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import pysycl as sycl

F32 = np.float32
I32 = np.int32
R = sycl.properties(sycl.restrict)


@sycl.kernel
def vadd_plain(i: sycl.id[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32],
               c: sycl.global_ptr[F32]):
    a[i[0]] = b[i[0]] + c[i[0]]


@sycl.kernel
def vadd_restrict(i: sycl.id[1], a: sycl.annotated_ptr[F32, R], b: sycl.annotated_ptr[F32, R],
                  c: sycl.annotated_ptr[F32, R]):
    a[i[0]] = b[i[0]] + c[i[0]]


@sycl.kernel
def rowsum_plain(i: sycl.id[1], out: sycl.global_ptr[I32], m: sycl.global_ptr[I32],
                 n: np.int64):
    # out[i] may alias m[...]: LLVM must store and reload out[i] every iteration, and
    # the loop stays scalar.
    out[i[0]] = 0
    for k in range(n):
        out[i[0]] += m[i[0] * n + k]


@sycl.kernel
def rowsum_restrict(i: sycl.id[1], out: sycl.annotated_ptr[I32, R],
                    m: sycl.annotated_ptr[I32, R], n: np.int64):
    # noalias: out[i] lives in a register for the loop, which vectorises.
    out[i[0]] = 0
    for k in range(n):
        out[i[0]] += m[i[0] * n + k]


def _time(q, launch, reps: int) -> float:
    launch().wait()                        # build + warm up
    launch().wait()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        launch().wait()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(n: int = 1 << 22, reps: int = 30, rows: int = 256) -> dict:
    q = sycl.queue(sycl.device(sycl.native_cpu_selector_v) if hasattr(
        sycl, "native_cpu_selector_v") else [d for d in sycl.device.get_devices()
                                             if d.backend.name == "native_cpu"][0])
    a, b, c = (sycl.malloc_device(n, F32, q) for _ in range(3))
    q.copy(np.random.default_rng(0).random(n, dtype=F32), b).wait()
    q.copy(np.random.default_rng(1).random(n, dtype=F32), c).wait()
    out = {}
    out["vadd_plain"] = _time(q, lambda: q.parallel_for(n, vadd_plain, a, b, c), reps)
    out["vadd_restrict"] = _time(q, lambda: q.parallel_for(n, vadd_restrict, a, b, c), reps)
    row = n // rows
    o = sycl.malloc_device(rows, I32, q)
    m = sycl.malloc_device(n, I32, q)
    mat = np.random.default_rng(2).integers(0, 100, n, dtype=I32)
    q.copy(mat, m).wait()
    out["rowsum_plain"] = _time(q, lambda: q.parallel_for(rows, rowsum_plain, o, m, row), reps)
    out["rowsum_restrict"] = _time(q, lambda: q.parallel_for(rows, rowsum_restrict, o, m, row),
                                   reps)
    expect = mat.reshape(rows, row).sum(axis=1, dtype=I32)
    for k in (rowsum_plain, rowsum_restrict):
        got = np.empty(rows, I32)
        q.parallel_for(rows, k, o, m, row).wait()
        q.memcpy(got, o).wait()
        assert np.array_equal(got, expect), k
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args(argv)
    t = run(args.n, args.reps)
    for name in ("vadd", "rowsum"):
        p, r = t[f"{name}_plain"], t[f"{name}_restrict"]
        print(f"{name:8s} n={args.n}: plain {p * 1e3:8.3f} ms  restrict {r * 1e3:8.3f} ms  "
              f"ratio plain/restrict {p / r:5.2f}x")


if __name__ == "__main__":
    main()
