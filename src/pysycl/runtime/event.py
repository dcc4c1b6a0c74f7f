"""``sycl.event``: the completion of one command group, and the state machine of commands.

An event *is* its command's record (one object per submit, ``__slots__``): what to run,
how many dependencies are still pending, the backend token once started, the callbacks
of dependants, profiling times. State changes happen under one process-wide lock held
for a few attribute writes; callbacks run outside it, through a per-thread trampoline
so a long chain of dependants never recurses.

A failed command's event carries a :class:`failure`: the exception and the queues that
still hold it undelivered (each queue's :class:`error_box`). ``wait()`` raises it unless
the queue has an ``async_handler`` (then ``wait_and_throw``/``throw_asynchronous`` hand
it there); raising or handing it over *delivers* it, so no queue reports it again.

>>> import pysycl as sycl
>>> e = sycl.event(); e.wait(); e.status.name
'complete'
"""
from __future__ import annotations

import collections
import os
import threading
import time
import weakref

from ..errors import errc, exception
from .info import event_command_status, get_info, info
from .pickling import not_picklable

_lock = threading.Lock()
_acquire, _release = _lock.acquire, _lock.release
_tls = threading.local()

# Command kinds.
STREAM, HOST, USER, BARRIER = 0, 1, 2, 3


class failure:
    """The error of a failed command, shared by the events of the commands that did not
    run because of it; ``boxes``: the queues' error boxes it is still undelivered in."""

    __slots__ = ("error", "traceback", "boxes", "delivered")

    def __init__(self, error: BaseException, delivered: bool = False):
        self.error = error
        # Each raise starts again from where the command failed: raising one exception
        # object again and again would otherwise stack every raise's frames onto it.
        self.traceback = error.__traceback__
        self.boxes: list = []
        self.delivered = delivered

    def deliver(self) -> BaseException:
        """Mark it seen by the user (no queue reports it again); returns the error, to
        raise, with the traceback of the failure."""
        self.delivered = True
        for box in self.boxes:
            box.discard(self)
        return self.error.with_traceback(self.traceback)

    @property
    def always_raised(self) -> bool:
        """SystemExit and the like from a host task: raised by ``wait()`` even where an
        ``async_handler`` takes the other errors (they end the program, not a command)."""
        return not isinstance(self.error, Exception)


class error_box:
    """A queue's undelivered failures, in the order they happened."""

    __slots__ = ("items", "lock", "added")

    def __init__(self):
        self.items: list[failure] = []
        self.lock = threading.Lock()
        self.added = 0   # failures ever added (delivered or not)

    def add(self, f: failure) -> None:
        with self.lock:
            if f.delivered or self in f.boxes:
                return
            f.boxes.append(self)
            self.items.append(f)
            self.added += 1

    def discard(self, f: failure) -> None:
        with self.lock:
            try:
                self.items.remove(f)
            except ValueError:
                pass

    def take(self) -> list[BaseException]:
        """Deliver every failure held here; returns their errors."""
        with self.lock:
            items, self.items = self.items, []
        return [f.deliver() for f in items]

    def take_fatal(self) -> list[BaseException]:
        """Deliver only the failures that are no command's error (KeyboardInterrupt,
        SystemExit from a host task): they are raised, never given to a handler."""
        with self.lock:
            fatal = [f for f in self.items if f.always_raised]
            self.items = [f for f in self.items if not f.always_raised]
        return [f.deliver() for f in fatal]

    def __bool__(self) -> bool:
        return bool(self.items)


def interrupted(cause: BaseException) -> failure:
    """What the event of a command cut short by ``KeyboardInterrupt``/``SystemExit``
    carries: waiting on it raises, commands after it do not run; it is already
    delivered (the interrupt itself is propagating), so no queue reports it."""
    err = exception(errc.runtime, f"the command was interrupted ({type(cause).__name__}) "
                                  "before it finished")
    return failure(err, delivered=True)


# event -> weak references to the events it waits for (SYCL's event::get_wait_list), kept
# only for commands that had dependencies: weak, so a long chain of commands does not
# keep every earlier event alive through its successor.
_wait_lists: "weakref.WeakKeyDictionary[event, tuple]" = weakref.WeakKeyDictionary()
_wait_lists_lock = threading.Lock()


