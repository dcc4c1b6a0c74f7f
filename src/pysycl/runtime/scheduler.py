"""Starting commands once their dependencies completed.

``enqueue`` looks at a new command's dependencies (explicit ``depends_on``, the
buffer accesses of its accessors, the previous command of an in-order queue):

* none pending -> the command starts *now*, on the submitting thread. A device command
  (kernel, copy, fill) is only *issued* there: the backend returns a token and the work
  runs asynchronously (native_cpu kernels on the executor's pool, OpenCL/CUDA on the
  device). This is the fast path: no thread hop, no lock beyond the event's.
* some pending -> the event counts them and registers a callback on each; the thread
  that completes the last one starts it (a host-pool thread, the token watcher, or
  a waiter). A dependency already issued to the same in-order backend stream is not
  waited for at all: the stream orders it (OpenCL queue, CUDA stream).

Host tasks always run on the host pool (they may block, and SYCL runs them
asynchronously). Errors of started commands are asynchronous: they go to the queue.

>>> # see queue.submit for use
"""
from __future__ import annotations

import collections
import threading
import time

from .event import HOST, STREAM, _lock, complete, event, set_token


def enqueue(q, ev: event, deps) -> event:
    """Start ``ev`` now or when ``deps`` (events) have completed."""
    pending = None
    if deps:
        stream_ordered = ev._kind == STREAM and q._stream_in_order
        for d in deps:
            if d._done:
                continue
            if stream_ordered and d._token is not None and d._kind == STREAM \
                    and d._queue is not None and d._queue._stream is q._stream:
                continue
            if pending is None:
                pending = [d]
            else:
                pending.append(d)
    if pending is None:
        start(ev)
        return ev
    # One extra count so no dependency completing meanwhile can start it early.
    ev._pending = len(pending) + 1
    release = ev_release(ev)
    for d in pending:
        d._on_done(release)
    release()
    return ev


def ev_release(ev: event):
    """The callback a dependency of ``ev`` runs when it completes; the last one starts ``ev``."""
    def release():
        # Two threads may complete two dependencies at once: count under the lock.
        with _lock:
            ev._pending -= 1
            ready = ev._pending == 0
        if ready:
            start(ev)
    return release


def start(ev: event) -> None:
    """Start a command whose dependencies are all complete (stream commands here,
    host tasks on the host pool)."""
    kind = ev._kind
    ev._started = True
    if ev._times is not None:
        ev._times[1] = time.perf_counter_ns()
    if kind == STREAM:
        try:
            tok = ev._run()
        except BaseException as e:  # issued late: the user's submit has returned
            complete(ev, e)
            return
        set_token(ev, tok)
    elif kind == HOST:
        _host_pool.submit(ev)
    else:  # BARRIER / an empty command group
        complete(ev)


class _HostPool:
    """Threads for host tasks; grows when all are busy (a host task may wait on another
    command), shrinks back by idling threads out."""

    MAX_THREADS = 64
    IDLE_SECONDS = 30.0

    def __init__(self):
        self._items = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._threads = 0
        self._idle = 0

    def submit(self, ev: event) -> None:
        with self._cond:
            self._items.append(ev)
            if self._idle == 0 and self._threads < self.MAX_THREADS:
                self._threads += 1
                threading.Thread(target=self._loop, name="pysycl-host", daemon=True).start()
            else:
                self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._idle += 1
                while not self._items:
                    if not self._cond.wait(self.IDLE_SECONDS) and not self._items:
                        self._idle -= 1
                        self._threads -= 1
                        return
                self._idle -= 1
                ev = self._items.popleft()
            err = None
            try:
                ev._run()
            except BaseException as e:
                err = e
            complete(ev, err)


_host_pool = _HostPool()
