"""The workloads: each runs pysycl and the installed peers on the same data in one run."""
from __future__ import annotations


import numpy as np

try:   # SciPy is an optional peer
    from scipy import ndimage, signal
except ImportError:
    ndimage = signal = None

import pysycl as sycl

from . import kernels as K
from . import peers_numba, peers_opencl
from .harness import Report, environment, median_time

RNG = np.random.default_rng(2020)


def _usm(q, host: np.ndarray):
    a = sycl.malloc_shared(host.shape, host.dtype, q)
    np.asarray(a)[...] = host
    return a


def _copy_floor(report: Report, workload: str, dev: str, src: np.ndarray) -> None:
    dst = np.empty_like(src)
    report.run(workload, dev, "memory floor (np.copyto)", lambda: np.copyto(dst, src), None,
               is_floor=True)


def device_label(device) -> str:
    """The table's device column: the name and the backend (the native CPU device and
    the OpenCL CPU device are both "Intel(R) Xeon(R) Processor"), so pysycl on OpenCL is
    compared with OpenCL C and pysycl on the native CPU with Numba."""
    return f"{device.name} [{str(device.backend).split('.')[-1]}]"


def _backend(q) -> str:
    return str(q.get_device().backend).split(".")[-1]


def checked_build():
    """``PYSYCL_DEBUG=bounds`` while launchers are made (a checked build)."""
    return environment("PYSYCL_DEBUG", "bounds")


def _timed(result, launch):
    """A benchmark callable: its first call (``Report.run``'s check) runs ``result()``
    (launch, wait, read the output back); the timed calls run ``launch()`` only: the
    kernel launch and the wait for it, with the data already resident. pysycl and the
    OpenCL C peers are timed alike."""
    state = {"checked": False}

    def fn():
        if not state["checked"]:
            state["checked"] = True
            return result()
        return launch()
    return fn


def conv3x3(report: Report, q, n: int, opencl_ctx=None) -> None:
    dev = device_label(q.get_device())
    img = RNG.standard_normal((n, n), dtype=np.float32)
    coeff = RNG.standard_normal((3, 3), dtype=np.float32)
    padded = np.pad(img, 1)
    expected = sum(coeff[i, j] * padded[i:i + n, j:j + n] for i in range(3) for j in range(3))
    wl = f"conv3x3 {n}x{n}"
    out = np.empty_like(img)
    b_in, b_out = sycl.buffer(img), sycl.buffer(out)
    d_coeff = _usm(q, coeff.ravel())

    def launch_args():
        def cgf(cgh):
            cgh.parallel_for(sycl.range(n, n), K.conv3x3_args, d_coeff,
                             sycl.accessor(b_in, cgh, sycl.read_only),
                             sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))
        q.submit(cgf).wait()

    def launch_spec(bundle=None):
        def cgf(cgh):
            if bundle is None:
                cgh.set_specialization_constant(K.coeff_id, coeff)
            else:
                cgh.use_kernel_bundle(bundle)
            cgh.parallel_for(sycl.range(n, n), K.conv3x3_spec,
                             sycl.accessor(b_in, cgh, sycl.read_only),
                             sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))
        q.submit(cgf).wait()

    def result(launch):
        def run():
            launch()
            with sycl.host_accessor(b_out, sycl.read_only) as v:
                return np.array(v)
        return run

    spec_label = "native" if _backend(q) == "opencl" else "literal"
    report.run(wl, dev, "pysycl (args)", _timed(result(launch_args), launch_args), expected,
               is_pysycl=True)
    # The same launch in a checked build (every accessor and USM index checked; a queue
    # of its own, whose launcher is made while PYSYCL_DEBUG=bounds is set).
    checked_q = sycl.queue(q.get_device())

    def launch_checked():
        def cgf(cgh):
            cgh.parallel_for(sycl.range(n, n), K.conv3x3_args, d_coeff,
                             sycl.accessor(b_in, cgh, sycl.read_only),
                             sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))
        checked_q.submit(cgf).wait()
        checked_q.wait_and_throw()
    with checked_build():
        report.run(wl, dev, "pysycl (args, bounds-checked)",
                   _timed(result(launch_checked), launch_checked), expected, is_pysycl=True)
    report.run(wl, dev, f"pysycl ({spec_label} spec const)",
               _timed(result(launch_spec), launch_spec), expected, is_pysycl=True)
    kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                kernel_ids=[sycl.get_kernel_id(K.conv3x3_spec)])
    kb.set_specialization_constant(K.coeff_id, coeff)
    emulated = sycl.build(kb, properties=sycl.properties(sycl.spec_constant_lowering("emulated")))
    launch_emulated = lambda: launch_spec(emulated)   # noqa: E731
    report.run(wl, dev, "pysycl (emulated spec const)",
               _timed(result(launch_emulated), launch_emulated), expected, is_pysycl=True)
    if _backend(q) == "native_cpu" and peers_numba.available():
        nout = np.empty_like(img)
        report.run(wl, dev, "numba parallel",
                   lambda: (peers_numba.conv3x3(img, coeff, nout), nout)[1], expected)
    if _backend(q) == "native_cpu" and ndimage is not None:
        sout = np.empty_like(img)
        report.run(wl, dev, "scipy.ndimage.correlate",
                   lambda: ndimage.correlate(img, coeff, output=sout, mode="constant"),
                   expected)
    if _backend(q) == "opencl" and opencl_ctx is not None:
        _opencl_conv(report, wl, dev, opencl_ctx, img, coeff, expected)
    _copy_floor(report, wl, dev, img)
    report.flush()
    b_in.close(); b_out.close(); sycl.free(d_coeff, q)


