"""``sycl.queue``: submits command groups to one device and collects their errors.

``submit`` builds a ``handler``, runs the command-group function, adds the buffer and
in-order dependencies and hands the event to ``scheduler.enqueue`` (see there for how
commands start). Errors found while building the group are raised by ``submit``. Errors
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
from ..detail.lru import LRU
from ..errors import errc, exception
from ..properties import runtime as rt_props
from . import args as args_mod
from .context import context as context_cls
from .device import device as device_cls
from .event import (STREAM, _token_done, complete, error_box, event, issued_event,
                    new_event, set_token, still_matters)
from .handler import handler
from .info import get_info
from .ranges import nd_range as nd_range_cls
from .ranges import SIZE_LIMIT
from .ranges import range as range_cls
from .scheduler import enqueue
from .pickling import not_picklable

_launch_module = None


def _get_launcher():
    global _launch_module
    if _launch_module is None:
        from ..bundle import launch
        _launch_module = launch
    return _launch_module.get_launcher


_NO_CACHE = object()


def _spec_key(spec):
    if not spec:
        return None
    # The handler stores each value as the constant's bytes; keys are specialization_id
    # objects (alive as long as the kernels that use them) or "@param:" strings.
    try:
        return tuple(sorted((k if isinstance(k, str) else f"#{id(k)}", bytes(v))
                            for k, v in spec.items()))
    except Exception:
        return _NO_CACHE  # not bytes: do not cache



def _events_in_place(value, default, depends_on):
    """``(value, depends_on)`` where a positional ``value`` may be the dependency events
    of SYCL's shortcut overloads (an event or a list of events) instead."""
    is_events = isinstance(value, event) or (
        isinstance(value, (list, tuple)) and value and all(isinstance(e, event) for e in value))
    if not is_events:
        return value, depends_on
    if depends_on is not None:
        raise exception(errc.invalid, "dependency events given twice (positionally and as "
                        "depends_on=)")
    return default, value

