"""``sycl.restrict`` where aliasing blocks vectorisation (native CPU).

``a[i] = b[i] + c[i]`` (LLVM vectorises it either way, behind a run-time overlap check) and a
gather ``a[i] = b[ix[i]] + b[i]`` (no run-time overlap check is possible for an
indirect index, so only ``noalias`` lets it vectorise), each as two kernels that differ only in
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
def gather_plain(i: sycl.id[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32],
                 ix: sycl.global_ptr[I32]):
    # b[ix[j]] has no bounds LLVM can compute, so no run-time overlap check is possible:
    # without noalias the store to a[j] may change ix or b, and the loop stays scalar.
    j = i[0]
    a[j] = b[ix[j]] + b[j]


@sycl.kernel
def gather_restrict(i: sycl.id[1], a: sycl.annotated_ptr[F32, R], b: sycl.annotated_ptr[F32, R],
                    ix: sycl.annotated_ptr[I32, R]):
    j = i[0]
    a[j] = b[ix[j]] + b[j]


def _time(q, launch, reps: int) -> float:
    launch().wait()                        # build + warm up
    launch().wait()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        launch().wait()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(n: int = 1 << 22, reps: int = 30) -> dict:
    q = sycl.queue(sycl.device(sycl.native_cpu_selector_v) if hasattr(
        sycl, "native_cpu_selector_v") else [d for d in sycl.device.get_devices()
                                             if d.backend.name == "native_cpu"][0])
    a, b, c = (sycl.malloc_device(n, F32, q) for _ in range(3))
    q.copy(np.random.default_rng(0).random(n, dtype=F32), b).wait()
    q.copy(np.random.default_rng(1).random(n, dtype=F32), c).wait()
    out = {}
    out["vadd_plain"] = _time(q, lambda: q.parallel_for(n, vadd_plain, a, b, c), reps)
    out["vadd_restrict"] = _time(q, lambda: q.parallel_for(n, vadd_restrict, a, b, c), reps)
    ix = sycl.malloc_device(n, I32, q)
    perm = np.random.default_rng(3).permutation(n).astype(I32)
    q.copy(perm, ix).wait()
    out["gather_plain"] = _time(q, lambda: q.parallel_for(n, gather_plain, a, b, ix), reps)
    out["gather_restrict"] = _time(q, lambda: q.parallel_for(n, gather_restrict, a, b, ix), reps)
    results = []
    for k in (gather_plain, gather_restrict):
        q.parallel_for(n, k, a, b, ix).wait()
        got = np.empty(n, F32)
        q.memcpy(got, a).wait()
        results.append(got)
    assert np.array_equal(*results)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args(argv)
    t = run(args.n, args.reps)
    for name in ("vadd", "gather"):
        p, r = t[f"{name}_plain"], t[f"{name}_restrict"]
        print(f"{name:8s} n={args.n}: plain {p * 1e3:8.3f} ms  restrict {r * 1e3:8.3f} ms  "
              f"ratio plain/restrict {p / r:5.2f}x")


if __name__ == "__main__":
    main()