def _opencl_conv(report, wl, dev, ctx, img, coeff, expected):
    import pyopencl as cl

    cq = cl.CommandQueue(ctx)
    n = img.shape[0]
    mf = cl.mem_flags
    d_in = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=img)
    d_out = cl.Buffer(ctx, mf.WRITE_ONLY, img.nbytes)
    d_co = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=coeff.ravel())
    out = np.empty_like(img)
    k_args = cl.Kernel(peers_opencl.build(ctx, peers_opencl.CONV_SRC), "conv3x3")
    k_args.set_args(d_in, d_out, np.int32(n), np.int32(n), d_co)
    k_lit = cl.Kernel(peers_opencl.build(ctx, peers_opencl.CONV_SRC, {
        "LITERAL": None, "COEFFS": peers_opencl.coeff_literal(coeff)}), "conv3x3")
    k_lit.set_args(d_in, d_out, np.int32(n), np.int32(n))

    def launch(k, keep=(d_in, d_out, d_co)):   # kernel args do not keep the cl.Buffers alive
        cl.enqueue_nd_range_kernel(cq, k, (n, n), None)
        cq.finish()

    def result(k):
        launch(k)
        cl.enqueue_copy(cq, out, d_out)
        return out
    report.run(wl, dev, "opencl-c (args)", _timed(lambda: result(k_args), lambda: launch(k_args)),
               expected)
    report.run(wl, dev, "opencl-c (#define)", _timed(lambda: result(k_lit), lambda: launch(k_lit)),
               expected)


