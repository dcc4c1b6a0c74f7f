"""``sycl.handler``: what a command-group function describes (one command per group).

The handler records dependencies, accessors and exactly one command; ``queue`` turns
that into an event. A kernel launch is recorded with its launch plan, and enqueued by
the plan as ``queue.parallel_for`` enqueues one (``runtime/launch_plan.py``): range and
arguments are checked and packed at submit, so a wrong one is a synchronous
``sycl.exception`` and the launch itself does no work beyond the backend call.

>>> import pysycl as sycl, numpy as np
>>> q = sycl.queue(); a = sycl.malloc_shared(4, np.int32, q)
>>> q.submit(lambda cgh: cgh.fill(a, 3)).wait(); np.asarray(a).tolist()
[3, 3, 3, 3]
"""
from __future__ import annotations

import numpy as np

from .. import types
from ..errors import errc, exception
from ..spec_values import spec_default_bytes, spec_value_bytes, spec_value_from_bytes
from . import memops
from .buffer import accessor, local_accessor
from .event import BARRIER, HOST, STREAM, as_events
from . import reduction as reductions
from .ranges import SINGLE_TASK, nd_range, offset_range
from .ranges import id as id_
from .reduction import reduction


# A kernel-like object that sets up its own launch in a command group (``sycl.autotune``)
# has this method (runtime/autotune.py).
TUNED_COMMAND = "_sycl_tuned_command"


class spec_constant:
    """The placeholder ``cgh.set_spec_constant(spec_id, value)`` returns (the pre-SYCL 2020
    placeholder style); pass it for a ``sycl.spec_constant[T, spec_id]`` parameter, read it
    with ``p.get()``."""

    __slots__ = ("spec_id", "value", "raw")

    def __init__(self, spec_id, value):
        self.spec_id = spec_id
        self.value = value
        self.raw = spec_value_bytes(spec_id, value)

    def get(self):
        return self.value

    def __class_getitem__(cls, params):
        return types.spec_constant_type[params]


class interop_handle:
    """What a host task taking one argument receives (SYCL 2020 4.10.2)."""

    __slots__ = ("_queue",)

    def __init__(self, q):
        self._queue = q

    def get_backend(self):
        return self._queue.get_device().backend

    def get_native_queue(self):
        return self._queue._stream

    def get_native_device(self):
        return self._queue.get_device()._desc.handle

    def get_native_context(self):
        return self._queue.get_context().handle


def _spec_name(spec_id) -> str:
    try:
        return spec_id if isinstance(spec_id, str) else spec_id.unique_id
    except Exception:  # noqa: BLE001 - a name for a message only
        return repr(spec_id)


def _spec_bytes(spec_id, value) -> bytes:
    if not hasattr(spec_id, "dtype"):
        raise exception(errc.invalid, f"{spec_id!r} is not a sycl.specialization_id")
    return spec_value_bytes(spec_id, value)


