"""``sycl.restrict`` where aliasing blocks vectorisation (native CPU).

Three kernel pairs; the two kernels of a pair have the same body and differ only in
``sycl.restrict`` on their pointers (``global_ptr[T]`` vs ``annotated_ptr[T, restrict]``):

* ``vadd``  ``a[i] = b[i] + c[i]``: affine accesses, so LLVM vectorises the plain kernel
  too, behind a run-time overlap check (hoisted out of the work-item loop): ~1x.
* ``many``  5 outputs from 5 inputs (50 pointer pairs, over LLVM's
  ``-runtime-memory-check-threshold`` of 8): LLVM 22 still versions the loop (its cost
  model accepts the checks once per work-group), so again ~1x.
* ``lut``   table interpolation ``o[i] = lut[k] * x[i] + lut[k + 1]`` with ``k = ix[i]``: the
  table index is data, so LLVM cannot bound the ``lut`` accesses, no run-time check is
  possible, and without ``noalias`` the store to ``o`` may change ``ix``/``lut``/``x``: the
  plain loop stays scalar; with ``restrict`` it vectorises (AVX ``masked.gather``).

Prints, for each pair, the vector instructions in the optimised LLVM IR of each kernel
and the median time per launch (interleaved repetitions, same run), and checks both
results against NumPy.

    python -m benchmarks.bench_restrict [--n N] [--reps R]
"""
from __future__ import annotations

import argparse
import re
import statistics
import time

import numpy as np

import pysycl as sycl

F32 = np.float32
I32 = np.int32
R = sycl.properties(sycl.restrict)
P, PI = sycl.global_ptr[F32], sycl.global_ptr[I32]
A, AI = sycl.annotated_ptr[F32, R], sycl.annotated_ptr[I32, R]
LUT_SIZE = 256


@sycl.kernel
def vadd_plain(i: sycl.id[1], a: P, b: P, c: P):
    a[i[0]] = b[i[0]] + c[i[0]]


@sycl.kernel
def vadd_restrict(i: sycl.id[1], a: A, b: A, c: A):
    a[i[0]] = b[i[0]] + c[i[0]]


@sycl.kernel
def many_plain(i: sycl.id[1], o0: P, o1: P, o2: P, o3: P, o4: P,
               x0: P, x1: P, x2: P, x3: P, x4: P):
    j = i[0]
    a = x0[j]
    b = x1[j]
    c = x2[j]
    d = x3[j]
    e = x4[j]
    o0[j] = a + b
    o1[j] = b * c
    o2[j] = c - d
    o3[j] = d * e + a
    o4[j] = e + a * b


@sycl.kernel
def many_restrict(i: sycl.id[1], o0: A, o1: A, o2: A, o3: A, o4: A,
                  x0: A, x1: A, x2: A, x3: A, x4: A):
    j = i[0]
    a = x0[j]
    b = x1[j]
    c = x2[j]
    d = x3[j]
    e = x4[j]
    o0[j] = a + b
    o1[j] = b * c
    o2[j] = c - d
    o3[j] = d * e + a
    o4[j] = e + a * b


@sycl.kernel
def lut_plain(i: sycl.id[1], o: P, x: P, ix: PI, lut: P):
    j = i[0]
    k = ix[j]
    o[j] = lut[k] * x[j] + lut[k + 1]


@sycl.kernel
def lut_restrict(i: sycl.id[1], o: A, x: A, ix: AI, lut: A):
    j = i[0]
    k = ix[j]
    o[j] = lut[k] * x[j] + lut[k + 1]


def vector_ops(kernel, device) -> int | None:
    """``<N x float|i32>`` values in the optimised native LLVM IR of ``kernel``
    (0: scalar loop); None where the internals are not reachable."""
    try:
        from pysycl.bundle import toolchain
        from pysycl.bundle.kernel_id import get_kernel_id
        from pysycl.bundle.linker import default_linked_kernel
        t = toolchain.device_target(device)
        module = default_linked_kernel(get_kernel_id(kernel)).module
        module = toolchain.kernel_passes(toolchain.clone(module), t)
        opt = toolchain.compiler_for(t).optimized_ir(toolchain.codegen(module, t))
        return len(re.findall(r"<\d+ x (?:float|i32)>", opt))
    except Exception:  # noqa: BLE001 - a diagnostic, never fails the benchmark
        return None


def _time_pair(launches, reps: int) -> list[float]:
    """Median seconds per launch of each, repetitions interleaved so both see the same
    machine load."""
    for launch in launches:          # build + warm up
        launch().wait()
        launch().wait()
    times = [[] for _ in launches]
    for _ in range(reps):
        for t, launch in zip(times, launches):
            t0 = time.perf_counter()
            launch().wait()
            t.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def native_queue():
    return sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0])


def run(n: int = 1 << 22, reps: int = 20, q=None) -> dict:
    """``{case: {"plain": s, "restrict": s, "vec_plain": k, "vec_restrict": k}}``."""
    q = q or native_queue()
    dev = q.get_device()
    rng = np.random.default_rng(0)
    host = [rng.random(n, dtype=F32) for _ in range(5)]
    ins = [sycl.malloc_device(n, F32, q) for _ in range(5)]
    outs = [sycl.malloc_device(n, F32, q) for _ in range(5)]
    for h, d in zip(host, ins):
        q.copy(h, d).wait()
    hix = rng.integers(0, LUT_SIZE, n).astype(I32)
    hlut = rng.random(LUT_SIZE + 1, dtype=F32)
    ix, lut = sycl.malloc_device(n, I32, q), sycl.malloc_device(LUT_SIZE + 1, F32, q)
    q.copy(hix, ix).wait()
    q.copy(hlut, lut).wait()
    x0, x1, x2, x3, x4 = host
    cases = {
        "vadd": ((vadd_plain, vadd_restrict), (outs[0], ins[0], ins[1]), [x0 + x1]),
        "many": ((many_plain, many_restrict), (*outs, *ins),
                 [x0 + x1, x1 * x2, x2 - x3, x3 * x4 + x0, x4 + x0 * x1]),
        "lut": ((lut_plain, lut_restrict), (outs[0], ins[0], ix, lut),
                [hlut[hix] * x0 + hlut[hix + 1]]),
    }
    out = {}
    for name, (pair, args, expected) in cases.items():
        secs = _time_pair([lambda k=k: q.parallel_for(n, k, *args) for k in pair], reps)
        for k in pair:   # each kernel's own result, checked against NumPy
            for o in outs[:len(expected)]:          # no stale result can pass
                q.copy(np.full(n, np.nan, F32), o).wait()
            q.parallel_for(n, k, *args).wait()
            for o, want in zip(outs, expected):
                got = np.empty(n, F32)
                q.memcpy(got, o).wait()
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{k.name}")
        out[name] = {"plain": secs[0], "restrict": secs[1],
                     "vec_plain": vector_ops(pair[0], dev),
                     "vec_restrict": vector_ops(pair[1], dev)}
    for p in ins + outs + [ix, lut]:
        sycl.free(p, q)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    for name, r in run(args.n, args.reps).items():
        p, s = r["plain"], r["restrict"]
        print(f"{name:5s} n={args.n}: plain {p * 1e3:8.3f} ms ({r['vec_plain']} vector ops)  "
              f"restrict {s * 1e3:8.3f} ms ({r['vec_restrict']} vector ops)  "
              f"plain/restrict {p / s:5.2f}x")


if __name__ == "__main__":
    main()