def fir(report: Report, q, n: int, taps_counts=(7, 16, 33), opencl_ctx=None) -> None:
    dev = device_label(q.get_device())
    spec_label = "native" if _backend(q) == "opencl" else "literal"
    for ntaps in taps_counts:
        wl = f"fir {ntaps} taps, {n // (1 << 20)}M"
        x = RNG.standard_normal(n + ntaps, dtype=np.float32)
        taps = RNG.standard_normal(ntaps, dtype=np.float32)
        expected = np.convolve(x, taps[::-1], mode="valid")[:n].astype(np.float32)
        dx, dt, dy = _usm(q, x), _usm(q, taps), sycl.malloc_shared((n,), np.float32, q)

        def launch_spec():
            def cgf(cgh):
                cgh.set_specialization_constant(K.ntaps_id, np.int32(ntaps))
                cgh.parallel_for(sycl.range(n), K.fir_spec, dx, dt, dy)
            q.submit(cgf).wait()

        def launch_args():
            q.parallel_for(sycl.range(n), K.fir_args, dx, dt, dy, np.int32(ntaps)).wait()

        def result(launch):
            return lambda: (launch(), np.asarray(dy))[1]
        report.run(wl, dev, f"pysycl ({spec_label} spec const)",
                   _timed(result(launch_spec), launch_spec), expected, is_pysycl=True,
                   rtol=1e-3, atol=1e-3)
        report.run(wl, dev, "pysycl (runtime arg)", _timed(result(launch_args), launch_args),
                   expected, is_pysycl=True, rtol=1e-3, atol=1e-3)
        kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                    devices=[q.get_device()],
                                    kernel_ids=[sycl.get_kernel_id(K.fir_spec)])
        kb.set_specialization_constant(K.ntaps_id, np.int32(ntaps))
        emulated = sycl.build(kb, properties=sycl.properties(
            sycl.spec_constant_lowering("emulated")))

        def launch_emulated():
            def cgf(cgh):
                cgh.use_kernel_bundle(emulated)
                cgh.parallel_for(sycl.range(n), K.fir_spec, dx, dt, dy)
            q.submit(cgf).wait()
        report.run(wl, dev, "pysycl (emulated spec const)",
                   _timed(result(launch_emulated), launch_emulated), expected,
                   is_pysycl=True, rtol=1e-3, atol=1e-3)
        if _backend(q) == "native_cpu" and peers_numba.available():
            ny = np.empty(n, np.float32)
            report.run(wl, dev, "numba parallel",
                       lambda: (peers_numba.fir(x, taps, ny, ntaps), ny)[1], expected,
                       rtol=1e-3, atol=1e-3)
        if _backend(q) == "native_cpu" and signal is not None:
            report.run(wl, dev, "scipy.signal.correlate",
                       lambda: signal.correlate(x, taps, mode="valid", method="direct")[:n],
                       expected, rtol=1e-3, atol=1e-3)
        if _backend(q) == "opencl" and opencl_ctx is not None:
            _opencl_fir(report, wl, dev, opencl_ctx, x, taps, n, ntaps, expected)
        elif _backend(q) == "native_cpu" and opencl_ctx is not None:
            # The same CPU through Intel's OpenCL runtime, timed interleaved with the
            # native rows: their ratio no longer depends on the load of another moment.
            _opencl_fir(report, wl, dev, opencl_ctx, x, taps, n, ntaps, expected,
                        kinds=("#define",))
        report.flush()
        for a in (dx, dt, dy):
            sycl.free(a, q)


def _opencl_fir(report, wl, dev, ctx, x, taps, n, ntaps, expected,
                kinds=("runtime arg", "#define")):
    import pyopencl as cl

    cq = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    d_x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    d_t = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=taps)
    d_y = cl.Buffer(ctx, mf.WRITE_ONLY, n * 4)
    y = np.empty(n, np.float32)
    k_arg = cl.Kernel(peers_opencl.build(ctx, peers_opencl.FIR_SRC), "fir")
    k_arg.set_args(d_x, d_t, d_y, np.int32(ntaps))
    k_def = cl.Kernel(peers_opencl.build(ctx, peers_opencl.FIR_SRC, {"NTAPS": ntaps}), "fir")
    k_def.set_args(d_x, d_t, d_y)

    def launch(k, keep=(d_x, d_t, d_y)):   # kernel args do not keep the cl.Buffers alive
        cl.enqueue_nd_range_kernel(cq, k, (n,), None)
        cq.finish()

    def result(k):
        launch(k)
        cl.enqueue_copy(cq, y, d_y)
        return y
    for kind, k in (("runtime arg", k_arg), ("#define", k_def)):
        if kind in kinds:
            report.run(wl, dev, f"opencl-c ({kind})",
                       _timed(lambda k=k: result(k), lambda k=k: launch(k)), expected,
                       rtol=1e-3, atol=1e-3)


