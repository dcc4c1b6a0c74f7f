"""``sycl.queue``: submits command groups to one device and collects their errors.

``submit`` builds a ``handler``, runs the command-group function and enqueues the command
it describes: a kernel launch through its launch plan (``runtime/launch_plan.py``, as
``parallel_for`` and ``single_task`` do), any other command through ``_submit``, which
adds the buffer and in-order dependencies and hands the event to ``scheduler.enqueue``
(see there for how commands start). ``_record`` keeps the queue's record of its commands. Errors found while building the group are raised by ``submit``. Errors
of running commands (a host task's exception, a failed launch, a failed debug check) are
asynchronous; each is delivered once:

* without an ``async_handler``, ``wait()`` on the failed command's event (or on a
  command that did not run because of it) raises it, and so do ``queue.wait()``,
  ``wait_and_throw()`` and ``throw_asynchronous()`` (several: one ``sycl.exception``
  listing them, ``.exceptions`` holding each);
* with one, ``wait_and_throw()`` / ``throw_asynchronous()`` hand it the list;
* one still undelivered when the queue is collected goes to the handler, or without
  one is written to stderr: an error is never dropped silently.

A failed command group never leaves the queue unusable: nothing is recorded until the
group is complete.

>>> import pysycl as sycl
>>> q = sycl.queue(in_order=True)
>>> q.submit(lambda cgh: cgh.host_task(lambda: None)).wait()
>>> q.is_in_order()
True
"""
from __future__ import annotations

import atexit
import sys
import threading
import traceback
import weakref
from threading import get_ident as _get_ident

from .. import config
from ..detail import trace
from ..detail.memo import LRUMemo, Memo
from ..errors import errc, exception, type_error
from ..properties import runtime as rt_props
from .context import context as context_cls, is_async_handler as _is_async_handler
from .device import device as device_cls, select_among
from .event import (STREAM, as_events, error_box, event, new_event, record_wait_list,
                    running_host_task, settled, still_matters)
from .handler import handler
from .keepalive import KeepAlive, orphans
from .info import get_info
from . import reduction as reductions
from .launch_plan import LaunchPlan, failed_event
from .reduction import reduction
from .pickling import not_picklable
from .ranges import SINGLE_TASK, offset_range
from .ranges import id as id_cls
from .ranges import nd_range as nd_range_cls
from .scheduler import enqueue

_launch_module = None

# A kernel-like object that chooses its own launch (``sycl.autotune``) has this method;
# the queue and the handler hand such launches to it (runtime/autotune.py).
TUNED_LAUNCH = "_sycl_tuned_launch"


def _get_launcher():
    global _launch_module
    if _launch_module is None:
        from ..bundle import launch
        _launch_module = launch
    return _launch_module.get_launcher


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _are_events(value) -> bool:
    """Whether ``value`` is an event or a non-empty list of events."""
    return isinstance(value, event) or (
        isinstance(value, (list, tuple)) and bool(value) and
        all(isinstance(e, event) for e in value))


def _after_events(events, args, depends_on, what: str):
    """``((kernel, *args), depends_on)`` of a launch shortcut given its dependency events
    before the kernel, as SYCL's overloads take them (``q.parallel_for(r, ev, kernel,
    ...)``, ``q.single_task([e1, e2], kernel)``)."""
    if not args:
        raise type_error(errc.invalid, f"queue.{what}: no kernel after the dependency events")
    return args, _events_in_place(events, None, depends_on)[1]


def _is_offset(space, value, args) -> bool:
    """Whether ``value`` is the offset of ``parallel_for(range, id, kernel, ...)``."""
    return isinstance(value, id_cls) and bool(args) and not isinstance(space, nd_range_cls)


def _events_in_place(value, default, depends_on):
    """``(value, depends_on)`` where a positional ``value`` may be the dependency events
    of SYCL's shortcut overloads (an event or a list of events) instead."""
    if not _are_events(value):
        return value, depends_on
    if depends_on is not None:
        raise exception(errc.invalid, "dependency events given twice (positionally and as "
                        "depends_on=)")
    return default, value

# Outstanding commands an out-of-order queue keeps before it forgets finished ones.
_TRIM_AT = 256


