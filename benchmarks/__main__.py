"""``python -m benchmarks``: every benchmark on every available device, peers in the same
run, a table of times and ratios, and JSON in benchmarks/results/."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from . import autotune, program_size, suite, user_forms
from .harness import Report

WORKLOADS = ("conv", "fir", "saxpy", "forms", "reduce", "reduction", "histogram", "matmul",
             "restrict", "launch", "build", "program", "autotune")


def _opencl_peer_context():
    """A pyopencl context on the OpenCL CPU device, for the OpenCL C peers."""
    try:
        from pysycl.backends.opencl import environment
        environment.prepare()
        import pyopencl as cl
        for plat in cl.get_platforms():
            for dev in plat.get_devices():
                if dev.type & cl.device_type.CPU:
                    return cl.Context([dev])
    except Exception:
        return None
    return None


def main(argv=None) -> int:
    import pysycl as sycl

    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--only", default=",".join(WORKLOADS), help="comma list of " + ", ".join(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--json", default="benchmarks/results/latest.json")
    ap.add_argument("--backends", default="",
                    help="comma list of backends to run (native_cpu, opencl, cuda); default all")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    report = Report()
    ocl = _opencl_peer_context()
    conv_n = 1024 if args.quick else 4096
    fir_n = (1 << 20) if args.quick else (4 << 20)
    backends = {b for b in args.backends.split(",") if b}
    for dev in sycl.device.get_devices():
        backend = str(dev.backend).split(".")[-1]
        if backends and backend not in backends:
            continue
        q = sycl.queue(dev)
        print(f"== {dev.name} [{dev.backend}]", flush=True)
        steps = [("conv", lambda: suite.conv3x3(report, q, conv_n, ocl)),
                 ("fir", lambda: suite.fir(report, q, fir_n, opencl_ctx=ocl)),
                 ("saxpy", lambda: suite.saxpy(report, q, fir_n * 4)),
                 ("forms", lambda: user_forms.run(report, q, quick=args.quick))]
        steps.append(("reduce", lambda: suite.reduce(report, q, quick=args.quick,
                                                     opencl_ctx=ocl)))
        for name in ("reduction", "histogram", "matmul", "restrict", "build"):
            fn = getattr(suite, name, None)
            if fn is not None:
                steps.append((name, lambda fn=fn: fn(report, q, quick=args.quick)))
        steps.append(("launch", lambda: suite.launch_overhead(report, q)))
        steps.append(("autotune", lambda: autotune.run(report, q, quick=args.quick)))
        if backend == "native_cpu":   # bundles of 10 / 40 / 160 kernels, fresh processes
            sizes = (10, 40) if args.quick else (10, 40, 160)
            steps.append(("program", lambda: [report.add(m) for m in program_size.measure(
                q, sizes, runs=1 if args.quick else 2)]))
        for name, step in steps:
            if name not in only:
                continue
            try:   # a workload that fails on one device is reported, the rest still run
                step()
            except Exception as e:  # noqa: BLE001
                from .harness import Measurement
                report.add(Measurement(name, suite.device_label(dev), "pysycl", None, False,
                                       f"{type(e).__name__}: {e}"[:160], True))
    if "launch" in only and _opencl_peer_context() is not None:
        native = [d for d in sycl.device.get_devices()
                  if str(d.backend).split(".")[-1] == "native_cpu"]
        suite.opencl_launch_overhead(report, _opencl_peer_context(),
                                     device_label=suite.device_label(native[0]) if native
                                     else None)
    print()
    print(f"date: {time.strftime('%Y-%m-%d')}")
    print(report.table())
    report.write_json(Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
