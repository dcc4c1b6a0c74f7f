"""Kernel launches: one road from ``parallel_for`` / ``single_task`` to the driver.

``handler.parallel_for`` (at the end of its command group) and ``queue.parallel_for``
alike take the :class:`LaunchPlan` of their kernel on the queue and call
``plan.enqueue(range, args, deps)``. The plan is made once per kernel on a queue from
what the kernel's launches share (the launcher and its argument packer, made once per
kernel and device; the kernel's work-group size properties; the driver's launch bound to
the queue's stream), and each launch then does only what can change:

1. the range is normalised and checked (:meth:`LaunchPlan.index_space`, the one place
   that reads what ``parallel_for`` was given; the last range object, and the last
   nd_range by its ranges, are remembered, so a launch loop checks them once);
2. the arguments are packed (``runtime/args.py``): a wrong argument is a synchronous
   ``sycl.exception`` and nothing is recorded;
3. a launch with nothing to wait on (no ``depends_on``, no accessors, no pending
   predecessor on an in-order queue, no profiling) is issued at once; any other becomes a command that the scheduler starts
   once its dependencies completed (``queue._submit``).

Either way the queue records the launch's event in one place, ``queue._record``.

>>> q = sycl.queue(); a = sycl.malloc_shared(3, np.int32, q)     # doctest: +SKIP
>>> q.parallel_for(3, twice, a).wait()                           # doctest: +SKIP
"""
from __future__ import annotations

from ..errors import errc, exception
from . import args as args_mod
from .event import (STREAM, _token_done, complete, event, issued_event, new_event,
                    set_token)
from .handler import handler
from .ranges import SINGLE_TASK, launch_range
from .ranges import id as id_cls
from .ranges import nd_range as nd_range_cls
from .ranges import range as range_cls
from .reduction import bind_all as bind_reductions, bound_reduction
from .replay import arm as arm_replay