class handler:
    """Given to a command-group function by ``q.submit(cgf)``."""

    __slots__ = ("_queue", "_deps", "_accs", "_kind", "_run", "_spec", "_bundle",
                 "_image_selector", "_what", "_plan", "_range", "_args", "_launched")

    def __init__(self, q):
        self._queue = q
        self._deps = None
        self._accs = None
        self._kind = BARRIER
        self._run = None
        self._spec = None
        self._bundle = None
        self._image_selector = None
        self._what = None
        self._plan = None     # a kernel launch: its plan, range and arguments
        self._range = None
        self._args = None
        self._launched = None   # (kernel, args, properties, leading) of the launch

    # Bookkeeping -------------------------------------------------------------------------
    def _set_command(self, kind: int, run, what: str) -> None:
        if self._what is not None:
            raise exception(errc.invalid, f"a command group holds one command: it already "
                            f"has {self._what}, cannot add {what}")
        self._kind, self._run, self._what = kind, run, what

    def _add_accessor(self, acc: accessor) -> None:
        if self._accs is None:
            self._accs = [acc]
        else:
            self._accs.append(acc)

    def depends_on(self, events) -> None:
        """Run this command group after ``events`` (an event or a list)."""
        evs = as_events(events)
        if self._deps is None:
            self._deps = evs
        else:
            self._deps.extend(evs)

    def require(self, acc: accessor) -> None:
        """Register a placeholder-style accessor with this command group."""
        acc._cgh = self
        self._add_accessor(acc)

    # Kernels -----------------------------------------------------------------------------
    def parallel_for(self, range_or_nd_range, kernel, *args, properties=None):
        """Launch ``kernel`` over a ``range`` (or int/tuple) or an ``nd_range``.
        ``sycl.reduction`` arguments bind to the kernel's ``sycl.reducer`` parameters,
        given among ``args`` in parameter order or, as C++ writes them, before the
        kernel (``parallel_for(r, red1, red2, kernel, *args)``)."""
        leading = ()
        if isinstance(kernel, id_) and args and not isinstance(range_or_nd_range, nd_range):
            # parallel_for(range, id offset, kernel, ...): SYCL 2020's deprecated form
            range_or_nd_range = offset_range(range_or_nd_range, kernel)
            kernel, args = args[0], args[1:]
        if kernel.__class__ is reduction or getattr(kernel, "unbound_reducers", None):
            kernel, args, leading = reductions.prepare(kernel, args)
        elif hasattr(kernel, TUNED_COMMAND):   # sycl.autotune: it sets up the launch
            return kernel._sycl_tuned_command(self, range_or_nd_range, args, properties)
        self._launch(range_or_nd_range, kernel, args, properties, "parallel_for", leading)

    def single_task(self, kernel, *args, properties=None):
        """Run ``kernel`` once (a kernel with no index parameter)."""
        if hasattr(kernel, TUNED_COMMAND):
            return kernel._sycl_tuned_command(self, SINGLE_TASK, args, properties)
        self._launch(SINGLE_TASK, kernel, args, properties, "single_task")

    def _launch(self, space, kernel, args, properties, what, leading=()):
        """Record the launch: the kernel's plan is found now (with this group's bundle
        and spec-constant values); the queue enqueues it when the group is complete
        (``LaunchPlan.enqueue``: the range and arguments are checked then)."""
        plan, placed = self._plan_launch(kernel, args, properties, leading)
        self._set_command(STREAM, None, f"{what}({plan.name})")
        self._plan, self._range, self._args = plan, space, placed
        self._launched = (kernel, args, properties, leading)

    def _plan_launch(self, kernel, args, properties, leading):
        """(plan, arguments) of a launch with this group's bundle and constant values."""
        spec = self._spec_for_launch(kernel, args) if args else self._spec
        plan = self._queue._plan(kernel, self._bundle, self._image_selector, spec, properties)
        if leading:
            args = reductions.place(plan.launcher.params, args, leading, plan.name)
        return plan, args

    # Kernel bundles and specialization constants ----------------------------------------
    # SYCL 2020 4.9.5: values live in this handler only (a new handler per command group,
    # so nothing leaks into another group); they are stored as the constant's bytes, so a
    # value NumPy cannot convert fails here, synchronously, and the launcher cache keys on
    # exactly what the kernel will see.
    def use_kernel_bundle(self, kb, image_selector=None) -> None:
        """Take this group's kernels only from ``kb`` (``image_selector`` picks an image)."""
        if self._what is not None:
            raise exception(errc.invalid, "use_kernel_bundle must come before the kernel "
                            "launch of the command group")
        if self._spec:
            names = ", ".join(_spec_name(k) for k in self._spec)
            raise exception(errc.invalid, "use_kernel_bundle after set_specialization_constant "
                            f"({names}) in the same command group (SYCL 2020 4.9.5.2)")
        state = getattr(kb, "state", None)
        if state is None or getattr(state, "name", None) != "executable":
            raise exception(errc.invalid, "use_kernel_bundle needs an executable "
                            f"kernel_bundle, got {kb!r} (SYCL 2020 4.9.4.4)")
        ctx = kb.get_context()
        if ctx is not None and ctx != self._queue._context:
            raise exception(errc.invalid, "use_kernel_bundle: the kernel bundle's context is "
                            "not the queue's (SYCL 2020 4.9.4.4)")
        self._bundle = kb
        self._image_selector = image_selector

    def set_specialization_constant(self, spec_id, value) -> None:
        """Value of ``spec_id`` for kernels of this command group (the last set wins)."""
        if self._bundle is not None:
            raise exception(errc.invalid, f"set_specialization_constant({_spec_name(spec_id)}) "
                            "after use_kernel_bundle in the same command group "
                            "(SYCL 2020 4.9.5.2)")
        raw = _spec_bytes(spec_id, value)
        if self._spec is None:
            self._spec = {}
        self._spec[spec_id] = raw
        if self._launched is not None:
            # Set after the launch in the same command group: the kernel still sees it
            # (the launch happens when the group is complete, as in C++), so its plan is
            # found again with the new values.
            self._plan, self._args = self._plan_launch(*self._launched)

    def get_specialization_constant(self, spec_id):
        """The value set in this group, else the default (a NumPy value of the dtype)."""
        if self._bundle is not None:
            raise exception(errc.invalid, f"get_specialization_constant({_spec_name(spec_id)}) "
                            "after use_kernel_bundle in the same command group "
                            "(SYCL 2020 4.9.5.2)")
        raw = self._spec.get(spec_id) if self._spec is not None else None
        if raw is None:
            raw = spec_default_bytes(spec_id)
        return spec_value_from_bytes(spec_id, raw)

    def set_spec_constant(self, spec_id, value) -> spec_constant:
        """Pre-SYCL 2020 style: set and return a placeholder to pass as an argument."""
        self.set_specialization_constant(spec_id, value)
        return spec_constant(spec_id, self.get_specialization_constant(spec_id))

    def get_spec_constant(self, spec_id) -> spec_constant:
        """Pre-SYCL 2020 style: a placeholder holding the value set in this group (else
        the default), to pass for a ``sycl.spec_constant[T]`` parameter."""
        return spec_constant(spec_id, self.get_specialization_constant(spec_id))

    @property
    def spec_values(self) -> dict:
        """Values set with ``set_specialization_constant`` (spec_id -> value bytes)."""
        return dict(self._spec or {})

    def _spec_for_launch(self, kernel, args):
        """The group's values with those of the placeholder arguments (``sycl.spec_constant[T,
        S]`` parameters read S under its own ID). A placeholder's value must agree with
        the value the kernel will see: the group's (else it is added to the group's
        values) or, for a kernel bundle, the bundle's (as with SYCL 1.2.1's program
        interface: a mismatch is an error, not a silent choice)."""
        spec = self._spec
        placeholders = [a for a in args if type(a) is spec_constant]
        if not placeholders:
            return spec
        bundle = self._bundle
        own = getattr(kernel, "get_kernel_bundle", None)   # a sycl.kernel object
        if own is not None:
            bundle = own()   # the bundle it runs from (4.9.4.2)
        if bundle is None:
            spec = dict(spec or {})
        for a in placeholders:
            if bundle is not None:
                have = bundle.spec_values.get(_spec_name(a.spec_id))
                have = spec_default_bytes(a.spec_id) if have is None else have
            else:
                have = spec.setdefault(a.spec_id, a.raw)
            if have != a.raw:
                where = "kernel bundle" if bundle is not None else "command group"
                raise exception(errc.invalid, f"the spec_constant placeholder of "
                                f"{_spec_name(a.spec_id)} holds {a.value!r}, but the {where} "
                                f"gives that constant {spec_value_from_bytes(a.spec_id, have)!r}"
                                "; pass the placeholder this command group's "
                                "set_spec_constant returned")
        return spec

    # Memory ------------------------------------------------------------------------------
    def memcpy(self, dst, src, num_bytes=None, offset=0):
        """Copy ``num_bytes`` (default: all of the smaller side) from ``src`` to ``dst``."""
        memops.memcpy(self, dst, src, num_bytes, offset)

    def copy(self, src, dst, count=None, start_index=0):
        """Copy ``count`` elements (default: all) from ``src`` to ``dst``."""
        memops.copy(self, src, dst, count, start_index)

    def fill(self, dst, value, count=None):
        """Set ``count`` elements (default: all) of ``dst`` to ``value``."""
        memops.fill(self, dst, value, count)

    def memset(self, dst, byte, num_bytes=None):
        """Set ``num_bytes`` (default: all) bytes of ``dst`` to ``byte``."""
        memops.memset(self, dst, byte, num_bytes)

    def prefetch(self, ptr, num_bytes=None):
        """Hint that ``num_bytes`` (default: to the end) of USM at ``ptr`` will be used."""
        memops.prefetch(self, ptr, num_bytes)

    def mem_advise(self, ptr, num_bytes, advice):
        """Backend advice on a USM range (no effect on the backends here)."""
        memops.mem_advise(self, ptr, num_bytes, advice)

    def update_host(self, acc: accessor) -> None:
        """Make the host copy of ``acc``'s buffer current (SYCL 2020 4.9.4.3)."""
        if not isinstance(acc, accessor) or acc._cgh is not self:
            raise exception(errc.accessor, "update_host takes an accessor created for this "
                            "command group")
        # A host command: it starts once the writers finished (a stream command could
        # start behind them on the device queue while the copy runs on another).
        self._set_command(HOST, acc._mem._make_host_valid, "update_host")

    def local_accessor(self, dtype, shape) -> local_accessor:
        """Work-group local memory for a ``sycl.local_accessor[T, D]`` parameter."""
        return local_accessor(dtype, shape, self)

    # Host tasks --------------------------------------------------------------------------
    def host_task(self, fn) -> None:
        """Run ``fn()`` (or ``fn(interop_handle)``) on a host thread, in dependency order;
        accessors of the group may be used in it as NumPy arrays."""
        if not callable(fn):
            raise exception(errc.invalid, f"host_task takes a callable, not {fn!r}")
        code = getattr(fn, "__code__", None)
        # One required positional parameter means fn(interop_handle); parameters with
        # defaults (lambda i=i: ...) do not count.
        takes_handle = code is not None and code.co_argcount - len(
            getattr(fn, "__defaults__", None) or ()) - (
            1 if getattr(fn, "__self__", None) is not None else 0) >= 1
        h = self
        q = self._queue

        def run():
            accs = h._accs  # accessors may be made after host_task() in the cgf
            if accs:
                for acc in accs:
                    acc._mem._make_host_valid(acc.write)
            if takes_handle:
                fn(interop_handle(q))
            else:
                fn()

        self._set_command(HOST, run, "host_task")
