"""Cost as programs grow: an executable bundle of N small kernels on the native CPU.

A generated module holds N kernels (each a multiply-add with a branch, each with its
own constant so every one is compiled). In a fresh interpreter: build the executable
bundle of all N (``sycl.build`` of the input bundle) and launch one of them. *Cold*: an
empty disk cache; *warm*: the same program again with the cache the cold run left.
Reported per N: the build time, cores busy during a cold build (CPU time / wall time,
worker processes included) and the warm start (build + first launch).

    python -m benchmarks.program_size --sizes 10,40,160
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

from .harness import Measurement

_KERNEL = textwrap.dedent('''
    @sycl.kernel
    def k{i}(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32], a: f32):
        j = it.get_id(0)
        if x[j] > f32(0):
            y[j] = a * x[j] + y[j]
        else:
            y[j] = y[j] - f32({i})
''')

_PROBE = textwrap.dedent('''
    import json, resource, sys, time
    t_start = time.perf_counter()
    import numpy as np
    import pysycl as sycl
    sys.path.insert(0, sys.argv[1])
    import many_kernels as mod
    q = sycl.queue()
    n = int(sys.argv[2])
    kids = [sycl.get_kernel_id(getattr(mod, f"k{i}")) for i in range(n)]
    def cpu():
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
    c0, t0 = cpu(), time.perf_counter()
    kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                           kernel_ids=kids))
    t_build, c_build = time.perf_counter() - t0, cpu() - c0
    x = sycl.malloc_shared((1000,), np.float32, q); x[:] = np.linspace(-1, 1, 1000)
    y = sycl.malloc_shared((1000,), np.float32, q); y[:] = 1
    k = n - 1
    def cgf(cgh):
        cgh.use_kernel_bundle(kb)
        cgh.parallel_for(sycl.range(1000), getattr(mod, f"k{k}"), x, y, np.float32(2))
    q.submit(cgf).wait()
    t_ready = time.perf_counter() - t0
    xs = np.linspace(-1, 1, 1000, dtype=np.float32)
    ok = bool(np.allclose(np.asarray(y), np.where(xs > 0, 2 * xs + 1, 1 - k)))
    print(json.dumps({"build": t_build, "cores": c_build / t_build, "ready": t_ready,
                      "total": time.perf_counter() - t_start, "ok": ok}))
''')


def write_module(folder: str, n: int) -> None:
    """``many_kernels.py`` with kernels ``k0`` .. ``k{n-1}`` in ``folder``."""
    with open(os.path.join(folder, "many_kernels.py"), "w", encoding="utf-8") as f:
        f.write("import numpy as np\nimport pysycl as sycl\nf32 = np.float32\n")
        for i in range(n):
            f.write(_KERNEL.format(i=i))


def _run(folder: str, n: int, env: dict) -> dict:
    out = subprocess.run([sys.executable, os.path.join(folder, "probe.py"), folder, str(n)],
                         env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["ok"]:
        raise RuntimeError(f"wrong result from kernel k{n - 1}")
    return result


def measure_size(n: int, runs: int = 3) -> tuple[dict, dict]:
    """Medians over ``runs`` (cold, warm) pairs, each cold run with an empty cache; one
    uncounted pair first (it writes bytecode caches)."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["PYSYCL_DEVICE_SELECTOR"] = "native_cpu"
    colds, warms = [], []
    with tempfile.TemporaryDirectory() as src:
        write_module(src, n)
        with open(os.path.join(src, "probe.py"), "w", encoding="utf-8") as f:
            f.write(_PROBE)
        for i in range(runs + 1):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(base, PYSYCL_CACHE_DIR=cache)
                cold, warm = _run(src, n, env), _run(src, n, env)
            if i:
                colds.append(cold)
                warms.append(warm)
    med = lambda rows: {k: statistics.median(r[k] for r in rows) for k in rows[0]}  # noqa: E731
    return med(colds), med(warms)


def measure(q=None, sizes=(10, 40, 160), runs: int = 3) -> list[Measurement]:
    """Rows for ``python -m benchmarks`` (workload ``build``)."""
    dev = "native_cpu"
    if q is not None:
        from .suite import device_label
        dev = device_label(q.get_device())
    rows = []
    for n in sizes:
        try:
            cold, warm = measure_size(n, runs)
        except Exception as e:   # reported, not fatal
            rows.append(Measurement(f"program of {n} kernels", dev, "pysycl", None, False,
                                    str(e)[:200], True))
            continue
        wl = f"program of {n} kernels"
        rows.append(Measurement(wl, dev, "pysycl cold build", cold["build"], True,
                                f"{cold['cores']:.1f} cores busy", True))
        rows.append(Measurement(wl, dev, "pysycl warm start (build + first launch)",
                                warm["ready"], True, "", True))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.program_size")
    ap.add_argument("--sizes", default="10,40,160")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    for n in (int(s) for s in args.sizes.split(",")):
        cold, warm = measure_size(n, args.runs)
        print(f"N={n:4d}  cold build {cold['build'] * 1e3:8.1f} ms "
              f"({cold['build'] * 1e3 / n:5.1f} ms/kernel, {cold['cores']:.1f} cores busy)"
              f"  warm build {warm['build'] * 1e3:7.1f} ms, build + first launch "
              f"{warm['ready'] * 1e3:7.1f} ms, process {warm['total'] * 1e3:7.1f} ms",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
