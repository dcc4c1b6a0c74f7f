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
A command does not run when a command it depends on failed (its event carries that
failure), unless that failure had already been delivered to the user when the command
was submitted (an in-order queue or a buffer is usable again once its error was seen).
KeyboardInterrupt and SystemExit are never filed as a command's error: they propagate
at once, and the command they cut short completes as interrupted.

>>> # see queue.submit for use
"""
from __future__ import annotations

import collections
import os
import threading
import time

from .event import (HOST, STREAM, cancelling, complete, dependency_done, event, interrupted,
                    set_running_host_task, set_token)


def enqueue(q, ev: event, deps) -> event:
    """Start ``ev`` now or when ``deps`` (events) have completed."""
    pending = None
    if deps:
        stream_ordered = ev._kind == STREAM and q._stream_in_order
        for d in deps:
            if d._done:
                f = d._error
                if f is not None and not f.delivered:
                    complete(ev, f)   # depends on a failed command: does not run
                    return ev
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
    for d in pending:
        d._on_done(ev_release(ev, d))
    if dependency_done(ev, None):
        start(ev)
    return ev


def ev_release(ev: event, dep: event):
    """The callback dependency ``dep`` of ``ev`` runs when it completes; the last one
    starts ``ev`` (or completes it with the failure of a failed dependency)."""
    def release():
        if dependency_done(ev, dep):
            start(ev)
    return release


def start(ev: event) -> None:
    """Start a command whose dependencies are all complete (stream commands here,
    host tasks on the host pool); one whose dependency failed completes with that
    failure instead, and while an interrupt unwinds (event.run_callbacks) none starts."""
    if ev._error is not None:
        complete(ev, ev._error)
        return
    if cancelling():
        complete(ev, interrupted(KeyboardInterrupt()))
        return
    kind = ev._kind
    ev._started = True
    if ev._times is not None:
        ev._times[1] = time.perf_counter_ns()
    if kind == STREAM:
        try:
            tok = ev._run()
        except Exception as e:  # issued late: the user's submit has returned
            complete(ev, e)
            return
        except BaseException as e:  # interrupted (a native kernel runs here): propagate
            complete(ev, interrupted(e))
            raise
        set_token(ev, tok)
        if not ev._done and ev._queue is not None:
            # What the command refers to (host arrays, other libraries' arrays: its
            # closure, which the event holds until it completes) must outlive the work
            # on the device, and the program may drop the event first.
            ev._queue._held.hold(ev)
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
                self._spawn()
            else:
                self._cond.notify()

    def _spawn(self) -> None:
        """One more thread (the caller holds the condition's lock)."""
        self._threads += 1
        threading.Thread(target=self._loop, name="pysycl-host", daemon=True).start()

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
            set_running_host_task(ev)
            try:
                ev._run()
            except Exception as e:  # the host task's error: asynchronous, to its queue
                err = e
            except BaseException as e:
                # SystemExit from a host task: its waiters raise it (event.failure);
                # this thread ends with it, as any thread calling sys.exit() does. The
                # tasks queued behind it get a thread of their own (they were left
                # with none, and their waiters hung).
                complete(ev, e)
                with self._cond:
                    self._threads -= 1
                    if self._items:
                        if self._idle:
                            self._cond.notify()
                        else:
                            self._spawn()
                raise
            finally:
                set_running_host_task(None)
            complete(ev, err)
            del ev, err   # an idle thread keeps no command (nor its queue) alive

    def after_fork_in_child(self) -> None:
        """Its threads are gone in a forked child (their tasks with them)."""
        self._items = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._threads = 0
        self._idle = 0


_host_pool = _HostPool()
os.register_at_fork(after_in_child=_host_pool.after_fork_in_child)