def saxpy(report: Report, q, n: int) -> None:
    dev = device_label(q.get_device())
    x = RNG.standard_normal(n, dtype=np.float32)
    y0 = RNG.standard_normal(n, dtype=np.float32)
    a = np.float32(2.5)
    dx, dy = _usm(q, x), _usm(q, y0)
    wl = f"saxpy {n // (1 << 20)}M"

    def run():
        np.asarray(dy)[...] = y0
        q.parallel_for(sycl.range(n), K.saxpy, a, dx, dy).wait()
        return np.asarray(dy)
    report.run(wl, dev, "pysycl", run, a * x + y0, is_pysycl=True)
    ny = np.empty_like(y0)
    report.run(wl, dev, "numpy", lambda: np.add(a * x, y0, out=ny), a * x + y0)
    if peers_numba.available():
        def nb():
            ny[...] = y0
            peers_numba.saxpy(a, x, ny)
            return ny
        report.run(wl, dev, "numba parallel", nb, a * x + y0)
    _copy_floor(report, wl, dev, x)
    report.flush()
    sycl.free(dx, q); sycl.free(dy, q)


def launch_overhead(report: Report, q, launches: int = 10_000) -> None:
    """An empty kernel over range(1) with two USM arguments: submit + wait, and a burst
    of asynchronous launches then one wait. On an OpenCL device the OpenCL C peer runs
    on the same device, interleaved with pysycl (the load of this shared machine changes
    within seconds): with ``cl.Buffer`` arguments, and with the same USM arguments set by
    ``clSetKernelArgMemPointerINTEL`` (the Intel runtime's enqueue costs more with USM
    arguments; that row is the floor pysycl's USM launches can reach)."""
    dev = device_label(q.get_device())
    a = sycl.malloc_shared((16,), np.float32, q)
    b = sycl.malloc_shared((16,), np.float32, q)
    q.parallel_for(sycl.range(1), K.empty, a, b).wait()   # build once

    def sync():
        q.parallel_for(sycl.range(1), K.empty, a, b).wait()

    def burst():
        for _ in range(launches):
            q.parallel_for(sycl.range(1), K.empty, a, b)
        q.wait()
    impls = {"pysycl": (sync, burst)}
    if _backend(q) == "opencl":
        try:
            impls.update(_opencl_launch_peers(q.get_native().context, launches, usm=(a, b)))
        except Exception as e:  # noqa: BLE001 - the peer is optional
            print(f"  (no OpenCL C launch peer: {type(e).__name__}: {e})")
    _time_launches(report, dev, impls, launches)
    sycl.free(a, q); sycl.free(b, q)


def _time_launches(report: Report, dev: str, impls: dict, launches: int) -> None:
    """Median per-launch times of each impl's (sync, burst), timed round-robin."""
    import statistics
    import time
    names = list(impls)
    for sync, burst in impls.values():   # warm up
        for _ in range(100):
            sync()
        burst()
    samples = {n: [] for n in names}
    for _ in range(2000):
        for n in names:
            t0 = time.perf_counter()
            impls[n][0]()
            samples[n].append(time.perf_counter() - t0)
    for n in names:
        report.add(_m("launch: submit + wait", dev, n, statistics.median(samples[n]),
                      peer=n != "pysycl"))
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for _ in range(3):
        for n in names:
            t0, c0 = time.perf_counter(), time.process_time()
            impls[n][1]()
            wall[n].append(time.perf_counter() - t0)
            cpu[n].append(time.process_time() - c0)
    for n in names:
        report.add(_m(f"launch: async x{launches} (per launch)", dev, n,
                      statistics.median(wall[n]) / launches, peer=n != "pysycl"))
    for n in names:
        report.add(_m(f"launch: async x{launches} (per launch, CPU time)", dev, n,
                      statistics.median(cpu[n]) / launches, peer=n != "pysycl"))