class LaunchPlan:
    """Launching one kernel (one launcher: kernel, device, bundle, spec-constant values,
    launch properties) on one queue.

    ``enqueue(range, args, deps)`` is the whole launch; its fast case (nothing to wait
    on) issues it at once, ``issue_in_order`` on an in-order queue.
    ``bound`` is the driver's launch bound to the queue's stream, looked up at the first
    launch without a global offset (a launch with one goes through the launcher's
    general ``launch``)."""

    __slots__ = ("queue", "launcher", "packer", "name", "index_kind", "dims", "stream",
                 "desc", "local_limit", "checks_work_group", "waits", "binds", "bound",
                 "poll", "stream_ordered", "done_event", "done_token", "cgh", "last_space",
                 "last_nd_range", "reducers", "last_token", "replay", "again", "again2",
                 "replays")

    def __init__(self, queue, launcher, bind: bool = True):
        self.queue = queue
        self.launcher = launcher
        self.packer = packer = args_mod.packer_for(launcher)
        self.name = packer.kernel
        self.index_kind = packer.index_kind
        self.dims = packer.dims
        self.stream = queue._stream
        self.desc = queue._desc
        self.local_limit = queue._desc.local_mem_size
        # The kernel's work-group size properties (SYCL 2020 5.8.1) constrain its ranges.
        self.checks_work_group = bool(launcher.reqd_work_group_size or
                                      launcher.max_work_group_size or
                                      launcher.max_linear_work_group_size)
        # A profiling queue times each command from its submission: never issued at once.
        self.waits = queue._profiling
        # A plan made for one command group only (its own spec-constant values, bundle or
        # properties) launches through the launcher: binding would cost more than it saves.
        self.binds = bind
        self.bound = None
        # Launch tokens worth asking about at issue (native CPU: complete on return).
        self.poll = not queue._driver.launch_tokens_pending
        # The queue's backend stream runs commands in issue order.
        self.stream_ordered = queue._stream_in_order
        # The one event of every launch that finished before the driver returned (nothing
        # in it changes once complete; failed launches get events of their own).
        self.done_event = event()
        self.done_event._queue = queue
        self.done_event._kind = STREAM
        self.done_token = None   # a token seen complete: tokens never become incomplete
        # Packers read the queue through a handler; this one never holds a command.
        self.cgh = handler(queue)
        # (range object, (global size, local size, offset)) of the last launch over an
        # immutable range: the same object, or a sycl.range equal to it, is not checked
        # again.
        self.last_space = (_NO_RANGE, None)
        self.last_nd_range = (None, None)   # ((global, local, offset) ranges, as above)
        # sycl.reduction arguments are bound to each launch's range (runtime/reduction.py).
        self.reducers = packer.has_reducers
        self.last_token = None   # the token of the last launch holding objects (_issued)
        # Launch loops' launches made again (runtime/replay.py): ``again(range, args)``,
        # armed by a launch the driver's bound launch found the repeat of one in its
        # records (its ``replay``); ``again2``, the one armed before (a loop whose
        # launches alternate two sets of arguments).
        self.replay = None
        self.again = self.again2 = None
        self.replays = packer.pointers is not None and not self.poll and not self.waits

    # The launch --------------------------------------------------------------------------
    def enqueue(self, space, args, deps=None, cgh=None):
        """Launch over ``space`` (what ``parallel_for`` takes, or ``SINGLE_TASK``) with
        the user's ``args``, after the events ``deps``; ``cgh``: the command group it is
        the command of (its accessors). Returns the launch's event."""
        again = self.again
        # (A command group's launch too, unless it has accessors: its plan is the same.)
        if again is not None and not deps and (cgh is None or not cgh._accs):
            ev = again(space, args)
            if ev is not None:
                return ev
            again = self.again2
            if again is not None:
                ev = again(space, args)
                if ev is not None:
                    return ev
        last = self.last_space
        if space is last[0] or (space.__class__ is range_cls and space == last[0]):
            global_size, local_size, offset = last[1]
        else:
            global_size, local_size, offset = self.index_space(space)
        keep: list = []
        if self.reducers:
            args = bind_reductions(args, cgh or self.cgh, global_size, local_size)
        packed, local_bytes = self.packer.pack(args, cgh or self.cgh, keep)
        if local_bytes > self.local_limit:
            raise exception(errc.nd_range, f"kernel {self.name} asks for {local_bytes} bytes "
                            f"of local memory; {self.queue.get_device().name!r} has "
                            f"{self.local_limit}")
        staged = _stages(keep) if keep else None
        if deps or self.waits or cgh is not None and cgh._accs or staged and (
                not self.stream_ordered or _copies_out(staged)):
            accs = cgh._accs if cgh is not None else None
            run = self.command(global_size, local_size, offset, packed, local_bytes, keep,
                               accs, staged)
            return self.queue._submit(STREAM, run, deps, accs, f"kernel {self.name}")
        queue = self.queue
        if queue._in_order:
            return self.issue_in_order(global_size, local_size, offset, packed, local_bytes,
                                       keep, staged, space, args)
        # Nothing to wait on, out of order: issue now. (Inline: this is every launch of a
        # launch loop.) A driver error is the launch's asynchronous error. Stages that
        # only copy in (a reduction's identity) go first on the same in-order stream.
        bound = self.bound
        try:
            if staged:
                _copy_in(staged)
            if offset is None and bound is not None:
                tok = bound(global_size, local_size, packed, local_bytes)
            else:
                tok = self._launch(global_size, local_size, offset, packed, local_bytes)
        except Exception as error:  # noqa: BLE001 - asynchronous, as a command's
            return queue._failed(error)
        if not self.poll:   # (not asked whether the launch it just issued is complete)
            if self.replay is not None and offset is None:
                self._arm(space, args, packed, tok)
            return queue._record(self._issued(tok, keep))
        if tok is None or tok is self.done_token or _token_done(tok):
            self.done_token = tok   # complete: nothing for wait() to wait for
            return self.done_event
        return queue._record(self._event(tok, keep))

    def index_space(self, space):
        """``(global size, local size or None, offset or None)`` of ``space``, checked
        against the kernel (index kind, dimensions, work-group properties) and the
        device's limits; ``errc.nd_range`` (with the Python type users expect)."""
        parts = None
        if space.__class__ is nd_range_cls:
            # An nd_range can be changed in place: it is remembered by its three ranges.
            parts = (space.global_range, space.local_range, space.offset)
            last = self.last_nd_range
            if parts == last[0] and all(part.__class__ in _INDEX_CLASSES for part in parts):
                return last[1]
        if space is SINGLE_TASK:
            global_size, local_size, offset = space
        else:
            global_size, local_size, offset = launch_range(space)
            if self.index_kind == "nd_item" and local_size is None:
                raise exception(errc.nd_range, f"kernel {self.name} takes an nd_item: launch "
                                "it with a sycl.nd_range")
            if self.dims and self.dims != len(global_size):
                raise exception(errc.nd_range, f"kernel {self.name} is {self.dims}-D but the "
                                f"range {global_size} is {len(global_size)}-D")
        if self.checks_work_group:
            local_size = self.launcher.check_nd_range(global_size, local_size)
        args_mod.check_launch(self.desc, global_size, local_size, self.name, offset)
        if not any(offset):
            offset = None
        kind = space.__class__
        if kind is range_cls or kind is int or space is SINGLE_TASK or kind is tuple and all(
                extent.__class__ is int for extent in space):   # immutable: remembered
            self.last_space = (space, (global_size, local_size, offset))
        elif parts is not None:
            self.last_nd_range = (parts, (global_size, local_size, offset))
        return global_size, local_size, offset

    def command(self, global_size, local_size, offset, packed, local_bytes, keep, accs,
                staged):
        """The launch as a command the scheduler starts once its dependencies completed:
        the buffers of ``accs`` are made current on the device first, then ``staged``
        (``_stages(keep)``) are prepared. (``keep``, the arguments' objects, lives in
        it.)"""
        queue, launcher, stream = self.queue, self.launcher, self.stream

        def run(_holds=keep):   # (the scheduler keeps this closure until the device ran it)
            if accs:
                for acc in accs:
                    acc._mem._prepare_device(queue._device, queue._context, stream,
                                             acc.write, acc._discard)
            if staged:
                return _launch_staged(launcher, stream, global_size, local_size, offset,
                                      packed, local_bytes, staged)
            return launcher.launch(stream, global_size, local_size, offset, packed,
                                   local_bytes)
        return run

    # The fast case: nothing to wait on ---------------------------------------------------
    def issue_in_order(self, global_size, local_size, offset, packed, local_bytes, keep,
                       staged, space=None, args=None):
        """Issue the launch now on an in-order queue, and record it as the queue's newest
        command, both under the queue's lock (no other thread's command comes between);
        when the newest command is still to be waited for, the launch becomes a command
        that waits for it (``queue._submit``). ``staged``: stages that only copy in, in
        stream order before the kernel. ``space`` and ``args``: the launch's, as given
        (a repeated launch arms ``again``)."""
        queue = self.queue
        bound = self.bound
        lock = queue._lock
        lock.acquire()   # (cheaper than ``with``, which shows per launch)
        try:
            last = queue._last
            # (Inline, the common cases of queue._follows_at_once: nothing before it, a
            # complete command, or this queue's newest launch on its in-order stream.)
            if last is None or last._error is None and (
                    last._done or last is queue._issued and self.stream_ordered) or \
                    queue._follows_at_once(last):
                try:
                    if staged:
                        _copy_in(staged)
                    if offset is None and bound is not None:
                        tok = bound(global_size, local_size, packed, local_bytes)
                    else:
                        tok = self._launch(global_size, local_size, offset, packed,
                                           local_bytes)
                except Exception as error:  # noqa: BLE001 - reported below, unlocked
                    failure = error
                else:
                    if not self.poll:
                        if self.replay is not None and offset is None:
                            self._arm(space, args, packed, tok)
                        return queue._record(self._issued(tok, keep))
                    if tok is None or tok is self.done_token or _token_done(tok):
                        self.done_token = tok
                        return queue._record(self.done_event)
                    return queue._record(self._event(tok, keep))
            else:
                failure = None
        finally:
            lock.release()
        if failure is not None:
            return queue._failed(failure)
        run = self.command(global_size, local_size, offset, packed, local_bytes, keep, None,
                           staged)
        return queue._submit(STREAM, run, None, None, f"kernel {self.name}")

    def _launch(self, global_size, local_size, offset, packed, local_bytes):
        """The driver's launch through the launcher: one with a global offset, or the
        plan's first, which binds it to the queue's stream (a program that fails to
        load fails the launch, asynchronously)."""
        if offset is None and self.binds:
            self.bound = bound = self.launcher.bind(self.stream)
            if self.replays:
                self.replay = getattr(bound, "replay", None)
            return bound(global_size, local_size, packed, local_bytes)
        return self.launcher.launch(self.stream, global_size, local_size, offset, packed,
                                    local_bytes)

    def _arm(self, space, args, packed, tok) -> None:
        """After a launch through the bound launch: a launch the driver found the repeat
        of one in its records (the same KernelArgs: a launch loop) arms ``again`` with
        it (``runtime/replay.py``), where its range was remembered as unchangeable
        (``index_space``). (An armed launch whose record was rewritten since is refused
        by the driver: it takes the general path.)"""
        call, version, launched = self.replay
        if call is None or launched != id(packed):   # (not this launch's: another thread's)
            return
        if space.__class__ is nd_range_cls:   # (changeable: armed with its three ranges)
            parts = (space.global_range, space.local_range, space.offset)
            if parts != self.last_nd_range[0] or \
                    not all(part.__class__ in _INDEX_CLASSES for part in parts):
                return
            space = parts
        elif space is not self.last_space[0] and (space.__class__ is not range_cls or
                                                  space != self.last_space[0]):
            return
        again = arm_replay(self.queue, self.packer.pointers, space, args, packed, call,
                           version, tok)
        if again is not None:
            self.again, self.again2 = again, self.again

    def _event(self, tok, keep):
        """The event of a launch the driver issued, token ``tok``, found not complete:
        it holds ``keep`` (its arguments' objects) until it completes, and the queue
        holds it until then (see runtime/keepalive.py)."""
        ev = new_event(self.queue, STREAM, None)
        ev._started = True
        if keep:
            ev._run = keep.__len__
        set_token(ev, tok)
        if keep and not ev._done:
            self.queue._held.hold(ev)
        return ev

    def _issued(self, tok, keep):
        """``_event`` where the driver's tokens are never complete at issue: not asked.
        A token the driver returned for the previous launch too stands for its stream
        (all its work so far, its errors the stream's): the launch's objects are held
        with it, and its event is as light as a launch's without any."""
        if not keep:
            return issued_event(self.queue, STREAM, tok)
        if tok is self.last_token:
            self.queue._held.hold_objects(tok, keep)
            return issued_event(self.queue, STREAM, tok)
        self.last_token = tok
        ev = issued_event(self.queue, STREAM, tok, keep.__len__)
        self.queue._held.hold(ev)
        return ev


