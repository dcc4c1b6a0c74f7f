"""``PYSYCL_TRACE=run.json``: a timeline of what pysycl did, in the Chrome trace format
that Perfetto (ui.perfetto.dev) and ``chrome://tracing`` open.

Every command of every queue (kernel launches, copies, fills, host tasks) is one slice
on its queue's track, from the command's start to its end as event profiling measures
them (tracing turns profiling on for every queue); builds of executable images are
slices on the builder thread's track. The file is written when the process exits.

>>> rec = Recorder()
>>> rec.add("kernel k", "command", 1_000, 3_000, "queue 1", {"device": "cpu"})
>>> [e["dur"] for e in rec.snapshot() if e["ph"] == "X"]
[2.0]
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import tempfile
import threading
import time

from .. import config


class Recorder:
    """Slices ("X" events, microseconds) and track names, thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._events: list[dict] = []
        self._tracks: dict[str, int] = {}
        self._pid = os.getpid()

    def _track(self, name: str) -> int:
        tid = self._tracks.get(name)
        if tid is None:
            tid = self._tracks[name] = len(self._tracks) + 1
        return tid

    def add(self, name: str, cat: str, start_ns: int, end_ns: int, track: str,
            args: dict | None = None) -> None:
        with self._lock:
            self._events.append({"name": name, "cat": cat, "ph": "X", "pid": self._pid,
                                 "tid": self._track(track), "ts": start_ns / 1e3,
                                 "dur": max(end_ns - start_ns, 0) / 1e3,
                                 "args": args or {}})

    def snapshot(self) -> list[dict]:
        with self._lock:
            names = [{"name": "thread_name", "ph": "M", "pid": self._pid, "tid": tid,
                      "args": {"name": track}} for track, tid in self._tracks.items()]
            return names + list(self._events)

    def write(self, path: str) -> None:
        """The trace as JSON at ``path`` (written to a temporary file, then renamed)."""
        data = json.dumps({"traceEvents": self.snapshot(), "displayTimeUnit": "ms"})
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".trace-", dir=folder)
        with os.fdopen(fd, "w") as fh:
            fh.write(data)
        os.replace(tmp, path)


_lock = threading.Lock()
_recorder: Recorder | None = None
_checked = False


def recorder() -> Recorder | None:
    """The process's recorder when ``PYSYCL_TRACE`` names a file, else None."""
    global _recorder, _checked
    if _checked:
        return _recorder
    with _lock:
        if not _checked:
            path = config.trace_path()
            if path:
                _recorder = Recorder()
                atexit.register(_write_at_exit, path)
            _checked = True
    return _recorder


def _write_at_exit(path: str) -> None:
    try:
        _recorder.write(path)
    except OSError as e:   # the program's own outcome matters more than its trace
        import sys
        print(f"pysycl: could not write the trace {path}: {e}", file=sys.stderr)


@contextlib.contextmanager
def span(name: str, cat: str, **args):
    """Record the ``with`` block as one slice on the calling thread's track (when
    tracing)."""
    rec = recorder()
    if rec is None:
        yield
        return
    start = time.perf_counter_ns()
    try:
        yield
    finally:
        rec.add(name, cat, start, time.perf_counter_ns(),
                f"thread {threading.current_thread().name}", args)