def _opencl_launch_peers(ctx, launches: int, usm=None) -> dict:
    """{impl name: (sync, burst)} of pyopencl launching OpenCL C's empty kernel on its
    own queue of ``ctx``: with buffer arguments, and (``usm``: two USM arrays of that
    context) with USM pointer arguments."""
    import pyopencl as cl

    cq = cl.CommandQueue(ctx)
    prg = peers_opencl.build(ctx, peers_opencl.SAXPY_SRC)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    k = cl.Kernel(prg, "empty")
    k.set_args(buf, buf)
    kernels = {"opencl-c via pyopencl": k}
    if usm is not None:
        from pysycl.backends.opencl import cl_ext, environment
        api = cl_ext.ClApi.load(environment.icd_loader_library())
        intel = api.intel_usm(ctx.devices[0].platform.int_ptr) if api else None
        if intel is not None:
            ku = cl.Kernel(prg, "empty")
            for i, arr in enumerate(usm):
                intel.set_arg(ku.int_ptr, i, arr.ptr)
            kernels["opencl-c via pyopencl (USM args)"] = ku
    enqueue = cl.enqueue_nd_range_kernel
    out = {}
    for name, kern in kernels.items():
        def one(kern=kern):
            enqueue(cq, kern, (1,), None)
            cq.finish()

        def burst(kern=kern, keep=(buf, usm)):   # kernel args do not keep memory alive
            for _ in range(launches):
                enqueue(cq, kern, (1,), None)
            cq.finish()
        out[name] = (one, burst)
    return out


def _cpu_time(fn, repeat: int = 3) -> float:
    """Median process CPU time of ``fn()``: on a shared machine, what the launches cost
    without the time other processes took the core away."""
    import statistics
    import time
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def opencl_launch_overhead(report: Report, ctx, launches: int = 10_000,
                           device_label: str | None = None) -> None:
    # Same row group as the native CPU device's launch rows (device_label), so the table
    # gives the ratio; the impl names the runtime.
    dev = device_label or ("opencl " + ctx.devices[0].name)
    impls = _opencl_launch_peers(ctx, launches)
    one, burst = impls["opencl-c via pyopencl"]
    report.add(_m("launch: submit + wait", dev, "opencl-c via pyopencl",
                  median_time(one, repeat=2000, warmup=100), peer=True))
    report.add(_m(f"launch: async x{launches} (per launch)", dev, "opencl-c via pyopencl",
                  median_time(burst, repeat=3, warmup=1) / launches, peer=True))
    report.add(_m(f"launch: async x{launches} (per launch, CPU time)", dev,
                  "opencl-c via pyopencl", _cpu_time(burst) / launches, peer=True))


def _m(workload, dev, impl, seconds, peer=False):
    from .harness import Measurement
    return Measurement(workload, dev, impl, seconds, True, is_pysycl=not peer)


def reduce(report: Report, q, quick: bool = False, opencl_ctx=None) -> None:
    dev = device_label(q.get_device())
    n = (1 << 20) if quick else (1 << 24)
    x = RNG.random(n, dtype=np.float32)
    dx = _usm(q, x)
    total = sycl.malloc_shared((1,), np.float32, q)
    wl = f"reduce sum {n >> 20}M (wg {K.WG})"
    expected = np.array([x.astype(np.float64).sum()], np.float32)

    def run():
        np.asarray(total)[0] = 0
        def cgf(cgh):
            cgh.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(K.WG)), K.reduce_sum,
                             dx, total, cgh.local_accessor(np.float32, (K.WG,)))
        q.submit(cgf).wait()
        return np.asarray(total).copy()
    report.run(wl, dev, "pysycl", run, expected, is_pysycl=True, rtol=1e-3)
    report.run(wl, dev, "numpy", lambda: np.array([x.sum()], np.float32), expected, rtol=1e-3)
    if peers_numba.available():
        report.run(wl, dev, "numba parallel",
                   lambda: np.array([peers_numba.reduce_sum(x)], np.float32), expected, rtol=1e-3)
    if _backend(q) == "opencl" and opencl_ctx is not None:
        _opencl_reduce(report, wl, dev, opencl_ctx, x, expected)
    report.flush()
    sycl.free(dx, q); sycl.free(total, q)