_NO_RANGE = object()
_INDEX_CLASSES = frozenset({range_cls, id_cls})   # immutable tuples of ints


_STAGES = (args_mod.HostStaging, bound_reduction)


def _stages(keep) -> list:
    """What a launch's arguments prepare before it: host arrays copied to the device and
    back (``args.HostStaging``), reductions' memory (``reduction.bound_reduction``). A
    launch with a stage that copies out is a command (it waits for the kernel); one whose
    stages only copy in is issued at once where the queue's stream runs in order."""
    return [k for k in keep if k.__class__ in _STAGES]


def _copies_out(staged) -> bool:
    return any(s.copies_out for s in staged)


def _copy_in(staged) -> None:
    for s in staged:
        s.copy_in()


def _launch_staged(launcher, stream, global_size, local_size, offset, packed, local_bytes,
                   staged):
    """A launch with stages: prepare them, run the kernel and, when a host array is to
    be copied back, wait for it and copy back, so the host arrays hold the results when
    the command completes."""
    _copy_in(staged)
    token = launcher.launch(stream, global_size, local_size, offset, packed, local_bytes)
    back = [s for s in staged if s.copies_out]
    if not back:
        return token
    if token is not None:
        token.wait()
    for s in back:
        s.copy_out()
    return None


def failed_event(queue, error):
    """A started command's event completed with ``error`` (an asynchronous error)."""
    ev = new_event(queue, STREAM, None)
    ev._started = True
    complete(ev, error)
    return ev