class queue:
    """``sycl.queue(dev_or_selector=None, context=None, *, in_order=False,
    enable_profiling=False, async_handler=None, native_stream=None)``.

    ``native_stream``: run the queue's commands on an existing backend stream instead of
    a new one (CUDA: a ``torch.cuda.Stream``, a CuPy stream, anything with
    ``__cuda_stream__``, or a raw ``CUstream`` handle as an int); the queue never
    destroys it. :meth:`from_native` also finds the device from the stream."""

    __reduce__ = not_picklable("queue", "make a new sycl.queue in the other process")

    def __init__(self, dev_or_selector=None, context=None, *more, in_order=False,
                 enable_profiling=False, async_handler=None, properties=None,
                 native_stream=None):
        if more or (callable(context) and not isinstance(context, context_cls)) or \
                isinstance(dev_or_selector, context_cls) or \
                rt_props.is_property_list(dev_or_selector):
            dev_or_selector, context, handler, plist = _positional_queue_args(
                dev_or_selector, context, *more)
            if handler is not None:
                if async_handler is not None:
                    raise exception(errc.invalid, "async_handler given twice")
                async_handler = handler
            if plist is not None:
                properties = rt_props.as_properties(plist).merge(
                    rt_props.as_properties(properties))
            if isinstance(context, context_cls) and dev_or_selector is None:
                dev_or_selector = context.get_devices()[0]
        if async_handler is None and (context is None or rt_props.is_property_list(context)):
            if _is_async_handler(dev_or_selector):
                # queue(async_handler[, property_list]) of SYCL 2020 (4.6.5.1).
                dev_or_selector, async_handler = None, dev_or_selector
        if isinstance(dev_or_selector, device_cls):
            dev = dev_or_selector
        elif isinstance(context, context_cls):
            # A selector given with a context chooses among the context's devices.
            dev = select_among(dev_or_selector, context.get_devices(), repr(context))
        else:
            dev = device_cls(dev_or_selector)
        if rt_props.is_property_list(context):   # queue(dev, property_list), as in C++
            context, properties = None, rt_props.as_properties(context).merge(
                rt_props.as_properties(properties))
        self._properties = rt_props.queue_properties(properties, in_order, enable_profiling)
        in_order = self._properties.has_property(rt_props.in_order)
        enable_profiling = self._properties.has_property(rt_props.enable_profiling)
        if context is None:
            context = context_cls._default_for(dev)
        elif not context._contains(dev):
            raise exception(errc.invalid, f"{dev!r} is not in the queue's context {context!r}")
        if async_handler is not None and not callable(async_handler):
            raise exception(errc.invalid, "async_handler must be callable(list_of_exceptions)")
        if async_handler is None:
            # Without its own, a queue's errors go to its context's handler (SYCL 2020
            # 4.13.1.2), then to the default one.
            async_handler = context._async_handler
        self._device = dev
        self._desc = dev._desc
        self._context = context
        self._driver = dev.driver
        self._in_order = bool(in_order)
        # Tracing (PYSYCL_TRACE) measures every command as profiling does.
        self._profiling = bool(enable_profiling) or trace.recorder() is not None
        if self._profiling and not dev.has("queue_profiling"):
            raise exception(errc.feature_not_supported, f"{dev.name!r} cannot profile queues")
        self._async_handler = async_handler
        self._stream = self._create_stream() if native_stream is None else \
            self._wrap_stream(native_stream)
        # A backend stream that runs its commands in issue order lets a command follow
        # one issued earlier on it without the host waiting (OpenCL queue, CUDA stream).
        self._stream_in_order = self._driver.streams_in_order
        # Undelivered errors of its commands; what is left when the queue is collected
        # goes to the handler or stderr.
        self._errors = error_box()
        _live.add(self)
        self._lock = threading.Lock()
        self._last = None
        self._outstanding: list = []
        self._trim_at = _TRIM_AT
        # What launches issued to the device hold (their arguments' objects) until it ran
        # them: the events may be dropped long before that.
        self._held = KeepAlive()
        # Atomic reductions' accumulators (runtime/reduction.py), dropped when a command
        # fails (a kernel may have left one midway): kept while the queue's error count
        # is the second item.
        self._accumulators: tuple = ({}, 0)
        self._issued = None if self._in_order else (None, None)
        # kernel -> its LaunchPlan here (launches with nothing of their own); (kernel,
        # spec-constant values, properties) -> a command group's (bounded: a program may
        # set a new value in every group).
        self._plans = Memo()
        self._group_plans = LRUMemo(config.max_programs)

    def _create_stream(self):
        return self._driver.create_stream(self._desc, self._profiling,
                                          context=self._context.handle)

    def _wrap_stream(self, native):
        return self._driver.wrap_stream(self._desc, native_stream_handle(native),
                                        self._profiling)

    @classmethod
    def from_native(cls, stream, device=None, context=None, **kwargs) -> "queue":
        """A queue on an existing CUDA stream: ``sycl.queue.from_native(
        torch.cuda.current_stream())``, ``from_native(cupy.cuda.Stream(), dev)``,
        ``from_native(0x7f.., dev, in_order=True)``. ``device`` defaults to the stream's
        GPU (PyTorch ``stream.device``, CuPy ``stream.device_id``), else the first CUDA
        GPU; other keywords are the constructor's. Commands of other libraries on the same
        stream run in order with the queue's."""
        if device is None:
            ordinal = getattr(stream, "device_id", None)
            if ordinal is None:
                ordinal = getattr(getattr(stream, "device", None), "index", None)
            gpus = [d for d in device_cls.get_devices()
                    if getattr(d.backend, "name", d.backend) == "cuda"]
            if not gpus:
                raise exception(errc.platform, "queue.from_native: no CUDA device")
            device = gpus[int(ordinal or 0)]
        return cls(device, context, native_stream=stream, **kwargs)

    def get_native(self):
        """The backend stream (CUDA: the ``CUstream`` handle as an int, for
        ``torch.cuda.ExternalStream`` or ``cupy.cuda.ExternalStream``)."""
        ptr = getattr(self._stream, "ptr", None)
        return int(ptr) if ptr is not None else self._stream

    # Info --------------------------------------------------------------------------------
    def get_device(self) -> device_cls:
        return self._device

    def get_context(self) -> context_cls:
        return self._context

    device = property(get_device)
    context = property(get_context)

    def is_in_order(self) -> bool:
        return self._in_order

    def has_property(self, key) -> bool:
        """``q.has_property(sycl.property.queue.in_order)`` (or the name ``"in_order"``)."""
        return rt_props.has_named(self._properties, key)

    def get_property(self, key):
        """The queue's property of class ``key``; ``errc.invalid`` if it has none."""
        return self._properties.get_property(key)

    def get_backend(self):
        return self._device.backend

    def get_info(self, descriptor):
        """``q.get_info(sycl.info.queue.device)`` (``context``, ``device``)."""
        return get_info(self, descriptor)

    # Submission --------------------------------------------------------------------------
    def submit(self, cgf, depends_on=None, secondary_queue=None) -> event:
        """Call ``cgf(cgh)`` and enqueue the command it describes.

        ``q.submit(cgf, secondary_queue)`` (SYCL 2020 4.6.5.1): when submitting to this
        queue fails (the kernel cannot run or build on its device, an argument it
        does not take...), ``cgf`` is submitted to ``secondary_queue`` instead; if that
        fails too, its error is raised with this queue's as the cause. Only submission
        falls back: a command that fails while running reports on its own queue."""
        if secondary_queue is None and isinstance(depends_on, queue):
            depends_on, secondary_queue = None, depends_on
        if secondary_queue is None:
            return self._submit_cgf(cgf, depends_on)
        if not isinstance(secondary_queue, queue):
            raise exception(errc.invalid, f"the secondary queue must be a sycl.queue, not "
                            f"{type(secondary_queue).__name__}")
        try:
            return self._submit_cgf(cgf, depends_on)
        except Exception as primary:   # never KeyboardInterrupt/SystemExit
            try:
                return secondary_queue._submit_cgf(cgf, depends_on)
            except Exception as secondary:
                raise secondary from primary

    def _submit_cgf(self, cgf, depends_on) -> event:
        if not callable(cgf):
            raise type_error(errc.invalid, "queue.submit takes a command-group function "
                             f"cgf(cgh), not {type(cgf).__name__}")
        cgh = handler(self)
        if depends_on is not None:
            cgh.depends_on(depends_on)
        cgf(cgh)
        return self._enqueue(cgh)

    def _enqueue(self, cgh: handler) -> event:
        """The command ``cgh`` describes, made this queue's (the end of ``submit``)."""
        plan = cgh._plan
        if plan is not None:
            return plan.enqueue(cgh._range, cgh._args, cgh._deps, cgh)
        return self._submit(cgh._kind, cgh._run, cgh._deps, cgh._accs, cgh._what)

    def _submit(self, kind: int, run, deps, accs=None, what: str | None = None) -> event:
        """A command that may have to wait: its event, recorded, started by the scheduler
        now or once ``deps``, the earlier users of the buffers of ``accs`` and (in order)
        the queue's previous command have completed. ``what``: its name in a trace."""
        ev = new_event(self, kind, run)
        if self._profiling and trace.recorder() is not None:
            self._trace(ev, what or "command")
        if accs:
            deps = list(deps) if deps else []
            for acc in accs:
                for dep in acc._mem._register(ev, acc.write):
                    if dep is not ev:
                        deps.append(dep)
        if self._in_order:
            with self._lock:
                last = self._last
                self._record(ev)
            if last is not None and still_matters(last):
                deps = [last] if not deps else [*deps, last]
        else:
            self._record(ev)
        if deps:
            record_wait_list(ev, deps)
        return enqueue(self, ev, deps)

    def _trace(self, ev: event, what: str) -> None:
        """Put ``ev`` on this queue's track of the trace once it completes."""
        rec, track = trace.recorder(), f"queue {id(self):#x} on {self._device.name}"

        def done():
            times = ev._times
            try:
                _, start, end = (ev.profiling_command_submit, ev.profiling_command_start,
                                 ev.profiling_command_end)
            except exception:
                start, end = (times[1] or times[0], times[2]) if times else (0, 0)
            rec.add(what, "command", start, end, track,
                    {"device": self._device.name, "backend": self._device.backend.name,
                     "failed": ev._error is not None})
        ev._on_done(done)

    def _record(self, ev: event) -> event:
        """The queue's bookkeeping of each new command's event ``ev`` (returned): the
        newest command of an in-order queue (the caller holds the queue's lock), else
        one of those ``wait()`` waits for unless complete. ``_issued``: the newest
        command issued at once (in order), or issued at once to a backend stream that
        runs commands in issue order and the thread that issued it (out of order)."""
        if self._in_order:
            self._last = ev
            if ev._started:
                self._issued = ev
            return ev
        if ev._done:
            return ev
        if ev._started and self._stream_in_order:
            me = _get_ident()
            prev, prev_thread = self._issued
            self._issued = (ev, me)
        else:
            prev = prev_thread = me = None
        out = self._outstanding
        if out and ev._run is None:
            newest = out[-1]
            # wait() needs only the newer of two plain launches this thread issued one
            # after the other to one in-order stream (the older finishes first), and no
            # finished command. Without this a burst of launches that are all still
            # running grew the list and re-filtered it on every launch. (A launch of
            # another thread may have been issued after it was, so not that one.)
            if newest._done or (newest is prev and prev_thread == me and
                                prev._run is None and prev._callbacks is None):
                out[-1] = ev
                return ev
        out.append(ev)
        if len(out) > self._trim_at:
            # Forget finished commands now and then, asking the backend about those
            # issued at once (a launch holding its arguments' arrays is never replaced
            # above). The next trim waits until the list doubles: launches that the
            # device has not caught up with cost O(1) each, not a scan per launch.
            answers: dict = {}
            self._outstanding = out = [pending for pending in out
                                       if not settled(pending, answers)]
            self._trim_at = max(_TRIM_AT, 2 * len(out))
        return ev

    def _follows_at_once(self, last) -> bool:
        """Whether a command issued now needs no wait for ``last``, an in-order queue's
        newest command: there is none, it completed, or it was issued to this queue's
        backend stream, which runs commands in issue order; and it did not fail with an
        error nobody has seen (then the new command must not run)."""
        if last is None:
            return True
        failure = last._error
        if failure is not None and not failure.delivered:
            return False
        return last._done or (last is self._issued and self._stream_in_order) or (
            last._kind == STREAM and last._started and self._stream_in_order
            and getattr(last._token, "stream", None) is self._stream)

    def _failed(self, error: BaseException) -> event:
        """The event of a command whose issue failed with ``error``: complete, the error
        an asynchronous one of this queue."""
        ev = failed_event(self, error)
        if self._in_order:
            with self._lock:
                return self._record(ev)
        return self._record(ev)

    def _plan(self, kernel, bundle=None, image_selector=None, spec=None,
              properties=None) -> LaunchPlan:
        """The :class:`LaunchPlan` of ``kernel`` here, kept by the queue: per kernel for
        launches with nothing of their own, per kernel, spec-constant values and
        properties for a command group's own (bounded). A group bound to a kernel
        bundle gets a plan of its own each time (the bundle keeps the launchers)."""
        if bundle is None and image_selector is None:
            if not spec and properties is None:
                try:
                    return self._plans.entries[kernel]
                except (KeyError, TypeError):
                    pass
                plans, key, bind = self._plans, kernel, True
            else:
                plans, bind = self._group_plans, False
                key = (kernel, frozenset(spec.items()) if spec else None, properties)
            if _hashable(key):   # (not: no kernel, or properties in a list)
                return plans.get_or_make(key, lambda: LaunchPlan(
                    self, self._launcher(kernel, None, None, spec, properties), bind))
        return LaunchPlan(self, self._launcher(kernel, bundle, image_selector, spec,
                                               properties), bind=False)

    def _launcher(self, kernel, bundle, image_selector, spec, properties):
        """The launcher of ``kernel`` on this queue's device and context: the kernel's,
        or the bundle's (``bundle/launch.py``)."""
        return _get_launcher()(kernel, self._device, self._context, bundle=bundle,
                               image_selector=image_selector, spec_values=spec,
                               launch_properties=properties)

    # Shortcuts (same arguments as the handler's, plus depends_on=) -----------------------
    def _shortcut(self, depends_on):
        cgh = handler(self)
        if depends_on is not None:
            cgh.depends_on(depends_on)
        return cgh

    def parallel_for(self, range_or_nd_range, kernel, *args, depends_on=None,
                     properties=None) -> event:
        if properties is None:
            try:
                plan = self._plans.entries[kernel]
            except (KeyError, TypeError):
                if _are_events(kernel) or _is_offset(range_or_nd_range, kernel, args):
                    return self._shortcut_form(range_or_nd_range, kernel, args, depends_on,
                                               None)
                if hasattr(kernel, TUNED_LAUNCH):   # sycl.autotune: it picks the launch
                    return kernel._sycl_tuned_launch(self, range_or_nd_range, args,
                                                     depends_on, None)
                plan, args = self._reduction_plan(kernel, args, None)
        elif _are_events(kernel) or _is_offset(range_or_nd_range, kernel, args):
            return self._shortcut_form(range_or_nd_range, kernel, args, depends_on,
                                       properties)
        elif hasattr(kernel, TUNED_LAUNCH):
            return kernel._sycl_tuned_launch(self, range_or_nd_range, args, depends_on,
                                             properties)
        else:
            plan, args = self._reduction_plan(kernel, args, properties)
        return plan.enqueue(range_or_nd_range, args,
                            None if depends_on is None else as_events(depends_on))

    def _shortcut_form(self, space, first, args, depends_on, properties) -> event:
        """``parallel_for`` given what SYCL's overloads put before the kernel: its
        dependency events (``parallel_for(r, ev, kernel, ...)``), or the deprecated
        offset (``parallel_for(r, sycl.id(...), kernel, ...)``)."""
        if _are_events(first):
            args, depends_on = _after_events(first, args, depends_on, "parallel_for")
        else:
            space, args = offset_range(space, first), args
        return self.parallel_for(space, *args, depends_on=depends_on, properties=properties)

    def _reduction_plan(self, kernel, args, properties):
        """The plan and arguments of a launch whose plan is not at hand: reductions
        before the kernel (C++'s order) take their places, and a kernel whose reducers
        take their operator from the launch is compiled for it (runtime/reduction.py)."""
        leading = ()
        if kernel.__class__ is reduction or getattr(kernel, "unbound_reducers", None):
            kernel, args, leading = reductions.prepare(kernel, args)
        plan = self._plan(kernel, properties=properties)
        if leading:
            args = reductions.place(plan.launcher.params, args, leading, plan.name)
        return plan, args

    def single_task(self, kernel, *args, depends_on=None, properties=None) -> event:
        try:   # (the plan looked up inline, as parallel_for does: a launch loop's cost)
            plan = self._plans.entries[kernel] if properties is None else None
        except (KeyError, TypeError):
            plan = None
        if plan is None and _are_events(kernel):   # single_task(event(s), kernel, ...)
            args, deps = _after_events(kernel, args, depends_on, "single_task")
            return self.single_task(*args, depends_on=deps, properties=properties)
        if plan is None and hasattr(kernel, TUNED_LAUNCH):
            return kernel._sycl_tuned_launch(self, SINGLE_TASK, args, depends_on, properties)
        return (plan or self._plan(kernel, properties=properties)).enqueue(
            SINGLE_TASK, args, None if depends_on is None else as_events(depends_on))

    def memcpy(self, dst, src, num_bytes=None, offset=0, depends_on=None) -> event:
        """SYCL 2020's ``memcpy(dest, src, num_bytes[, offset][, dep_events])``: ``offset``
        (bytes) applies to a device_global side; events may stand in its place, as in
        the USM forms ``memcpy(dest, src, num_bytes, dep_events)``."""
        offset, depends_on = _events_in_place(offset, 0, depends_on)
        cgh = self._shortcut(depends_on)
        cgh.memcpy(dst, src, num_bytes, offset)
        return self._enqueue(cgh)

    def copy(self, src, dst, count=None, start_index=0, depends_on=None) -> event:
        """SYCL 2020's ``copy(src, dest, count[, start_index][, dep_events])``:
        ``start_index`` (elements) applies to a device_global side."""
        start_index, depends_on = _events_in_place(start_index, 0, depends_on)
        cgh = self._shortcut(depends_on)
        cgh.copy(src, dst, count, start_index)
        return self._enqueue(cgh)

    def fill(self, dst, value, count=None, depends_on=None) -> event:
        cgh = self._shortcut(depends_on)
        cgh.fill(dst, value, count)
        return self._enqueue(cgh)

    def memset(self, dst, byte, num_bytes=None, depends_on=None) -> event:
        cgh = self._shortcut(depends_on)
        cgh.memset(dst, byte, num_bytes)
        return self._enqueue(cgh)

    def prefetch(self, ptr, num_bytes=None, *, depends_on=None) -> event:
        cgh = self._shortcut(depends_on)
        cgh.prefetch(ptr, num_bytes)
        return self._enqueue(cgh)

    def update_host(self, acc, *, depends_on=None) -> event:
        """The queue shortcut of ``handler.update_host`` (SYCL 2020 4.6.5.2): ``acc`` is
        a placeholder accessor (made without a handler), required by the command."""
        cgh = self._shortcut(depends_on)
        cgh.require(acc)
        cgh.update_host(acc)
        return self._enqueue(cgh)

    def mem_advise(self, ptr, num_bytes, advice, *, depends_on=None) -> event:
        cgh = self._shortcut(depends_on)
        cgh.mem_advise(ptr, num_bytes, advice)
        return self._enqueue(cgh)

    def host_task(self, fn, *, depends_on=None) -> event:
        cgh = self._shortcut(depends_on)
        cgh.host_task(fn)
        return self._enqueue(cgh)

    def submit_barrier(self, events=None) -> event:
        """An event that completes after ``events`` (default: everything submitted)."""
        cgh = self._shortcut(None)
        if events is None:
            events = [self._last] if self._in_order and self._last is not None else \
                [e for e in self._outstanding if not e._done]
        cgh.depends_on(events)
        return self._enqueue(cgh)

    ext_oneapi_submit_barrier = submit_barrier

    # Waiting and errors ------------------------------------------------------------------
    def wait(self) -> None:
        """Block until every command submitted so far completed; then, without an
        ``async_handler``, raise their undelivered errors (see the module doc)."""
        current = running_host_task()
        if current is not None and current._queue is self:
            raise exception(errc.invalid, "queue.wait() in a host task of the same queue "
                            "would wait for that host task itself; wait for the events "
                            "it needs instead (or use depends_on)")
        if self._in_order:
            last = self._last
            if last is not None and not last._done:
                last._wait_done()
        else:
            pending = self._outstanding
            self._outstanding = []
            for e in pending:
                if not e._done:
                    e._wait_done()
        if self._held:
            self._held.sweep()
        if self._errors and self._async_handler is None:
            self.throw_asynchronous()
        elif self._errors:
            _raise_fatal(self._errors.take_fatal())

    def wait_and_throw(self) -> None:
        """``wait()``, then ``throw_asynchronous()``."""
        self.wait()
        self.throw_asynchronous()

    def throw_asynchronous(self) -> None:
        """Hand the undelivered errors of finished commands to ``async_handler``;
        without one, raise (the error itself when there is one, else a
        ``sycl.exception`` listing them)."""
        # KeyboardInterrupt/SystemExit of a host task end the program, not a command:
        # raised here, never handed to the async_handler nor folded into a
        # sycl.exception (which `except Exception` would catch).
        _raise_fatal(self._errors.take_fatal())
        errors = self._errors.take()
        if not errors:
            return
        if self._async_handler is not None:
            self._async_handler(errors)
            return
        raise _combined(errors)

    def __del__(self):
        # (__del__, not weakref.finalize: a failed host task's traceback often refers
        # to its queue, and a finalizer's arguments would keep that cycle alive.)
        held = getattr(self, "_held", None)
        if held:   # commands still running need their arguments after the queue is gone
            orphans.adopt(held.take())
        errors = getattr(self, "_errors", None)
        if errors:
            _report_lost(errors, self._async_handler, repr(self))

    def __repr__(self):
        return (f"<sycl.queue on {self._device!r}"
                f"{' in_order' if self._in_order else ''}>")