class queue:
    """``sycl.queue(dev_or_selector=None, context=None, *, in_order=False,
    enable_profiling=False, async_handler=None, native_stream=None)``.

    ``native_stream``: run the queue's commands on an existing backend stream instead of
    a new one (CUDA: a ``torch.cuda.Stream``, a CuPy stream, anything with
    ``__cuda_stream__``, or a raw ``CUstream`` handle as an int); the queue never
    destroys it. :meth:`from_native` also finds the device from the stream."""

    __reduce__ = not_picklable("queue", "make a new sycl.queue in the other process")

    def __init__(self, dev_or_selector=None, context=None, *, in_order=False,
                 enable_profiling=False, async_handler=None, properties=None,
                 native_stream=None):
        if isinstance(dev_or_selector, context_cls):  # queue(context, selector)
            dev_or_selector, context = context, dev_or_selector
            if dev_or_selector is None:
                dev_or_selector = context.get_devices()[0]
        if isinstance(dev_or_selector, device_cls):
            dev = dev_or_selector
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
        self._device = dev
        self._desc = dev._desc
        self._context = context
        self._driver = dev.driver
        self._in_order = bool(in_order)
        self._profiling = bool(enable_profiling)
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
        # Launchers by (kernel, bundle, selector, spec values, properties), bounded as the
        # process-wide ones are (a new spec-constant value per submit adds one each).
        self._launchers = LRU(config.max_programs)
        # kernel -> _FastLaunch (or False): the shortcut parallel_for / single_task of an
        # already-built kernel with no depends_on / properties, see _FastLaunch.
        self._fast: dict = {}
        # (event, thread id) of the newest launch issued by a _FastLaunch here.
        self._fast_last = (None, None)

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
    def submit(self, cgf, depends_on=None) -> event:
        """Call ``cgf(cgh)`` and enqueue the command it describes."""
        cgh = handler(self)
        if depends_on is not None:
            cgh.depends_on(depends_on)
        cgf(cgh)
        return self._enqueue(cgh)

    def _enqueue(self, cgh: handler) -> event:
        ev = new_event(self, cgh._kind, cgh._run)
        deps = cgh._deps
        accs = cgh._accs
        if accs:
            deps = list(deps) if deps else []
            for acc in accs:
                for d in acc._mem._register(ev, acc.write):
                    if d is not ev:
                        deps.append(d)
        if self._in_order:
            with self._lock:
                last, self._last = self._last, ev
            if last is not None and still_matters(last):
                deps = [last] if not deps else [*deps, last]
        else:
            out = self._outstanding
            out.append(ev)
            if len(out) > 256:  # forget finished events now and then
                self._outstanding = [e for e in out if not e._done]
        return enqueue(self, ev, deps)

    def _launcher(self, kernel, bundle, image_selector, spec, properties):
        """The launcher of ``kernel`` here, cached per queue (no hashing of IR)."""
        key = (kernel, id(bundle) if bundle is not None else None, image_selector,
               _spec_key(spec), properties)
        try:
            found = self._launchers.get(key)
        except TypeError:  # unhashable properties
            key, found = None, None
        if found is not None:
            return found
        launcher = _get_launcher()(kernel, self._device, self._context, bundle=bundle,
                                   image_selector=image_selector, spec_values=spec,
                                   launch_properties=properties)
        if key is not None and key[3] is not _NO_CACHE:
            self._launchers.put(key, launcher)
        return launcher

    # Shortcuts (same arguments as the handler's, plus depends_on=) -----------------------
    def _shortcut(self, depends_on):
        cgh = handler(self)
        if depends_on is not None:
            cgh.depends_on(depends_on)
        return cgh

    def parallel_for(self, range_or_nd_range, kernel, *args, depends_on=None,
                     properties=None) -> event:
        if depends_on is None and properties is None:
            try:
                fast = self._fast.get(kernel)
            except TypeError:
                fast = False
            if fast:
                last_r = fast.last_r
                if range_or_nd_range is last_r or (
                        # the range of the last launch, or a sycl.range equal to it
                        range_or_nd_range.__class__ is range_cls and range_or_nd_range == last_r):
                    ev = fast._issue(fast.last_g, None, None, args)
                else:
                    ev = fast.parallel_for_new_range(range_or_nd_range, args)
                if ev is not None:
                    return ev
        cgh = self._shortcut(depends_on)
        cgh.parallel_for(range_or_nd_range, kernel, *args, properties=properties)
        ev = self._enqueue(cgh)
        if depends_on is None and properties is None:
            self._fast_setup(kernel)
        return ev

    def single_task(self, kernel, *args, depends_on=None, properties=None) -> event:
        if depends_on is None and properties is None:
            try:
                fast = self._fast.get(kernel)
            except TypeError:
                fast = False
            if fast:
                ev = fast.single_task(args)
                if ev is not None:
                    return ev
        cgh = self._shortcut(depends_on)
        cgh.single_task(kernel, *args, properties=properties)
        ev = self._enqueue(cgh)
        if depends_on is None and properties is None:
            self._fast_setup(kernel)
        return ev

    def _fast_setup(self, kernel) -> None:
        try:
            if kernel in self._fast:
                return
        except TypeError:
            return
        fast = False
        if not self._profiling:
            try:
                launcher = self._launcher(kernel, None, None, None, None)
                # Work-group size properties are checked per launch (handler._launch).
                if not any(getattr(launcher, a, None) for a in (
                        "reqd_work_group_size", "max_work_group_size",
                        "max_linear_work_group_size")):
                    fast = _FastLaunch(self, kernel, launcher)
            except Exception:  # noqa: BLE001 - the general path keeps working
                fast = False
        self._fast[kernel] = fast

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
        if self._errors and self._async_handler is None:
            self.throw_asynchronous()

    def wait_and_throw(self) -> None:
        """``wait()``, then ``throw_asynchronous()``."""
        self.wait()
        self.throw_asynchronous()

    def throw_asynchronous(self) -> None:
        """Hand the undelivered errors of finished commands to ``async_handler``;
        without one, raise (the error itself when there is one, else a
        ``sycl.exception`` listing them)."""
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
        errors = getattr(self, "_errors", None)
        if errors:
            _report_lost(errors, self._async_handler, repr(self))

    def __repr__(self):
        return (f"<sycl.queue on {self._device!r}"
                f"{' in_order' if self._in_order else ''}>")


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


