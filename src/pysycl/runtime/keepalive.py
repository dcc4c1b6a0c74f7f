"""Commands a queue keeps until the device has run them.

A launch packs its arguments' addresses, not the objects: a host array used in place, a
CuPy or PyTorch array, a reduction's memory must outlive the kernel, not only the call
that issued it. The command's event holds them until it completes, but the program may
drop the event at once (``q.parallel_for(...)`` in a loop), and an in-order queue
forgets all but its newest command. A freed array's memory is soon another array's
(NumPy's allocator, CuPy's and PyTorch's pools), and a kernel still running reads or
writes that one.

So each queue keeps a :class:`KeepAlive` of the issued commands whose events hold
objects: an event lets go of them when it completes (waited for, or its backend token
found finished when the queue asks, now and then, never waiting), and the queue then
forgets it. A launch issued at once holds its objects with its backend token instead
(:meth:`KeepAlive.hold_objects`): its event stays as light as any launch's, and the
objects go when the token is found finished (launches on one in-order stream share one
token, asked once per sweep). A launch loop over the same objects holds them once: the
stream's token, asked later, answers for every launch issued before it is asked.
"""
from __future__ import annotations

import threading
from operator import is_

from .event import settled

# Held commands before a queue asks the backend which finished (then twice as many as
# are still running: a launch loop the device is behind on costs O(1) per launch).
_SWEEP_AT = 64


class KeepAlive:
    """Events of issued commands that hold objects, until complete."""

    __slots__ = ("_held", "_sweep_at", "_lock", "_shared")

    def __init__(self):
        self._held: list = []
        self._sweep_at = _SWEEP_AT
        # The last (token, objects) entry hold_objects added, while it is in _held
        # (whatever takes entries out of _held clears it, under the lock).
        self._shared: tuple | None = None
        # Reentrant: a collection inside these methods may run a queue's __del__, which
        # hands its commands to ``orphans``.
        self._lock = threading.RLock()

    def hold(self, ev) -> None:
        """Keep ``ev`` (an issued command holding objects) until it completes."""
        self._add(ev, False)

    def hold_objects(self, tok, objects: list) -> None:
        """Keep ``objects`` until the backend token ``tok`` (of an issued launch) is
        found finished (None: nothing runs). The same objects (by identity) held with
        the same token by the last call, and still held, are not held again: that
        token is asked only after this launch was issued, so its answer covers it."""
        shared = self._shared
        if shared is not None and shared[0] is tok and len(shared[1]) == len(objects) \
                and all(map(is_, shared[1], objects)):
            return
        self._add((tok, objects), True)

    def _add(self, item, shared: bool) -> None:
        with self._lock:
            held = self._held
            held.append(item)
            if len(held) <= self._sweep_at:
                if shared:
                    self._shared = item
                return
            batch, self._held, self._shared = held, [], None
        self._settle(batch)

    def sweep(self) -> None:
        """Forget completed commands (asks the backend about the others; never waits)."""
        with self._lock:
            batch, self._held, self._shared = self._held, [], None
        self._settle(batch)

    def take(self) -> list:
        """Every held event, handed over (a collected queue's commands may still run)."""
        with self._lock:
            held, self._held, self._shared = self._held, [], None
            return held

    def adopt(self, held: list) -> None:
        """Hold the events of ``held`` (from :meth:`take`) as well."""
        with self._lock:
            batch, self._held, self._shared = self._held + held, [], None
        self._settle(batch)

    def __len__(self) -> int:
        return len(self._held)

    def _settle(self, batch: list) -> None:
        # Outside the lock: completing an event lets go of what its command held, which
        # may run any finalizer.
        answers: dict = {}   # launches on one stream may share a token: asked once
        still = [item for item in batch if not (
            _token_finished(item[0], answers) if item.__class__ is tuple
            else settled(item, answers))]
        with self._lock:
            self._held.extend(still)
            self._sweep_at = max(_SWEEP_AT, 2 * len(self._held))


# Commands of collected queues that may still run.
orphans = KeepAlive()


def _token_finished(tok, answers: dict) -> bool:
    """Whether a stream's backend token finished, asking each token once per sweep. A
    failed one has: its error is the stream's, which waiting for the queue or any of
    the stream's later commands reports."""
    if tok is None:
        return True
    done = answers.get(tok)
    if done is None:
        try:
            done = tok.is_complete()
        except Exception:  # noqa: BLE001 - the launch failed; its event reports it
            done = True
        answers[tok] = done
    return done