def record_wait_list(ev, deps) -> None:
    """Remember that ``ev`` waits for ``deps`` (for ``ev.get_wait_list()``)."""
    refs = tuple(weakref.ref(d) for d in dict.fromkeys(deps) if d is not ev)
    with _wait_lists_lock:
        _wait_lists[ev] = refs


def running_host_task():
    """The event of the host task this thread is running, or None: a host task that
    waits for itself (its event, or its queue) would wait forever."""
    return getattr(_tls, "host_task", None)


def set_running_host_task(ev) -> None:
    _tls.host_task = ev


def still_matters(ev: event) -> bool:
    """Whether a later command must list ``ev`` as a dependency: it is not complete,
    or it failed and nobody has seen its error yet (the later one must not run)."""
    return not ev._done or ev._error is not None and not ev._error.delivered


def as_events(events, what: str = "depends_on") -> list:
    """``depends_on``'s argument (an event or an iterable of events) as a list;
    ``errc.invalid`` naming anything else."""
    if isinstance(events, event):
        return [events]
    try:
        out = list(events)
    except TypeError:
        out = [events]
    for e in out:
        if not isinstance(e, event):
            raise exception(errc.invalid, f"{what} takes sycl.event objects, not "
                            f"{type(e).__name__}")
    return out


def settled(ev: event, answers: dict) -> bool:
    """Whether ``ev`` is complete, completing it first when it is a command issued at
    once that nobody watches and whose backend token finished (no waiting).
    ``answers``: the tokens asked so far in this sweep (launches on one stream may share
    one token: it is asked once)."""
    if ev._done:
        return True
    tok = ev._token
    if tok is None or ev._watched:
        return False
    done = answers.get(tok)
    if done is None:
        try:
            done = answers[tok] = tok.is_complete()
        except Exception as error:  # noqa: BLE001 - the command failed: its asynchronous error
            complete(ev, error)
            return True
    if done:
        complete(ev)
    return done


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
        """Block until the command completed. A failed command's error is raised here
        when its queue has no ``async_handler`` (with one, ``wait_and_throw`` hands it
        over); a command that did not run because a command it depends on failed
        raises that error.

        ``sycl.event.wait([e1, e2])`` is SYCL's static ``event::wait(event_list)``:
        called on the class, the function gets the list in place of an event."""
        if not isinstance(self, event):
            return event.wait_list(self)
        if not self._done:
            self._wait_done()
        if self._error is not None:
            self._raise_error()

    def _wait_done(self) -> None:
        """Block until the command completed (never raises its error)."""
        if running_host_task() is self:
            raise exception(errc.invalid, "a host task cannot wait for its own event: it "
                            "completes when the host task returns")
        tok = self._token
        if tok is not None and not self._watched:
            # Started inline and nobody watches it: wait on the backend directly, the
            # fastest path for submit + wait. (KeyboardInterrupt leaves it pending.)
            err = None
            try:
                tok.wait()
            except Exception as e:  # a failed kernel is an asynchronous error
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

    def _raise_unseen(self) -> None:
        """For a complete event: raise its failure as ``wait()`` does, unless the user
        has seen it already (what waits on behalf of a command, such as a buffer's
        write-back, must not raise a handled error again)."""
        f = self._error
        if f is not None and not f.delivered:
            self._raise_error()

    def _raise_error(self) -> None:
        f = self._error
        q = self._queue
        if q is not None and q._async_handler is not None and not f.always_raised:
            return
        raise f.deliver()

    def wait_and_throw(self) -> None:
        """``wait()``, then the queue's ``throw_asynchronous()``. On the class,
        ``sycl.event.wait_and_throw([e1, e2])`` does that for each event of the list
        (SYCL's static ``event::wait_and_throw(event_list)``)."""
        if not isinstance(self, event):
            for e in as_events(self, "event.wait_and_throw"):
                e.wait_and_throw()
            return
        self.wait()
        if self._queue is not None:
            self._queue.throw_asynchronous()

    @staticmethod
    def wait_list(events) -> None:
        for e in as_events(events, "event.wait"):
            e.wait()

    @property
    def status(self) -> event_command_status:
        if self._done:
            return event_command_status.complete
        tok = self._token
        if tok is not None and _token_done(tok):
            return event_command_status.complete
        return event_command_status.running if self._started else event_command_status.submitted

    def get_wait_list(self) -> list:
        """The events this command waits for (SYCL 2020 4.6.6): its ``depends_on`` events,
        the earlier users of its buffers and, on an in-order queue, the command before
        it, those still alive (the list holds them weakly)."""
        with _wait_lists_lock:
            refs = _wait_lists.get(self, ())
        return [e for e in (r() for r in refs) if e is not None]

    def get_backend(self):
        """The backend of the queue that made the event; a default-constructed event's is
        the default device's (SYCL 2020 4.6.6)."""
        if self._queue is not None:
            return self._queue.get_backend()
        from .device import device   # (a default event has no queue to ask)
        return device().backend

    def get_info(self, descriptor):
        return get_info(self, descriptor)

    def get_profiling_info(self, descriptor):
        return get_info(self, descriptor, info.event_profiling)

    def _profile(self, index: int, what: str) -> int:
        if self._times is None:
            # errc.invalid, as SYCL 2020 4.6.6 says of get_profiling_info
            raise exception(errc.invalid, f"event.profiling_command_{what}: the queue was "
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


def complete(ev: event, error: BaseException | failure | None = None) -> None:
    """Mark ``ev`` complete (once), wake waiters, run dependants' callbacks. ``error``:
    the command failed (an exception), or did not run because of ``failure``; either is
    kept for the user in the queue's error box until delivered."""
    f = None
    if error is not None:
        f = error if isinstance(error, failure) else failure(error)
    _acquire()   # (no ``with``: this runs once per command; attribute writes only)
    if ev._done:
        _release()
        return
    if f is not None:
        # Recorded before ``_done``: whoever sees the event complete sees its error,
        # in the event and in the queue's box.
        ev._error = f
        if ev._queue is not None:
            ev._queue._errors.add(f)
    ev._done = True
    callbacks, ev._callbacks = ev._callbacks, None
    flag = ev._flag
    run, ev._run = ev._run, None  # drop the command's closure (and what it keeps alive)
    _release()
    del run      # (outside the lock: dropping it may run finalizers)
    if ev._times is not None:
        ev._times[2] = time.perf_counter_ns()
    if flag is not None:
        flag.set()
    if callbacks:
        run_callbacks(callbacks)


def run_callbacks(callbacks) -> None:
    """Run callbacks; nested calls on the same thread are queued, not recursed.

    When one raises KeyboardInterrupt/SystemExit (a native kernel started here was
    interrupted) the rest still run, in *cancel* mode: commands they would start
    complete as interrupted instead (no new work starts, no waiter hangs), then the
    interrupt propagates."""
    pending = getattr(_tls, "pending", None)
    if pending is not None:
        pending.extend(callbacks)
        return
    _tls.pending = pending = collections.deque(callbacks)
    try:
        while pending:
            pending.popleft()()
    except BaseException:
        _tls.cancel = True
        try:
            while pending:
                pending.popleft()()
        finally:
            _tls.cancel = False
        raise
    finally:
        _tls.pending = None


def dependency_done(ev: event, dep: event) -> bool:
    """Count down one completed dependency ``dep`` of ``ev`` (whose failure ``ev`` takes
    over); True when it was the last one, so ``ev`` may start."""
    with _lock:
        if dep is not None and dep._error is not None and ev._error is None:
            ev._error = dep._error
        ev._pending -= 1
        return ev._pending == 0


def cancelling() -> bool:
    """Whether this thread is unwinding an interrupt (see run_callbacks)."""
    return getattr(_tls, "cancel", False)


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
            except Exception as e:  # the command failed (signals reach the main thread only)
                err = e
            complete(ev, err)
            del ev, err   # an idle thread keeps no command (nor its queue) alive

    def after_fork_in_child(self) -> None:
        """The thread is gone in a forked child: start a new one on the next push."""
        self._items = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._thread = None


_watcher = _Watcher()


def _after_fork_in_child() -> None:
    # Another thread may have held the lock at fork time: it would never be released.
    global _lock, _acquire, _release
    _lock = threading.Lock()
    _acquire, _release = _lock.acquire, _lock.release
    _watcher.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
