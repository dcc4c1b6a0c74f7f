"""Implementations of the ``pysycl`` sub-commands, on the public API only."""
from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .. import config
from ..backends import registry
from ..errors import errc, exception
from ..runtime import filters


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

    device = sycl.device(_selector(args.device)) if args.device else None
    q = sycl.queue(device, enable_profiling=True)
    dev = q.get_device()
    rng = np.random.default_rng(2020)
    image = rng.standard_normal((args.size, args.size), dtype=np.float32)
    coefficients = rng.standard_normal((3, 3), dtype=np.float32)

    t0 = time.perf_counter()
    result = conv.do_conv(q, image, coefficients)            # builds for these values
    t_first = time.perf_counter() - t0
    end_to_end = [_timed(conv.do_conv, q, image, coefficients) for _ in range(5)]
    kernel = _kernel_times(q, conv, image, coefficients)
    expected = conv.reference(image, coefficients)
    ok = np.allclose(result, expected, rtol=1e-5, atol=1e-4)
    floor = _copy_floor(image)
    print(f"device: {dev.name} [{dev.backend.name}]")
    print(f"3x3 convolution of a {args.size}x{args.size} float32 image, coefficients as a "
          f"specialization constant")
    print(f"first run (build + run): {t_first * 1e3:.1f} ms")
    print(f"kernel, median of 5 (event profiling): {np.median(kernel) * 1e3:.2f} ms; "
          f"end to end with buffers and copies: {np.median(end_to_end) * 1e3:.2f} ms; "
          f"memory floor (np.copyto): {floor * 1e3:.2f} ms")
    print("result matches NumPy" if ok else
          f"MISMATCH: max abs error {np.max(np.abs(result - expected))}")
    return 0 if ok else 1


def _timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _kernel_times(q, conv, image, coefficients) -> list[float]:
    """Kernel execution times (seconds) of 5 launches, from event profiling."""
    import pysycl as sycl

    out = np.empty_like(image)
    times = []
    with sycl.buffer(image) as inp, sycl.buffer(out) as res:
        for _ in range(5):
            ev = conv.submit_conv(q, inp, res, coefficients)
            ev.wait()
            info = sycl.info.event_profiling
            times.append((ev.get_profiling_info(info.command_end)
                          - ev.get_profiling_info(info.command_start)) * 1e-9)
    return times


def _selector(text: str):
    """A device selector from a ``PYSYCL_DEVICE_SELECTOR`` string (``opencl:0``,
    ``cuda:gpu``, ``native_cpu``, ...), read by the same parser as the variable; the first
    device that passes wins."""
    import pysycl as sycl

    terms = filters.parse(text)
    passing = [d for d in sycl.device.get_devices()
               if filters.matches(terms, d.backend.name, d.device_type.name,
                                  _backend_index(d))]
    if not passing:
        raise exception(errc.runtime, f"--device {text!r}: no device passes that filter "
                        "(pysycl ls lists the devices)")
    first = passing[0]
    return lambda dev: 1 if dev == first else -1


def _backend_index(dev) -> int:
    import pysycl as sycl

    same = [d for d in sycl.device.get_devices() if d.backend == dev.backend]
    return same.index(dev)


def _copy_floor(image: np.ndarray) -> float:
    dst = np.empty_like(image)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, image)
        best = min(best, time.perf_counter() - t0)
    return best


def _announce_import(source: str) -> None:
    """Kernels are found by importing their modules: say so, as the top-level code runs."""
    print(f"importing {source} (its top-level code runs)", file=sys.stderr)


def _import_source(source: str):
    """Import ``source`` (a FILE.py or a module name): its top-level code runs, as for
    any import; a missing file or module is one line, not a traceback."""
    path = Path(source)
    if path.suffix == ".py":
        if not path.is_file():
            raise exception(errc.invalid, f"{source}: no such file")
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.parent.resolve()))
        _announce_import(source)
        spec.loader.exec_module(module)
        return module
    try:
        if importlib.util.find_spec(source) is not None:
            _announce_import(source)
        return importlib.import_module(source)
    except ModuleNotFoundError as e:
        if e.name is None or not source.startswith(e.name):
            raise  # the module exists; something it imports does not
        raise exception(errc.invalid, f"{source}: no such file or module "
                        f"(give FILE.py or an importable module name)") from None


def cmd_compile(args) -> int:
    import pysycl as sycl
    from pysycl.bundle import aot

    modules = [_import_source(s) for s in args.sources]
    targets = [t.strip() for t in args.target.split(",") if t.strip()]
    progress = _progress_line if sys.stderr.isatty() else None
    kb = aot.compile_modules(modules, targets, args.state, cpu=args.cpu, progress=progress)
    sycl.save_kernel_bundle(kb, args.output)
    print(f"wrote {args.output}: {len(list(kb))} images, kernels: "
          + ", ".join(k.get_name() for k in kb.get_kernel_ids()))
    return 0


def _progress_line(done: int, total: int, what: str) -> None:
    """``[3/20] building mod.k for native_cpu`` on one terminal line (stderr is a tty)."""
    line = f"[{done}/{total}] building {what}" if what else f"[{done}/{total}] built"
    width = shutil.get_terminal_size((80, 20)).columns - 1
    sys.stderr.write("\r" + line[:width].ljust(width) + ("\n" if done == total else ""))
    sys.stderr.flush()


def cmd_trace(args) -> int:
    """Run ``args.script`` in a child process with ``PYSYCL_TRACE`` set (the trace is
    written when it exits); its exit status is ours."""
    script = Path(args.script)
    if not script.is_file():
        raise exception(errc.invalid, f"{args.script}: no such file")
    output = os.path.abspath(args.output or f"{script.with_suffix('')}.trace.json")
    env = config.environ_with(PYSYCL_TRACE=output)
    status = subprocess.run([sys.executable, str(script), *args.script_args], env=env).returncode
    if os.path.exists(output):
        print(f"trace written to {output} (open it in https://ui.perfetto.dev or "
              "chrome://tracing)", file=sys.stderr)
    return status


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
