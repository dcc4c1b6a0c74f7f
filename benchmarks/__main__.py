"""``python -m benchmarks``: every benchmark on every available device, peers in the same
run, a table of times and ratios, and JSON in benchmarks/results/."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from . import suite
from .harness import Report

WORKLOADS = ("conv", "fir", "saxpy", "reduce", "histogram", "matmul", "launch", "build")


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
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    report = Report()
    ocl = _opencl_peer_context()
    conv_n = 1024 if args.quick else 4096
    fir_n = (1 << 20) if args.quick else (4 << 20)
    for dev in sycl.device.get_devices():
        q = sycl.queue(dev)
        print(f"== {dev.name} [{dev.backend}]", flush=True)
        if "conv" in only:
            suite.conv3x3(report, q, conv_n, ocl)
        if "fir" in only:
            suite.fir(report, q, fir_n, opencl_ctx=ocl)
        if "saxpy" in only:
            suite.saxpy(report, q, fir_n * 4)
        for name in ("reduce", "histogram", "matmul", "build"):
            fn = getattr(suite, name, None)
            if name in only and fn is not None:
                fn(report, q, quick=args.quick)
        if "launch" in only:
            suite.launch_overhead(report, q)
        ocl = None   # the OpenCL C peers run once
    if "launch" in only and _opencl_peer_context() is not None:
        suite.opencl_launch_overhead(report, _opencl_peer_context())
    print()
    print(f"date: {time.strftime('%Y-%m-%d')}")
    print(report.table())
    report.write_json(Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
