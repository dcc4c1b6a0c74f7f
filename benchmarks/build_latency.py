"""Build-latency measurements. Each runs in a fresh interpreter so that "cold" means cold:
no kernel built in this process, and the disk cache either empty or warm."""
from __future__ import annotations

import json
import statistics
import os
import subprocess
import sys
import tempfile
import textwrap

from .harness import Measurement

_PROBE = textwrap.dedent(r'''
    import json, sys, time
    t0 = t_start = time.perf_counter()
    import numpy as np
    import pysycl as sycl
    t_import = time.perf_counter() - t0
    taps_id = sycl.specialization_id(np.int32, 4)

    @sycl.kernel
    def scale(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32]):
        x[it.get_id(0)] = x[it.get_id(0)] * np.float32(h.get_specialization_constant(taps_id))

    q = sycl.queue()   # the device comes from PYSYCL_DEVICE_SELECTOR
    x = sycl.malloc_shared((1024,), np.float32, q)
    kid = [sycl.get_kernel_id(scale)]
    t0 = time.perf_counter()
    kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input, kernel_ids=kid))
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    def first(cgh):
        cgh.use_kernel_bundle(kb)
        cgh.parallel_for(sycl.range(1024), scale, x)
    q.submit(first).wait()
    t_ready = t_build + time.perf_counter() - t0   # built, loaded and launched once
    t_total = time.perf_counter() - t_start        # from before "import pysycl"
    def submit(v):
        def cgf(cgh):
            cgh.set_specialization_constant(taps_id, np.int32(v))
            cgh.parallel_for(sycl.range(1024), scale, x)
        q.submit(cgf).wait()
    submit(4)
    t0 = time.perf_counter(); submit(5); t_new_value = time.perf_counter() - t0
    t0 = time.perf_counter(); submit(4); t_old_value = time.perf_counter() - t0
    print(json.dumps({"import": t_import, "build": t_build, "ready": t_ready, "new_value": t_new_value,
                      "old_value": t_old_value, "total": t_total}))
''')

_NUMBA = textwrap.dedent(r'''
    import json, time
    import numpy as np
    from numba import njit
    @njit
    def scale(x, s):
        for i in range(x.shape[0]):
            x[i] *= s
    x = np.ones(1024, np.float32)
    t0 = time.perf_counter(); scale(x, np.float32(4)); t = time.perf_counter() - t0
    print(json.dumps({"first_call": t}))
''')


def _run(code: str, env: dict, *args: str, script_dir: str | None = None) -> dict:
    # Kernels are compiled from their source file, so the probe must be a file (not -c).
    # A disk-cache hit needs the same file in the same place: kernels carry their source
    # locations, which are part of the cache key.
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(script_dir or d, "probe.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(code)
        out = subprocess.run([sys.executable, script, *args], env=env, capture_output=True,
                             text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median_runs(code: str, env: dict, runs: int) -> dict:
    results = [_run(code, env) for _ in range(runs)]
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def _ir_to_object(q) -> float | None:
    """Median time of LLVM IR text -> host object for the saxpy kernel (native CPU):
    parse, optimise, emit; what a cold build spends in LLVM."""
    import time
    from pysycl.bundle import launch
    from . import kernels as K
    lau = launch.get_launcher(K.saxpy, q.get_device())
    text = getattr(lau.image, "llvm", None) or getattr(lau.image, "_llvm", None)
    if not text or str(q.get_device().backend).split(".")[-1] != "native_cpu":
        return None
    from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
    c = NativeCpuCompiler()
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        c.compile(text, [lau.kernel_name])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(q, runs: int = 3) -> list[Measurement]:
    """Fresh interpreters: ``runs`` cold builds (each with an empty disk cache) and
    ``runs`` disk-cache hits; medians. Bytecode caching is on as for any installed
    package (PYTHONDONTWRITEBYTECODE dropped), after one uncounted warm-up."""
    from .suite import device_label
    dev = device_label(q.get_device())
    rows = []
    backend = str(q.get_device().backend).split(".")[-1]
    selector = "native_cpu" if backend == "native_cpu" else f"{backend}:*"
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        colds, warms = [], []
        for i in range(runs + 1):
            with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as src:
                env = dict(base, PYSYCL_CACHE_DIR=cache, PYSYCL_DEVICE_SELECTOR=selector)
                cold = _run(_PROBE, env, script_dir=src)
                warm = _run(_PROBE, env, script_dir=src)
            if i:   # the first pair writes bytecode caches: not counted
                colds.append(cold)
                warms.append(warm)
        cold = {k: statistics.median(r[k] for r in colds) for k in colds[0]}
        warm = {k: statistics.median(r[k] for r in warms) for k in warms[0]}
    except Exception as e:   # reported, not fatal
        return [Measurement("build", dev, "pysycl", None, False, str(e)[:200], True)]
    rows.append(Measurement("build: import pysycl (fresh process)", dev, "pysycl",
                            warm["import"], True, is_pysycl=True))
    rows.append(Measurement("build: cold one-kernel build (source to image)", dev, "pysycl",
                            cold["build"], True, is_pysycl=True))
    ir = _ir_to_object(q)
    if ir is not None:
        rows.append(Measurement("build: LLVM IR to object (saxpy)", dev, "pysycl", ir, True,
                                is_pysycl=True))
    rows.append(Measurement("build: new spec-constant value set", dev, "pysycl",
                            cold["new_value"], True, is_pysycl=True))
    rows.append(Measurement("build: earlier value set again (no compile)", dev, "pysycl",
                            cold["old_value"], True, is_pysycl=True))
    rows.append(Measurement("build: disk-cache hit (fresh process), build", dev, "pysycl",
                            warm["build"], True, is_pysycl=True))
    rows.append(Measurement("build: disk-cache hit (fresh process), ready to launch", dev,
                            "pysycl", warm["ready"], True, is_pysycl=True))
    rows.append(Measurement("build: disk-cache hit (fresh process), import to first launch "
                            "done", dev, "pysycl", warm["total"], True, is_pysycl=True))
    try:
        nb = _median_runs(_NUMBA, base, runs)
        rows.append(Measurement("build: cold one-kernel build (source to image)", dev,
                                "numba first call", nb["first_call"], True))
    except Exception:
        pass
    return rows
