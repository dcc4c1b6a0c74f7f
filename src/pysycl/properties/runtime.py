"""Runtime properties as SYCL 2020 writes them (4.5.4): ``sycl.property_list`` and the
``sycl.property.queue`` / ``.buffer`` / ``.context`` / ``.reduction`` namespaces.

>>> import pysycl as sycl
>>> props = sycl.property_list([sycl.property.queue.in_order(),
...                             sycl.property.queue.enable_profiling()])
>>> props.has_property(sycl.property.queue.in_order)
True

A property given to an object it does not apply to (``use_host_ptr`` for a queue), or
anything that is not a property, is ``errc.invalid``. Queues, buffers and contexts answer
``has_property`` / ``get_property``.
"""
from __future__ import annotations

import contextlib

from ..errors import errc, exception
from .arguments import no_init
from .base import as_properties, properties, properties_for, singleton_property
from .base import property as property_base


class in_order(singleton_property):
    """``sycl.property.queue.in_order()``: commands run one after another."""

    category = "queue"


class enable_profiling(singleton_property):
    """``sycl.property.queue.enable_profiling()``: events record submit/start/end times."""

    category = "queue"


class use_host_ptr(singleton_property):
    """``sycl.property.buffer.use_host_ptr()``: the buffer works in the user's array
    itself (never a private copy); the array must be C-contiguous and writable."""

    category = "buffer"


class use_mutex(property_base):
    """``sycl.property.buffer.use_mutex(lock)``: the runtime holds ``lock`` (anything with
    ``acquire``/``release``, such as ``threading.Lock``) while it writes the buffer's
    contents back to the user's array."""

    category = "buffer"

    def __init__(self, mutex):
        if not (callable(getattr(mutex, "acquire", None)) and
                callable(getattr(mutex, "release", None))):
            raise exception(errc.invalid, f"use_mutex takes a lock (acquire/release), not "
                            f"{type(mutex).__name__}")
        self._value = mutex

    def get_mutex_ptr(self):
        return self._value


class context_bound(property_base):
    """``sycl.property.buffer.context_bound(ctx)``: the buffer may be used only in
    ``ctx``; an accessor for a queue of another context is ``errc.invalid``."""

    category = "buffer"

    def __init__(self, ctx):
        if not callable(getattr(ctx, "get_devices", None)):
            raise exception(errc.invalid, f"context_bound takes a sycl.context, not "
                            f"{type(ctx).__name__}")
        self._value = ctx

    def get_context(self):
        return self._value


class initialize_to_identity(singleton_property):
    """``sycl.property.reduction.initialize_to_identity()``: a reduction's result does not
    include the value its memory held before the kernel (SYCL 2020 4.10.6.1)."""

    category = "reduction"


class _queue_properties:
    """``sycl.property.queue``."""

    in_order = in_order
    enable_profiling = enable_profiling


class _buffer_properties:
    """``sycl.property.buffer``."""

    use_host_ptr = use_host_ptr
    use_mutex = use_mutex
    context_bound = context_bound


class _reduction_properties:
    """``sycl.property.reduction``."""

    initialize_to_identity = initialize_to_identity


class _context_properties:
    """``sycl.property.context``: SYCL 2020 defines none."""


class _PropertyNamespace:
    """``sycl.property``: C++'s ``sycl::property`` namespace (``sycl.property.queue.
    in_order()``, ``sycl.property.buffer.use_host_ptr()``, ``sycl.property.no_init``) and
    the base of every property: ``isinstance(x, sycl.property)`` tells whether ``x`` is
    one, and ``class my_prop(sycl.property)`` defines a new one."""

    queue = _queue_properties
    buffer = _buffer_properties
    context = _context_properties
    reduction = _reduction_properties
    no_init = no_init

    def __mro_entries__(self, bases):
        return (property_base,)

    def __instancecheck__(self, obj):
        return isinstance(obj, property_base)

    def __subclasscheck__(self, sub):
        return isinstance(sub, type) and issubclass(sub, property_base)

    def __repr__(self):
        return "sycl.property"


property = _PropertyNamespace()


def property_list(*props) -> properties:
    """``sycl.property_list([p1, p2])`` (also ``property_list(p1, p2)``, as C++'s
    ``property_list{p1, p2}``): a property list, the same object as
    ``sycl.properties(p1, p2)``."""
    if len(props) == 1:
        props = props[0]
        return as_properties(list(props) if isinstance(props, (list, tuple)) else props)
    return as_properties(list(props))


def queue_properties(props, in_order_kw: bool, profiling_kw: bool) -> properties:
    """A queue's property list: ``props`` (checked) plus the keyword forms
    ``in_order=True`` / ``enable_profiling=True``."""
    plist = properties_for(props, "queue", "sycl.queue")
    extra = [p() for p, on in ((in_order, in_order_kw), (enable_profiling, profiling_kw))
             if on and not plist.has_property(p)]
    return plist.merge(properties(*extra)) if extra else plist


def buffer_properties(props, data) -> properties:
    """A buffer's property list, checked; ``use_host_ptr`` needs ``data`` to be an array
    the buffer can work in directly (C-contiguous and writable)."""
    plist = properties_for(props, "buffer", "sycl.buffer")
    if plist.has_property(use_host_ptr):
        flags = getattr(data, "flags", None)
        if flags is None or not (flags.c_contiguous and flags.writeable):
            raise exception(errc.invalid, "use_host_ptr needs a C-contiguous, writable NumPy "
                            "array for the buffer to work in")
    return plist


def has_named(plist: properties, key) -> bool:
    """``has_property`` that also takes a property's name (``"in_order"``)."""
    if isinstance(key, str):
        return any(type(p).__name__.removesuffix("_key") == key for p in plist)
    return plist.has_property(key)


def is_property_list(obj) -> bool:
    """Whether ``obj`` is a property list, a property, or a non-empty list of properties
    (as a positional argument)."""
    if isinstance(obj, (list, tuple)):
        return bool(obj) and all(isinstance(p, property_base) for p in obj)
    return isinstance(obj, (properties, property_base))


def host_lock(plist: properties):
    """The ``use_mutex`` lock of a buffer's list as a context manager (or a no-op)."""
    if plist.has_property(use_mutex):
        return plist.get_property(use_mutex).get_mutex_ptr()
    return contextlib.nullcontext()


def check_context_bound(plist: properties, ctx, owner: str = "the buffer") -> None:
    """``errc.invalid`` when ``plist`` binds a buffer to a context other than ``ctx``."""
    if plist.has_property(context_bound):
        bound = plist.get_property(context_bound).get_context()
        if bound is not ctx:
            raise exception(errc.invalid, f"{owner} is context_bound to {bound!r}; it cannot "
                            f"be used in {ctx!r}")


__all__ = ["as_properties", "buffer_properties", "check_context_bound", "context_bound",
           "enable_profiling", "has_named", "host_lock", "in_order", "initialize_to_identity",
           "is_property_list",
           "properties_for", "property", "property_list", "queue_properties",
           "use_host_ptr", "use_mutex"]
