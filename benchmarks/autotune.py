"""``sycl.autotune`` on the FIR filter and the 3x3 convolution.

    python -m benchmarks.autotune [--quick] [--backends native_cpu,opencl]
    python -m benchmarks --only autotune          (the same rows in the full table)

Each workload is one kernel with its data fixed by specialization constants (the FIR's
32 taps, the convolution's coefficients) and a choice of how much each work-item does
(outputs per work-item, a spec constant: the loop over them is unrolled in the build)
and of the work-group size. The rows, timed interleaved after each output is checked
against NumPy:

* ``autotuned (chose ...)``: launches of the ``sycl.autotune`` object once it chose;
* ``hand-picked ...``: the config written by hand (the one the other benchmarks use:
  one output per work-item, a plain range launch);
* ``best of sweep ...``: every config launched by hand and timed; the fastest.

The first launch's time (it measures every config) and the cost of finding the stored
choice again (a new ``autotune`` object, as in a later process) are printed too.
The CUDA variant is ``python -m benchmarks.gpu --only autotune``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import pysycl as sycl

from .harness import Report, environment

F32 = np.float32
R = sycl.properties(sycl.restrict)
FIR_TAPS = 32
fir_taps_id = sycl.specialization_id(np.dtype((np.float32, (FIR_TAPS,))))
conv_coeff_id = sycl.specialization_id(np.dtype((np.float32, (3, 3))))
outputs_id = sycl.specialization_id(np.int32, 1)      # outputs per work-item
RNG = np.random.default_rng(7)


# -- kernels -----------------------------------------------------------------------------
@sycl.kernel
def fir_outputs(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.annotated_ptr[F32, R],
                y: sycl.annotated_ptr[F32, R]):
    # `per` consecutive outputs per work-item: with the loop unrolled, neighbouring
    # outputs share their input loads (32 + per - 1 loads for per outputs).
    taps = h.get_specialization_constant(fir_taps_id)
    per = h.get_specialization_constant(outputs_id)
    first = it.get_id(0) * per
    for j in range(per):
        i = first + j
        acc = F32(0)
        for k in sycl.static_range(FIR_TAPS):
            acc += taps[k] * x[i + k]
        y[i] = acc


@sycl.device
def row3(inp: sycl.annotated_ptr[F32, R], r: np.int64, c: np.int64, rows: np.int64,
         cols: np.int64):
    """The pixels (r, c-1), (r, c), (r, c+1), zero outside the image."""
    left = F32(0)
    mid = F32(0)
    right = F32(0)
    if r >= 0 and r < rows:
        base = r * cols + c
        mid = inp[base]
        if c >= 1:
            left = inp[base - 1]
        if c + 1 < cols:
            right = inp[base + 1]
    return left, mid, right


@sycl.kernel
def conv3x3_rows(it: sycl.item[2], h: sycl.kernel_handler, inp: sycl.annotated_ptr[F32, R],
                 out: sycl.annotated_ptr[F32, R], rows: np.int64, cols: np.int64):
    # `per` vertically adjacent output pixels per work-item; the three input rows a
    # pixel needs roll down, so each input row is read once per work-item.
    w = h.get_specialization_constant(conv_coeff_id)
    per = h.get_specialization_constant(outputs_id)
    r0 = it.get_id(0) * per
    c = it.get_id(1)
    al, am, ar = row3(inp, r0 - 1, c, rows, cols)
    bl, bm, br = row3(inp, r0, c, rows, cols)
    for k in range(per):
        nl, nm, nr = row3(inp, r0 + k + 1, c, rows, cols)
        out[(r0 + k) * cols + c] = (w[0][0] * al + w[0][1] * am + w[0][2] * ar +
                                    w[1][0] * bl + w[1][1] * bm + w[1][2] * br +
                                    w[2][0] * nl + w[2][1] * nm + w[2][2] * nr)
        al, am, ar = bl, bm, br
        bl, bm, br = nl, nm, nr


# -- references --------------------------------------------------------------------------
def fir_reference(x: np.ndarray, taps: np.ndarray, n: int) -> np.ndarray:
    return np.correlate(x, taps, mode="valid")[:n].astype(np.float32)


def conv_reference(img: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, m = img.shape
    padded = np.pad(img, 1)
    return sum(w[i, j] * padded[i:i + n, j:j + m] for i in range(3) for j in range(3))


# -- the two workloads as (kernel, configs, launch) --------------------------------------
def fir_problem(n: int, work_groups):
    """(x, taps, configs, range per config, reference)."""
    taps = RNG.standard_normal(FIR_TAPS, dtype=np.float32)
    x = RNG.standard_normal(n + FIR_TAPS, dtype=np.float32)
    configs = [{fir_taps_id: taps, outputs_id: per, **wg}
               for per in (1, 2, 4, 8) for wg in work_groups]
    return x, taps, configs, (lambda cfg: n // cfg[outputs_id]), fir_reference(x, taps, n)


def conv_problem(n: int, work_groups):
    img = RNG.standard_normal((n, n), dtype=np.float32)
    w = RNG.standard_normal((3, 3), dtype=np.float32)
    configs = [{conv_coeff_id: w, outputs_id: per, **wg}
               for per in (1, 2, 4, 8) for wg in work_groups]
    return img, w, configs, (lambda cfg: (n // cfg[outputs_id], n)), conv_reference(img, w)


def label(cfg: dict) -> str:
    """A config without its data: ``{outputs=4, work_group=(64,)}``."""
    parts = [f"outputs={cfg[outputs_id]}"]
    if "work_group" in cfg:
        parts.append(f"work_group={cfg['work_group']}")
    return "{" + ", ".join(parts) + "}"


def launch_config(q, kernel, cfg: dict, space, args):
    """One hand-written launch of ``kernel`` with ``cfg`` (what autotune automates)."""
    rng = space(cfg)
    if "work_group" in cfg:
        rng = sycl.nd_range(sycl.range(*np.atleast_1d(rng)), sycl.range(*cfg["work_group"]))

    def cgf(cgh):
        for sid, value in cfg.items():
            if sid != "work_group":
                cgh.set_specialization_constant(sid, value)
        cgh.parallel_for(rng, kernel, *args)
    return q.submit(cgf)


# -- the benchmark -----------------------------------------------------------------------
def _device_label(dev) -> str:
    return f"{dev.name} [{str(dev.backend).split('.')[-1]}]"


def measuring():
    """``PYSYCL_AUTOTUNE=retune`` inside: a tuned kernel measures its configs even when an
    earlier run stored a choice for the key (a benchmark reports what measuring costs)."""
    return environment("PYSYCL_AUTOTUNE", "retune")


def tune_and_compare(report: Report, q, workload: str, kernel, configs, space, args, out,
                     expected, hand_picked: dict, key) -> dict:
    """Add the rows of one workload; returns what was measured (for a summary)."""
    dev = _device_label(q.get_device())
    tuned = sycl.autotune(kernel, configs=configs, key=key, reps=5)
    t0 = time.perf_counter()
    with measuring():
        q.parallel_for(space, tuned, *args).wait()
    first = time.perf_counter() - t0
    chosen = tuned.best_config(q, space, *args)
    # What a later process pays to find the choice: a new object reads the stored one.
    again = sycl.autotune(kernel, configs=configs, key=key, reps=5)
    t0 = time.perf_counter()
    again.best_config(q, space, *args)
    stored = time.perf_counter() - t0
    assert again.stats["measured_launches"] == 0, again.stats
    timings = next(iter(tuned.timings.values()))
    print(f"  {workload}: first launch {first * 1e3:.0f} ms (measured {len(configs)} configs, "
          f"{tuned.stats['measured_launches']} launches); stored choice found in "
          f"{stored * 1e3:.2f} ms; tuner's medians: " + ", ".join(
              f"{label(c)} {'failed' if s is None else f'{s * 1e3:.2f} ms'}"
              for c, s in timings), flush=True)

    def run(launch):
        def fn():
            launch().wait()
            return np.asarray(out).reshape(expected.shape)
        return fn
    report.run(workload, dev, f"autotuned (chose {label(chosen)})",
               run(lambda: q.parallel_for(space, tuned, *args)), expected, is_pysycl=True,
               rtol=1e-3, atol=1e-3)
    report.run(workload, dev, f"hand-picked {label(hand_picked)}",
               run(lambda: launch_config(q, kernel, hand_picked, space, args)), expected,
               rtol=1e-3, atol=1e-3)
    sweep = []
    for cfg, seconds in timings:
        if seconds is not None:
            start = time.perf_counter()
            for _ in range(3):
                launch_config(q, kernel, cfg, space, args).wait()
            sweep.append(((time.perf_counter() - start) / 3, cfg))
    best = min(sweep, key=lambda s: s[0])[1]
    report.run(workload, dev, f"best of sweep {label(best)}",
               run(lambda: launch_config(q, kernel, best, space, args)), expected,
               rtol=1e-3, atol=1e-3)
    report.flush()
    return {"chosen": label(chosen), "sweep_best": label(best), "first_launch_s": first,
            "stored_choice_s": stored}


def run(report: Report, q, quick: bool = False) -> None:
    """The FIR and convolution rows on ``q``'s device."""
    fir_n = (1 << 20) if quick else (1 << 22)
    conv_n = 1024 if quick else 4096
    wg1 = ({}, {"work_group": (64,)}, {"work_group": (256,)})
    x, _taps, configs, space, expected = fir_problem(fir_n, wg1)
    dx = sycl.malloc_shared(x.shape, F32, q)
    dx[:] = x
    dy = sycl.malloc_shared((fir_n,), F32, q)
    # (Workload names of their own: the full table compares each row with the peers of
    # its workload, and the suite has a FIR and a convolution of its own.)
    tune_and_compare(report, q, f"autotune: fir {FIR_TAPS} taps, {fir_n >> 20}M", fir_outputs,
                     configs, space, (dx, dy), dy, expected, configs[0], ["x"])
    sycl.free(dx, q)
    sycl.free(dy, q)
    wg2 = ({}, {"work_group": (1, 256)}, {"work_group": (4, 64)})
    img, _w, configs, space, expected = conv_problem(conv_n, wg2)
    di = sycl.malloc_shared(img.shape, F32, q)
    di[:] = img
    do = sycl.malloc_shared(img.shape, F32, q)
    hand = next(c for c in configs if c[outputs_id] == 1 and "work_group" not in c)
    tune_and_compare(report, q, f"autotune: conv3x3 {conv_n}x{conv_n}", conv3x3_rows, configs,
                     space, (di, do, np.int64(conv_n), np.int64(conv_n)), do, expected, hand,
                     ["inp", "rows", "cols"])
    sycl.free(di, q)
    sycl.free(do, q)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.autotune")
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--backends", default="",
                    help="comma list of backends to run (native_cpu, opencl); default all "
                         "but cuda (python -m benchmarks.gpu --only autotune)")
    args = ap.parse_args(argv)
    wanted = {b for b in args.backends.split(",") if b}
    report = Report()
    for dev in sycl.device.get_devices():
        backend = str(dev.backend).split(".")[-1]
        if (wanted and backend not in wanted) or (not wanted and backend == "cuda"):
            continue
        print(f"== {dev.name} [{backend}]", flush=True)
        run(report, sycl.queue(dev), quick=args.quick)
    print()
    print(report.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