class _FastLaunch:
    """``q.parallel_for(range, kernel, *args)`` of a kernel this queue already launched:
    the launcher, packer and checks are looked up once, the command is issued without a
    handler or closure, and a launch that finished before the driver returned (native
    CPU) gets an already-complete event. Anything unusual (an nd_range launch of a
    non-nd_item kernel, a dimension mismatch, a pending in-order predecessor) returns
    None and takes the general path, which raises the same errors.

    Per launch it does only what can change: the range is checked once per range object
    (the last one is remembered: ``queue.parallel_for`` issues it, or a new
    ``sycl.range`` equal to it, with no checks; ``parallel_for_new_range`` checks others),
    the driver's launch is bound to the queue's stream (``Launcher.bind``), and a driver
    whose launch tokens are never complete on return (``launch_tokens_pending``: CUDA,
    OpenCL) is not asked about completion at issue time.

    Threads may share a queue: on an in-order queue the launch is issued and recorded as
    the queue's last command under the queue's lock; on an out-of-order queue a launch
    replaces the previous one in the list ``q.wait()`` waits for only when the same
    thread issued both (same in-order stream, so the older finishes first)."""

    __slots__ = ("q", "launcher", "packer", "cgh", "index_kind", "dims", "stream",
                 "local_limit", "desc", "done_event", "done_token", "bound", "poll",
                 "last_r", "last_g", "last_issued")

    def __init__(self, q, kernel, launcher):
        self.q = q
        self.launcher = launcher
        self.packer = args_mod.packer_for(launcher)
        self.cgh = handler(q)   # packers read cgh._queue; never holds a command
        self.index_kind = self.packer.index_kind
        self.dims = self.packer.dims
        self.stream = q._stream
        self.desc = q._desc
        self.local_limit = q._desc.local_mem_size
        self.done_event = event()
        self.done_event._queue = q
        self.done_event._kind = STREAM
        self.done_token = None   # a token seen complete: tokens never become incomplete
        bind = getattr(launcher, "bind", None)
        self.bound = bind(q._stream) if bind is not None else None
        self.poll = not q._driver.launch_tokens_pending
        self.last_r = self.last_g = None
        # The last event issued here to an in-order stream: the stream orders the next.
        self.last_issued = None

    def parallel_for_new_range(self, r, args):
        """A launch over ``r``, which is neither the last launch's range nor a
        ``sycl.range`` equal to it (``queue.parallel_for`` issues those directly)."""
        t = type(r)
        if t is range_cls:
            g, l, off = tuple(r), None, None   # 1 to 3 ints in [0, 2**63), checked when made
        elif t is int:
            if r < 0 or r >= SIZE_LIMIT:
                return None
            g, l, off = (r,), None, (0,)
        elif t is nd_range_cls:
            g = tuple(r.global_range)
            l = tuple(r.local_range)
            off = tuple(r.offset)
        elif isinstance(r, tuple) and 1 <= len(r) <= 3:
            for v in r:
                if type(v) is not int or v < 0 or v >= SIZE_LIMIT:
                    return None
            g, l, off = tuple(r), None, _ZERO_OFFSETS.get(len(r))
        else:
            return None
        args_mod.check_launch(self.desc, g, l, self.packer.kernel, off)
        if l is None and self.index_kind == "nd_item":
            return None
        dims = self.dims
        if dims and dims != len(g):
            return None
        if l is None:
            # A range (an immutable tuple) or an int that passed every check: the next
            # launch with the same object needs none of them.
            self.last_r, self.last_g = r, g
        elif any(off):
            return self._issue(g, l, off, args)
        return self._issue(g, l, None, args)

    def single_task(self, args):
        return self._issue((1,), (1,), None, args)

    def _issue(self, g, l, off, args):
        q = self.q
        keep: list = []
        packed, local_bytes = self.packer.pack(args, self.cgh, keep)
        if local_bytes > self.local_limit:
            return None
        bound = self.bound if off is None else None
        if q._in_order:
            # Issue and record the queue's last command under its lock: another thread's
            # launch cannot come between (the next command must follow the newest).
            lock = q._lock
            lock.acquire()
            try:
                last = q._last
                if last is not None and (last is not self.last_issued and not last._done
                                         and not (
                        # already issued to this queue's in-order stream: the stream orders it
                        last._kind == STREAM and last._started and q._stream_in_order
                        and getattr(last._token, "stream", None) is self.stream)
                        # failed and not yet seen: the general path fails this one too
                        or last._error is not None and not last._error.delivered):
                    return None
                try:
                    if bound is not None:
                        tok = bound(g, l, packed, local_bytes)
                    else:
                        tok = self.launcher.launch(self.stream, g, l, off, packed, local_bytes)
                except Exception as e:  # noqa: BLE001 - reported below, unlocked
                    error = e
                else:
                    ev = q._last = self._event(q, tok, keep)
                    if q._stream_in_order:
                        self.last_issued = ev
                    return ev
            finally:
                lock.release()
            return self._failed(q, error)
        try:
            if bound is not None:
                tok = bound(g, l, packed, local_bytes)
            else:
                tok = self.launcher.launch(self.stream, g, l, off, packed, local_bytes)
        except Exception as e:  # noqa: BLE001 - asynchronous, as on the general path
            return self._failed(q, e)
        if self.poll:
            if tok is None or tok is self.done_token or _token_done(tok):
                self.done_token = tok    # (as in _event, inline: native CPU's every launch)
                return self.done_event
            ev = self._pending(q, tok, keep)
        else:
            ev = issued_event(q, STREAM, tok, keep.__len__ if keep else None)
        out = q._outstanding
        if q._stream_in_order:
            me = _get_ident()
            prev, prev_thread = q._fast_last
            q._fast_last = (ev, me)
        else:
            prev = prev_thread = me = None
        if out and ev._run is None:
            newest = out[-1]
            # q.wait() needs only the newer of two plain launches this thread issued one
            # after the other to one in-order stream (the older finishes first), and no
            # finished command. Without this a burst of launches that are all still
            # running grew the list and re-filtered it on every launch. (A launch of
            # another thread may have been issued after it was, so not that one.)
            if newest._done or (newest is prev and prev_thread == me and
                                prev._run is None and prev._callbacks is None):
                out[-1] = ev
                return ev
        out.append(ev)
        if len(out) > 256:
            q._outstanding = [e for e in out if not e._done]
        return ev

    def _event(self, q, tok, keep):
        """The event of a launch the driver issued (token ``tok``)."""
        if self.poll:
            if tok is None or tok is self.done_token or _token_done(tok):
                # Finished before the driver returned (native CPU): one complete event
                # serves every such launch (nothing in it changes once complete; errors
                # of failed launches get events of their own, see _failed).
                self.done_token = tok
                return self.done_event
            return self._pending(q, tok, keep)
        # new_event + set_token, without asking the driver whether the launch it just
        # issued is complete (a fresh event nobody waits on or watches yet).
        return issued_event(q, STREAM, tok, keep.__len__ if keep else None)

    @staticmethod
    def _pending(q, tok, keep):
        ev = new_event(q, STREAM, None)
        ev._started = True
        if keep:
            ev._run = keep.__len__   # holds interop objects until the command completes
        set_token(ev, tok)
        return ev

    @staticmethod
    def _failed(q, error):
        """A complete event carrying ``error`` (an asynchronous error of the queue)."""
        ev = new_event(q, STREAM, None)
        ev._started = True
        complete(ev, error)
        if q._in_order:
            with q._lock:
                q._last = ev
        else:
            q._outstanding.append(ev)
        return ev


_ZERO_OFFSETS = {1: (0,), 2: (0, 0), 3: (0, 0, 0)}