def _positional_queue_args(*args) -> tuple:
    """``(device or selector, context, async_handler, property list)`` of C++'s
    positional queue constructors, told apart by type: ``queue(context, device or
    selector[, async_handler][, property_list])``, ``queue(device or selector[,
    async_handler][, property_list])``, and pysycl's ``queue(device, context)``. A
    callable before any device is the selector, one after it the async_handler."""
    dev = ctx = handler = plist = None
    for arg in args:
        if arg is None:
            continue
        if isinstance(arg, context_cls) and ctx is None:
            ctx = arg
        elif isinstance(arg, device_cls) and dev is None:
            dev = arg
        elif rt_props.is_property_list(arg) and plist is None:
            plist = arg
        elif callable(arg) and dev is None and handler is None:
            dev = arg
        elif callable(arg) and handler is None:
            handler = arg
        else:
            raise exception(errc.invalid, f"sycl.queue: unexpected argument {arg!r} (takes a "
                            "context, a device or selector, an async_handler and properties)")
    return dev, ctx, handler, plist


def _raise_fatal(fatal: list) -> None:
    if fatal:
        raise fatal[0]


def _combined(errors: list) -> BaseException:
    """The one exception to raise for ``errors``: the error itself when alone."""
    if len(errors) == 1:
        return errors[0]
    err = exception(errc.runtime, f"{len(errors)} asynchronous errors: " + "; ".join(
        f"{type(e).__name__}: {e}" for e in errors))
    err.exceptions = errors
    err.__cause__ = errors[0]
    return err


