"""Long reliability runs: ``python -m benchmarks.stress <what>``.

    python -m benchmarks.stress specvalues --values 10000 [--backend native_cpu] [--literal]
    python -m benchmarks.stress fuzz --cases 100000 [--jobs 2] [--seed 0] [--out DIR]

``specvalues``: one kernel launched with a new specialization-constant value every time,
each result checked against NumPy; prints the values run, wrong results, the programs
alive at the end and the process's resident memory before and after (from
``/proc/self/statm``). ``--literal`` builds every value set with its values folded in
(``PYSYCL_LITERAL_SPEC_BUILDS`` unbounded), so every value is its own program and
``PYSYCL_MAX_PROGRAMS`` is what keeps memory bounded.

``fuzz``: ``benchmarks/fuzz_syclbin.py``'s structure-aware mutations of real saved
bundles, each loaded and run in a worker process (see that file); prints the cases,
how each ended (refused by ``errc``, ran, wrong, unclean, deaths, hangs), the workers'
resident memory when started and when replaced, and writes failing cases to ``--out``.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np

import pysycl as sycl

scale_id = sycl.specialization_id(np.float32, 1.0)


@sycl.kernel
def scaled(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32],
           out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    out[i] = x[i] * h.get_specialization_constant(scale_id) + np.float32(1)


def rss_mib() -> float:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def live_programs() -> int:
    gc.collect()
    names = ("NativeProgram", "OpenCLProgram", "CudaProgram")
    return sum(type(o).__name__ in names for o in gc.get_objects())


def spec_values(n_values: int, backend: str, seed: int = 0, report_every: int = 1000) -> int:
    devs = [d for d in sycl.device.get_devices() if d.backend.name == backend]
    if not devs:
        print(f"no {backend} device", file=sys.stderr)
        return 2
    q = sycl.queue(devs[0])
    rng = np.random.default_rng(seed)
    n = 4096
    x_host = rng.standard_normal(n).astype(np.float32)
    x, out = sycl.malloc_shared(n, np.float32, q), sycl.malloc_shared(n, np.float32, q)
    np.asarray(x)[:] = x_host
    values = rng.uniform(-8, 8, n_values).astype(np.float32)
    wrong = 0
    start = time.perf_counter()
    rss = {}
    for k, v in enumerate(values):
        def cgf(cgh):
            cgh.set_specialization_constant(scale_id, v)
            cgh.parallel_for(sycl.range(n), scaled, x, out)
        q.submit(cgf).wait()
        if not np.allclose(np.asarray(out), x_host * v + np.float32(1), rtol=1e-5, atol=1e-5):
            wrong += 1
        if k == 0:
            rss["first"] = rss_mib()
        if report_every and (k + 1) % report_every == 0:
            print(f"  {k + 1} values, RSS {rss_mib():.1f} MiB, "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
    rss["last"] = rss_mib()
    elapsed = time.perf_counter() - start
    print(f"specvalues on {backend}: {n_values} values, {wrong} wrong, "
          f"{live_programs()} programs alive (PYSYCL_MAX_PROGRAMS "
          f"{sycl.config.max_programs()}), RSS after the first value "
          f"{rss['first']:.1f} MiB, after the last {rss['last']:.1f} MiB "
          f"({rss['last'] - rss['first']:+.1f} MiB), {elapsed:.1f} s")
    return 1 if wrong else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.stress")
    sub = ap.add_subparsers(dest="what", required=True)
    sv = sub.add_parser("specvalues", help="a new spec-constant value per launch")
    sv.add_argument("--values", type=int, default=10_000)
    sv.add_argument("--backend", default="native_cpu")
    sv.add_argument("--literal", action="store_true",
                    help="a build with the values folded in for every value set")
    sv.add_argument("--seed", type=int, default=0)
    fz = sub.add_parser("fuzz", help="mutated bundle files, loaded and run")
    fz.add_argument("--cases", type=int, default=100_000)
    fz.add_argument("--jobs", type=int, default=1, help="worker processes")
    fz.add_argument("--seed", type=int, default=0)
    fz.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take")
    fz.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    fz.add_argument("--minutes", type=float, default=None,
                    help="start no case after this long (the report says how many ran)")
    args = ap.parse_args(argv)
    if args.what == "fuzz":
        from . import fuzz_syclbin
        summary = fuzz_syclbin.run(args.cases, args.seed, args.jobs, args.out, args.timeout,
                                   progress=60.0, minutes=args.minutes)
        print(summary.report())
        return 1 if summary.failed() else 0
    if args.what == "specvalues":
        if args.literal:
            os.environ["PYSYCL_LITERAL_SPEC_BUILDS"] = str(10 ** 9)
        return spec_values(args.values, args.backend, args.seed)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
