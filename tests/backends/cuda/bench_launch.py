"""Compile, load and launch costs of the CUDA backend, with CuPy's RawKernel as the
reference for launch overhead. Run on a GPU machine: ``python tests/backends/cuda/bench_launch.py``."""
from __future__ import annotations

import json
import os
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402

from cuda_kernels_ir import MATH, VADD  # noqa: E402
from pysycl.backends.base import KernelArg, KernelArgKind  # noqa: E402
from pysycl.backends.cuda import compiler as C  # noqa: E402
from pysycl.backends.cuda.driver import CudaDriver, cu  # noqa: E402

results: dict[str, float] = {}


def timed(label, fn, repeat=1):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    results[label] = round(statistics.median(times) * 1e3, 3)
    return out


drv = CudaDriver()
dev = drv.discover()[0]
results["device"] = dev.name
worker = C.PtxCompiler(dev.target, in_worker=True)
inproc = C.PtxCompiler(dev.target, in_worker=False)
ptx = timed("compile_vadd_cold_worker_ms", lambda: worker.compile(VADD, ["vadd"]))
timed("compile_vadd_warm_worker_ms", lambda: worker.compile(VADD, ["vadd"]), 5)
timed("compile_vadd_inprocess_ms", lambda: inproc.compile(VADD, ["vadd"]), 5)
timed("compile_math_libdevice_first_ms", lambda: inproc.compile(MATH, ["math"]))
timed("compile_math_libdevice_cached_ms", lambda: inproc.compile(MATH, ["math"]), 5)
prog = timed("load_vadd_first_ms", lambda: drv.load(dev, ptx, ["vadd"]))
timed("load_vadd_again_ms", lambda: drv.unload(drv.load(dev, ptx, ["vadd"])), 5)

n = 256
stream = drv.create_stream(dev, profiling=False)
bufs = [drv.alloc(dev, n * 4, "device") for _ in range(4)]
args = [KernelArg(KernelArgKind.mem, b) for b in bufs[:3]] + [
    KernelArg(KernelArgKind.scalar, struct.pack("<q", n)), KernelArg(KernelArgKind.mem, bufs[3])]
N = 20000


def per_launch(label, launch):
    for _ in range(200):
        launch()
    drv.synchronize(stream)
    best = []
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(N):
            launch()
        best.append((time.perf_counter() - t) / N)
        drv.synchronize(stream)
    results[label] = round(min(best) * 1e6, 3)


per_launch("launch_us_driver_launch", lambda: drv.launch(stream, prog, "vadd", [n], [n], args))
kern = drv.kernel(prog, "vadd")
per_launch("launch_us_kernel_launch", lambda: kern.launch(stream, [n], [n], args))
per_launch("launch_us_launch_plus_event",
           lambda: (kern.launch(stream, [n], [n], args), drv.record_event(stream)))
pstream = drv.create_stream(dev, profiling=True)
per_launch("launch_us_profiling_queue", lambda: kern.launch(pstream, [n], [n], args))
drv.synchronize(pstream)
packer = kern._packer
fn, h = kern.function, stream.handle
per_launch("launch_us_raw_cuda_bindings",
           lambda: cu.cuLaunchKernel(fn, 1, 1, 1, n, 1, 1, 0, h, packer.params, 0))
try:
    import cupy
    path = "/tmp/pysycl_vadd.ptx"
    with open(path, "wb") as f:
        f.write(ptx)
    raw = cupy.RawModule(path=path).get_function("vadd")
    arrs = [cupy.zeros(n, cupy.float32) for _ in range(4)]
    cstream = cupy.cuda.Stream(non_blocking=True)
    n64 = np.int64(n)
    with cstream:
        raw((1,), (n,), (arrs[0], arrs[1], arrs[2], n64, arrs[3]))
        cstream.synchronize()

        def cupy_launch():
            raw((1,), (n,), (arrs[0], arrs[1], arrs[2], n64, arrs[3]))
        per_launch("launch_us_cupy_rawkernel", cupy_launch)
    results["launch_ratio_vs_cupy"] = round(
        results["launch_us_driver_launch"] / results["launch_us_cupy_rawkernel"], 2)
except Exception as e:  # noqa: BLE001
    results["cupy_error"] = repr(e)
print(json.dumps(results, indent=1))
out = os.environ.get("OUT")
if out:
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(results, f, indent=1)