_live: "weakref.WeakSet[queue]" = weakref.WeakSet()


@atexit.register
def _report_lost_at_exit() -> None:
    """Queues still alive at exit report what nobody saw, as a collected one does."""
    for q in list(_live):
        if q._errors:
            _report_lost(q._errors, q._async_handler, repr(q))


def _report_lost(box: error_box, async_handler, name: str) -> None:
    """A collected queue's undelivered errors: to its handler (as DPC++'s queue
    destructor does), else to stderr."""
    errors = box.take()
    if not errors:
        return
    if async_handler is not None:
        try:
            async_handler(errors)
            return
        except Exception as e:  # noqa: BLE001 - a finalizer cannot raise: print it too
            errors = [*errors, e]
    try:
        print(f"pysycl: {len(errors)} asynchronous error(s) of {name} were never "
              "delivered (no wait() or wait_and_throw() saw them):", file=sys.stderr)
        for e in errors:
            traceback.print_exception(e, file=sys.stderr)
    except (OSError, ValueError):   # stderr closed at interpreter exit
        pass


def native_stream_handle(stream) -> int:
    """The raw handle of a native stream object: an int, ``__cuda_stream__()`` (the CUDA
    stream protocol), ``cuda_stream`` (PyTorch), ``ptr`` (CuPy), ``handle``.

    >>> native_stream_handle(0x1234)
    4660
    """
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if callable(proto):
        return int(proto()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if value is not None:
            return int(value)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise exception(errc.invalid, f"not a native stream: {stream!r}") from None
