"""Timing, result checking and reporting shared by every benchmark.

Times are medians of repeated runs after a warm-up (the first call builds); every
implementation's output is checked against NumPy before its time is reported, and a
wrong answer is reported as such, never timed.

The implementations of one workload are timed *interleaved* (round-robin: pysycl,
peer, floor, pysycl, ...) so that a burst of load on this shared machine slows all of
them alike and the ratios stay meaningful; ``Report.run`` checks at once and queues the
timing, ``Report.flush`` (called before a workload frees its memory, and by ``table``)
times the queue.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np


@dataclasses.dataclass
class Measurement:
    workload: str
    device: str
    impl: str          # "pysycl", "pysycl (literal)", "numba", "opencl-c (#define)", ...
    seconds: float | None
    ok: bool
    note: str = ""
    is_pysycl: bool = False
    is_floor: bool = False


def median_time(fn: Callable[[], object], repeat: int = 7, warmup: int = 1,
                min_time: float = 0.0) -> float:
    for _ in range(warmup):
        fn()
    times = []
    deadline = time.perf_counter() + min_time
    while len(times) < repeat or time.perf_counter() < deadline:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) > 1000:
            break
    return statistics.median(times)


def _fmt(seconds: float) -> str:
    """Milliseconds, or microseconds below 0.1 ms (launch overheads)."""
    if seconds < 1e-4:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.3f} ms"


def check(result, expected, rtol=1e-4, atol=1e-4) -> bool:
    return bool(np.allclose(np.asarray(result), np.asarray(expected), rtol=rtol, atol=atol))


class Report:
    def __init__(self):
        self.rows: list[Measurement] = []
        self._pending: list = []

    def add(self, m: Measurement) -> None:
        if self._pending and m.seconds is not None and not any(p[0] is m for p in self._pending):
            self.flush()
        self.rows.append(m)
        t = f"{_fmt(m.seconds):>13}" if m.seconds is not None else "       -     "
        status = "ok" if m.ok else "WRONG"
        print(f"  {m.workload:<28} {m.impl:<28} {t}  {status} {m.note}", flush=True)

    def run(self, workload: str, device: str, impl: str, fn: Callable[[], object],
            expected, *, is_pysycl=False, is_floor=False, rtol=1e-4, atol=1e-4, repeat=7,
            note="") -> Measurement:
        try:
            out = fn()
            ok = True if expected is None else check(out, expected, rtol, atol)
        except Exception as e:  # a peer or a pysycl failure is reported, not fatal
            ok, note = False, f"{type(e).__name__}: {e}"[:120]
        m = Measurement(workload, device, impl, None, ok, note, is_pysycl, is_floor)
        if ok:
            self._pending.append((m, fn, repeat))
        else:
            self.add(m)
        return m

    def flush(self) -> None:
        """Time the queued implementations round-robin; add their measurements."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        times: list[list[float]] = [[] for _ in pending]
        rounds = max(r for _, _, r in pending)
        for i in range(rounds):
            for (m, fn, repeat), ts in zip(pending, times):
                if i >= repeat or not m.ok:
                    continue
                try:
                    t0 = time.perf_counter()
                    fn()
                    ts.append(time.perf_counter() - t0)
                except Exception as e:  # noqa: BLE001
                    m.ok, m.note = False, f"{type(e).__name__}: {e}"[:120]
        for (m, _, _), ts in zip(pending, times):
            m.seconds = statistics.median(ts) if (m.ok and ts) else None
            self.add(m)

    def table(self) -> str:
        self.flush()
        lines = ["| workload | device | pysycl | best peer | pysycl / best peer | "
                 "pysycl / numba parallel | vs memory floor |",
                 "|---|---|---|---|---|---|---|"]
        groups: dict[tuple[str, str], list[Measurement]] = {}
        for m in self.rows:
            groups.setdefault((m.workload, m.device), []).append(m)
        for (wl, dev), ms in groups.items():
            ours = [m for m in ms if m.is_pysycl and m.ok and m.seconds]
            peers = [m for m in ms if not m.is_pysycl and not m.is_floor and m.ok and m.seconds]
            floor = [m for m in ms if m.is_floor and m.seconds]
            numba = [m for m in peers if m.impl.startswith("numba")]
            for o in ours:
                best = min(peers, key=lambda m: m.seconds) if peers else None
                ratio = f"{o.seconds / best.seconds:.2f}x" if best else "-"
                nb = f"{o.seconds / numba[0].seconds:.2f}x" if numba else "-"
                fl = f"{o.seconds / floor[0].seconds:.2f}x" if floor else "-"
                peer = f"{best.impl} {_fmt(best.seconds)}" if best else "-"
                lines.append(f"| {wl} | {dev} | {o.impl} {_fmt(o.seconds)} | {peer} "
                             f"| {ratio} | {nb} | {fl} |")
            if not ours:   # peers only (an OpenCL C peer's own device)
                for p in peers:
                    lines.append(f"| {wl} | {dev} | - | {p.impl} {_fmt(p.seconds)} "
                                 "| - | - | - |")
        return "\n".join(lines)

    def write_json(self, path: Path) -> None:
        self.flush()
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.platform(),
               "processor": platform.processor(),
               "rows": [dataclasses.asdict(m) for m in self.rows]}
        path.write_text(json.dumps(doc, indent=1))


@contextlib.contextmanager
def environment(name: str, value: str):
    """``os.environ[name] = value`` inside (a setting pysycl reads when it builds or
    launches), the old value back after."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