def reduction(report: Report, q, quick: bool = False) -> None:
    """A float32 sum with ``sycl.reduction`` (SYCL 2020 4.10.6) against the memory floor,
    the time to read the data once: NumPy's max (a SIMD streaming read; a pysycl kernel
    that only reads does not vectorise a store it never makes, so it measures the
    compiler, not the memory), and NumPy's sum as the peer."""
    dev = device_label(q.get_device())
    n = (1 << 20) if quick else (1 << 24)
    x = RNG.random(n, dtype=np.float32)
    dx = _usm(q, x)
    total = sycl.malloc_shared((1,), np.float32, q)
    red = sycl.reduction(total, sycl.plus(), sycl.property.reduction.initialize_to_identity())
    wl = f"sycl.reduction sum {n >> 20}M f32"
    expected = np.array([x.astype(np.float64).sum()], np.float32)

    def run():
        q.parallel_for(n, K.reduction_sum, dx, red).wait()
        return np.asarray(total).copy()
    report.run(wl, dev, "pysycl", run, expected, is_pysycl=True, rtol=1e-5, repeat=21)
    report.run(wl, dev, "memory floor (np.max: one read)", lambda: x.max(), None,
               is_floor=True, repeat=21)
    report.run(wl, dev, "numpy sum", lambda: np.array([x.sum()], np.float32), expected,
               rtol=1e-5, repeat=21)
    report.flush()
    sycl.free(dx, q); sycl.free(total, q)


def _opencl_reduce(report, wl, dev, ctx, x, expected):
    """The same kernel in OpenCL C on the same driver (Intel's CPU runtime runs barriers
    in loops and a float atomic after a barrier slowly, whoever wrote the kernel)."""
    import pyopencl as cl

    cq = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    d_x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    d_t = cl.Buffer(ctx, mf.READ_WRITE, 4)
    out = np.zeros(1, np.float32)
    k = cl.Kernel(peers_opencl.build(ctx, peers_opencl.REDUCE_SRC), "reduce_sum")
    k.set_args(d_x, d_t, cl.LocalMemory(4 * K.WG))

    def run(keep=(d_x, d_t)):   # kernel args do not keep the cl.Buffers alive
        cl.enqueue_copy(cq, d_t, np.zeros(1, np.float32))
        cl.enqueue_nd_range_kernel(cq, k, (x.size,), (K.WG,))
        cl.enqueue_copy(cq, out, d_t)
        return out
    report.run(wl, dev, "opencl-c", run, expected, rtol=1e-3)


