"""``python -m benchmarks.multigpu``: copies between two GPUs, pysycl against CuPy.

pysycl's ``q.memcpy`` between device USM of GPU 0 and GPU 1 (peer-to-peer, or staged
through host memory with ``PYSYCL_CUDA_PEER_ACCESS=0``) against CuPy's
``cudaMemcpyPeer`` on the same pair and sizes, each the median of ``--repeat`` timed
copies (the host waits for each). Needs two CUDA GPUs and CuPy.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _median_seconds(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def pysycl_copy(nbytes: int, repeat: int) -> tuple[float, bool]:
    import pysycl as sycl
    g0, g1 = [d for d in sycl.device.get_devices() if d.backend == sycl.backend.cuda][:2]
    q0, q1 = sycl.queue(g0), sycl.queue(g1)
    a = sycl.malloc_device(nbytes, np.uint8, q0)
    b = sycl.malloc_device(nbytes, np.uint8, q1)
    q0.memset(a, 7, nbytes).wait()
    seconds = _median_seconds(lambda: q1.memcpy(b, a, nbytes).wait(), repeat)
    check = np.empty(16, np.uint8)
    q1.memcpy(check, b, 16).wait()
    assert (check == 7).all()
    peer = q1.get_device().driver.peer_access(g0.description.handle, g1.description.handle)
    return seconds, peer


def cupy_copy(nbytes: int, repeat: int) -> float:
    import cupy as cp
    with cp.cuda.Device(0):
        a = cp.full(nbytes, 7, cp.uint8)
    with cp.cuda.Device(1):
        b = cp.empty(nbytes, cp.uint8)

    def copy():
        cp.cuda.runtime.memcpyPeer(b.data.ptr, 1, a.data.ptr, 0, nbytes)
        with cp.cuda.Device(1):
            cp.cuda.runtime.deviceSynchronize()
    return _median_seconds(copy, repeat)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="GPU-to-GPU copy bandwidth, pysycl vs CuPy")
    p.add_argument("--mib", default="1,16,256,1024")
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    print("| size | pysycl | CuPy memcpyPeer | pysycl / CuPy time | pysycl path |")
    print("|---|---|---|---|---|")
    for mib in (int(m) for m in args.mib.split(",")):
        n = mib << 20
        ours, peer = pysycl_copy(n, args.repeat)
        theirs = cupy_copy(n, args.repeat)
        print(f"| {mib} MiB | {n / ours / 1e9:.1f} GB/s | {n / theirs / 1e9:.1f} GB/s | "
              f"{ours / theirs:.2f} | {'peer-to-peer' if peer else 'staged'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
