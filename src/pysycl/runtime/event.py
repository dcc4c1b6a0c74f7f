"""``sycl.event``: the completion of one command group, and the state machine of commands.

An event *is* its command's record (one object per submit, ``__slots__``): what to run,
how many dependencies are still pending, the backend token once started, the callbacks
of dependants, profiling times. State changes happen under one process-wide lock held
for a few attribute writes; callbacks run outside it, through a per-thread trampoline
so a long chain of dependants never recurses.

>>> import pysycl as sycl
>>> e = sycl.event(); e.wait(); e.status.name
'complete'
"""
from __future__ import annotations

import collections
import threading
import time

from ..errors import errc, exception
from .info import event_command_status, get_info
from .pickling import not_picklable

_lock = threading.Lock()
_acquire, _release = _lock.acquire, _lock.release
_tls = threading.local()

# Command kinds.
STREAM, HOST, USER, BARRIER = 0, 1, 2, 3


def _token_done(tok) -> bool:
    """Whether a backend token finished, without waiting (backends/base.py contract)."""
    return tok.is_complete()


class event:
    """``sycl.event()`` is an already-complete event; the runtime makes the others."""

    __reduce__ = not_picklable("event", "wait for it here and send the result")

    __slots__ = ("_done", "_started", "_token", "_flag", "_callbacks", "_watched", "_queue",
                 "_run", "_kind", "_pending", "_times", "_error", "__weakref__")

    def __init__(self):
        self._done = True
        self._started = True
        self._token = None
        self._flag = None
        self._callbacks = None
        self._watched = False
        self._queue = None
        self._run = None
        self._kind = BARRIER
        self._pending = 0
        self._times = None
        self._error = None

    # Public API -------------------------------------------------------------------------
    def wait(self) -> None:
        """Block until the command completed (errors go to its queue, not here)."""
        if self._done:
            return
        tok = self._token
        if tok is not None and not self._watched:
            # Started inline and nobody watches it: wait on the backend directly, the
            # fastest path for submit + wait.
            err = None
            try:
                tok.wait()
            except BaseException as e:  # a failed kernel is an asynchronous error
                err = e
            complete(self, err)
            return
        with _lock:
            if self._done:
                return
            if self._flag is None:
                self._flag = threading.Event()
            flag = self._flag
            if self._token is not None and not self._watched:
                self._watched = True
                _watcher.push(self)
        flag.wait()

    def wait_and_throw(self) -> None:
        self.wait()
        if self._queue is not None:
            self._queue.throw_asynchronous()

    @staticmethod
    def wait_list(events) -> None:
        for e in events:
            e.wait()

    @property
    def status(self) -> event_command_status:
        if self._done:
            return event_command_status.complete
        tok = self._token
        if tok is not None and _token_done(tok):
            return event_command_status.complete
        return event_command_status.running if self._started else event_command_status.submitted

    def get_info(self, descriptor):
        return get_info(self, descriptor)

    def get_profiling_info(self, descriptor):
        return get_info(self, descriptor)

    def _profile(self, index: int, what: str) -> int:
        if self._times is None:
            raise exception(errc.profiling, f"event.profiling_command_{what}: the queue was "
                            "not created with enable_profiling=True")
        self.wait()
        tok_times = getattr(self._token, "profiling_ns", None)
        if tok_times is not None and self._kind == STREAM:
            try:
                t = tok_times()
            except exception:
                return self._times[index]
            return int(t[index])
        return self._times[index]

    @property
    def profiling_command_submit(self) -> int:
        return self._profile(0, "submit")

    @property
    def profiling_command_start(self) -> int:
        return self._profile(1, "start")

    @property
    def profiling_command_end(self) -> int:
        return self._profile(2, "end")

    def __repr__(self):
        return f"<sycl.event {self.status.name}>"

    # Runtime side -----------------------------------------------------------------------
    def _on_done(self, callback) -> None:
        """Call ``callback()`` once this event completes (now, if it has)."""
        with _lock:
            if not self._done:
                if self._callbacks is None:
                    self._callbacks = [callback]
                else:
                    self._callbacks.append(callback)
                if self._token is not None and not self._watched:
                    self._watched = True
                    _watcher.push(self)
                return
        callback()


def new_event(queue, kind: int, run) -> event:
    """A not-yet-started command's event."""
    ev = event.__new__(event)
    ev._done = False
    ev._started = False
    ev._token = None
    ev._flag = None
    ev._callbacks = None
    ev._watched = False
    ev._queue = queue
    ev._run = run
    ev._kind = kind
    ev._pending = 0
    ev._error = None
    ev._times = [time.perf_counter_ns(), 0, 0] if queue is not None and queue._profiling \
        else None
    return ev


def issued_event(queue, kind: int, tok, run=None) -> event:
    """``new_event`` + start + ``set_token(ev, tok)`` for a command already issued whose
    token is not asked whether it completed (a fresh event: nobody waits on or watches
    it yet). Not for profiling queues (no times)."""
    ev = _new(event)
    ev._done = ev._watched = False
    ev._started = True
    ev._token = tok
    ev._flag = ev._callbacks = ev._times = ev._error = None
    ev._queue = queue
    ev._run = run
    ev._kind = kind
    ev._pending = 0
    return ev


_new = event.__new__


def complete(ev: event, error: BaseException | None = None) -> None:
    """Mark ``ev`` complete (once), wake waiters, run dependants' callbacks."""
    _acquire()   # (no ``with``: this runs once per command; attribute writes only)
    if ev._done:
        _release()
        return
    ev._done = True
    callbacks, ev._callbacks = ev._callbacks, None
    flag = ev._flag
    run, ev._run = ev._run, None  # drop the command's closure (and what it keeps alive)
    _release()
    del run      # (outside the lock: dropping it may run finalizers)
    if ev._times is not None:
        ev._times[2] = time.perf_counter_ns()
    if error is not None:
        ev._error = error
        if ev._queue is not None:
            ev._queue._report(error)
    if flag is not None:
        flag.set()
    if callbacks:
        run_callbacks(callbacks)


def run_callbacks(callbacks) -> None:
    """Run callbacks; nested calls on the same thread are queued, not recursed."""
    pending = getattr(_tls, "pending", None)
    if pending is not None:
        pending.extend(callbacks)
        return
    _tls.pending = pending = collections.deque(callbacks)
    try:
        while pending:
            pending.popleft()()
    finally:
        _tls.pending = None


def set_token(ev: event, tok) -> None:
    """Record a started command's backend token; complete it now if already done."""
    if tok is None or _token_done(tok):
        complete(ev)
        return
    with _lock:
        ev._token = tok
        need_watch = not ev._watched and (ev._callbacks or ev._flag is not None)
        if need_watch:
            ev._watched = True
    if need_watch:
        _watcher.push(ev)


class _Watcher:
    """One daemon thread that waits on backend tokens someone depends on, in order."""

    def __init__(self):
        self._items = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._thread = None

    def push(self, ev: event) -> None:
        with self._cond:
            self._items.append(ev)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="pysycl-watcher",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._items:
                    self._cond.wait()
                ev = self._items.popleft()
            err = None
            try:
                ev._token.wait()
            except BaseException as e:
                err = e
            complete(ev, err)


_watcher = _Watcher()