def histogram(report: Report, q, quick: bool = False) -> None:
    dev = device_label(q.get_device())
    n, nbins = ((1 << 20) if quick else (1 << 24)), 256
    x = RNG.integers(0, 1 << 20, n, dtype=np.int32)
    dx = _usm(q, x)
    bins = sycl.malloc_shared((nbins,), np.int32, q)
    wl = f"histogram {n >> 20}M, {nbins} bins"
    expected = np.bincount(x % nbins, minlength=nbins).astype(np.int32)

    def run():
        np.asarray(bins)[...] = 0
        q.parallel_for(sycl.range(n), K.histogram, dx, bins, np.int32(nbins)).wait()
        return np.asarray(bins).copy()
    report.run(wl, dev, "pysycl (atomics)", run, expected, is_pysycl=True)
    items = -(-n // K.HIST_CHUNK)
    items = -(-items // K.HIST_WG) * K.HIST_WG

    def run_local():
        np.asarray(bins)[...] = 0
        def cgf(cgh):
            cgh.parallel_for(sycl.nd_range(sycl.range(items), sycl.range(K.HIST_WG)),
                             K.histogram_local, dx, bins, np.int64(n), np.int32(nbins),
                             cgh.local_accessor(np.int32, (nbins,)))
        q.submit(cgf).wait()
        return np.asarray(bins).copy()
    report.run(wl, dev, "pysycl (local histograms)", run_local, expected, is_pysycl=True)
    report.run(wl, dev, "numpy bincount",
               lambda: np.bincount(x % nbins, minlength=nbins).astype(np.int32), expected)
    if peers_numba.available():
        out = np.empty(nbins, np.int32)
        report.run(wl, dev, "numba parallel",
                   lambda: (peers_numba.histogram(x, nbins, out), out)[1], expected)
    report.flush()
    sycl.free(dx, q); sycl.free(bins, q)


def matmul(report: Report, q, quick: bool = False) -> None:
    dev = device_label(q.get_device())
    n = 256 if quick else 1024
    a = RNG.standard_normal((n, n), dtype=np.float32)
    b = RNG.standard_normal((n, n), dtype=np.float32)
    da, db, dc = _usm(q, a), _usm(q, b), sycl.malloc_shared((n, n), np.float32, q)
    wl = f"matmul {n}x{n} (tiles {K.TILE})"
    expected = a @ b

    def run():
        def cgf(cgh):
            cgh.parallel_for(sycl.nd_range(sycl.range(n, n), sycl.range(K.TILE, K.TILE)),
                             K.matmul_tiled, da, db, dc, np.int64(n),
                             cgh.local_accessor(np.float32, (K.TILE, K.TILE)),
                             cgh.local_accessor(np.float32, (K.TILE, K.TILE)))
        q.submit(cgf).wait()
        return np.asarray(dc)
    report.run(wl, dev, "pysycl (local tiles)", run, expected, is_pysycl=True, rtol=1e-3,
               atol=1e-2, repeat=3)
    report.run(wl, dev, "numpy (BLAS)", lambda: a @ b, expected, rtol=1e-3, atol=1e-2)
    if peers_numba.available():
        out = np.empty((n, n), np.float32)
        report.run(wl, dev, "numba parallel", lambda: (peers_numba.matmul(a, b, out), out)[1],
                   expected, rtol=1e-3, atol=1e-2, repeat=3)
    report.flush()
    for p in (da, db, dc):
        sycl.free(p, q)


def build(report: Report, q, quick: bool = False) -> None:
    """Build latency: cold build, a new spec-constant value set, a disk-cache hit in a
    fresh process; Numba's first-call compile for comparison."""
    from . import build_latency
    for m in build_latency.measure(q):
        report.add(m)


def restrict(report: Report, q, quick: bool = False) -> None:
    """``sycl.restrict`` on the native CPU (bench_restrict's ``lut`` pair: the table
    index is data, so only ``noalias`` lets LLVM vectorise). The plain kernel is the peer,
    so the ratio column reads restrict / plain."""
    if q.get_device().backend.name != "native_cpu":
        return
    from . import bench_restrict as B
    dev, n = device_label(q.get_device()), (1 << 20) if quick else (4 << 20)
    x = RNG.random(n, dtype=np.float32)
    ix = RNG.integers(0, B.LUT_SIZE, n).astype(np.int32)
    lut = RNG.random(B.LUT_SIZE + 1, dtype=np.float32)
    dx, dix, dlut, do = _usm(q, x), _usm(q, ix), _usm(q, lut), _usm(q, np.zeros(n, np.float32))
    expected = lut[ix] * x + lut[ix + 1]
    wl = f"restrict lut {n // (1 << 20)}M"
    for impl, k in (("pysycl (restrict)", B.lut_restrict), ("pysycl (no restrict)", B.lut_plain)):
        def run(k=k):
            q.parallel_for(sycl.range(n), k, do, dx, dix, dlut).wait()
            return np.asarray(do)
        report.run(wl, dev, impl, run, expected, is_pysycl=k is B.lut_restrict, repeat=15,
                   rtol=1e-6, atol=0)
    report.flush()   # timed before the memory goes
    for p in (dx, dix, dlut, do):
        sycl.free(p, q)
