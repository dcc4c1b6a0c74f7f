"""Implementations of the ``pysycl`` sub-commands, on the public API only."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

from ..backends import registry


def cmd_ls(args) -> int:
    import pysycl as sycl

    for plat in sycl.platform.get_platforms():
        for i, dev in enumerate(plat.get_devices()):
            kind = dev.device_type.name
            print(f"[{dev.backend.name}:{kind}:{i}] {plat.name}, {dev.name} [{dev.driver_version}]")
            if args.verbose:
                print(f"    max_compute_units={dev.max_compute_units} "
                      f"max_work_group_size={dev.max_work_group_size} "
                      f"global_mem_size={dev.global_mem_size} local_mem_size={dev.local_mem_size}")
                print("    aspects: " + ", ".join(sorted(a.name for a in dev.aspects)))
    if args.verbose:
        for name in registry.BACKENDS:
            reason = registry.why_absent(name)
            if reason is not None:
                print(f"[{name}] no devices: {reason}")
    return 0


def cmd_demo(args) -> int:
    import pysycl as sycl
    from pysycl.examples import convolution as conv

    q = sycl.queue(sycl.device(_selector(args.device)) if args.device else None)
    dev = q.get_device()
    rng = np.random.default_rng(2020)
    image = rng.standard_normal((args.size, args.size), dtype=np.float32)
    coefficients = rng.standard_normal((3, 3), dtype=np.float32)

    t0 = time.perf_counter()
    result = conv.do_conv(q, image, coefficients)            # builds for these values
    t_first = time.perf_counter() - t0
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        conv.do_conv(q, image, coefficients)
        runs.append(time.perf_counter() - t0)
    expected = conv.reference(image, coefficients)
    ok = np.allclose(result, expected, rtol=1e-5, atol=1e-4)
    floor = _copy_floor(image)
    print(f"device: {dev.name} [{dev.backend.name}]")
    print(f"3x3 convolution of a {args.size}x{args.size} float32 image, coefficients as a "
          f"specialization constant")
    print(f"first run (build + run): {t_first * 1e3:.1f} ms; "
          f"median of 5: {np.median(runs) * 1e3:.2f} ms; "
          f"memory floor (np.copyto): {floor * 1e3:.2f} ms")
    print("result matches NumPy" if ok else
          f"MISMATCH: max abs error {np.max(np.abs(result - expected))}")
    return 0 if ok else 1


def _selector(text: str):
    def score(dev) -> int:
        backend, kind = dev.backend.name, dev.device_type.name
        want_backend, _, want_kind = text.partition(":")
        if backend != want_backend:
            return -1
        return 1 if want_kind in ("", "*", kind) else -1
    return score


def _copy_floor(image: np.ndarray) -> float:
    dst = np.empty_like(image)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, image)
        best = min(best, time.perf_counter() - t0)
    return best


def _import_source(source: str):
    path = Path(source)
    if path.suffix == ".py" and path.exists():
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.parent.resolve()))
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(source)


def cmd_compile(args) -> int:
    import pysycl as sycl
    from pysycl.bundle import aot

    modules = [_import_source(s) for s in args.sources]
    targets = [t.strip() for t in args.target.split(",") if t.strip()]
    kb = aot.compile_modules(modules, targets, args.state)
    sycl.save_kernel_bundle(kb, args.output)
    print(f"wrote {args.output}: {len(list(kb))} images, kernels: "
          + ", ".join(k.get_name() for k in kb.get_kernel_ids()))
    return 0


def cmd_inspect(args) -> int:
    from pysycl.bundle import aot

    print(aot.describe_file(args.file), end="")
    return 0


def cmd_cache(args) -> int:
    from pysycl.bundle import cache

    if args.action == "info":
        info = cache.cache_info()
        for key, value in (info.items() if isinstance(info, dict) else vars(info).items()):
            print(f"{key}: {value}")
    else:
        removed = cache.cache_clear()
        print(f"cache cleared: {removed} entries removed from {cache.cache_info()['path']}")
    return 0
