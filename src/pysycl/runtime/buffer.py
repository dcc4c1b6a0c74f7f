"""Buffers and accessors: memory whose uses the runtime orders by access mode.

``sycl.buffer(ndarray)`` uses the array's memory: on a device that can reach host memory
(the native CPU) kernels work on it in place; elsewhere the runtime copies to the device
on first use and back on ``host_accessor`` or ``close()``. Each buffer remembers its
last writer and the readers since; a new command group that reads waits for the writer
(RAW), one that writes waits for both (WAW, WAR). ``host_accessor`` takes part in the
same ordering: while it is open, later commands on the buffer wait.

>>> import numpy as np, pysycl as sycl
>>> a = np.zeros(4, np.int32)
>>> with sycl.buffer(a) as b:
...     with sycl.host_accessor(b, sycl.write_only) as v:
...         v[:] = 7
>>> a.tolist()
[7, 7, 7, 7]
"""
from __future__ import annotations

import threading

import numpy as np

from .. import types
from ..errors import errc, exception
from ..properties import runtime as rt_props
from ..properties.arguments import no_init_key
from .event import USER, complete, new_event
from .ranges import id as id_
from .ranges import range as range_
from .usm import alloc_on
from .pickling import not_picklable

_access_lock = threading.Lock()
_READ = types.access_mode.read_only


def _mode(mode) -> types.access_mode:
    if isinstance(mode, types.access_mode):
        return types.access_mode(mode.value)
    try:
        return types.access_mode(getattr(mode, "value", mode))
    except ValueError:
        raise exception(errc.accessor, f"{mode!r} is not an access mode (use sycl.read_only, "
                        "sycl.write_only or sycl.read_write)") from None


def _has_no_init(properties) -> bool:
    if properties is None:
        return False
    if isinstance(properties, no_init_key):
        return True
    has = getattr(properties, "has_property", None)
    if has is not None:
        return bool(has(no_init_key))
    return any(isinstance(p, no_init_key) for p in properties)


class buffer:
    """``sycl.buffer(ndarray)`` or ``sycl.buffer(shape, dtype)``; ``with`` or ``close()``
    writes results back to the array."""

    __reduce__ = not_picklable("buffer", "send its data (np.array(sycl.host_accessor(buf))) "
                               "and make a new buffer there")

    def __init__(self, data=None, dtype=None, *, shape=None, properties=None):
        if rt_props.is_property_list(dtype):      # buffer(array, property_list), as in C++
            dtype, properties = None, rt_props.as_properties(dtype).merge(
                rt_props.as_properties(properties))
        self._properties = rt_props.buffer_properties(properties, data)
        if shape is not None:
            data = shape
        if isinstance(data, np.ndarray):
            if dtype is not None and np.dtype(dtype) != data.dtype:
                raise exception(errc.invalid, f"buffer dtype {np.dtype(dtype)} does not match "
                                f"the array's {data.dtype}")
            if data.flags.c_contiguous and data.flags.writeable:
                self._host, self._user = data, None
            else:  # work on a contiguous copy, written back on close
                self._host = np.ascontiguousarray(data).copy()
                self._user = data if data.flags.writeable else None
        elif isinstance(data, (int, np.integer, tuple, list)):
            shape = (int(data),) if isinstance(data, (int, np.integer)) else tuple(data)
            self._host, self._user = np.zeros(shape, np.dtype(dtype or np.float32)), None
        else:
            raise exception(errc.invalid, "sycl.buffer takes a NumPy array or (shape, dtype), "
                            f"not {type(data).__name__}")
        self.shape = self._host.shape
        self.dtype = self._host.dtype
        self._host_ptr = self._host.ctypes.data
        self._last_write = None
        self._readers: list = []
        self._device_mem: dict = {}   # (id ctx handle, id desc) -> (driver, alloc, ctx)
        self._valid = {"host"}        # where the current contents live
        self._lock = threading.Lock()
        self._closed = False

    # Info ------------------------------------------------------------------------------
    def has_property(self, key) -> bool:
        """``buf.has_property(sycl.property.buffer.use_host_ptr)``."""
        return rt_props.has_named(self._properties, key)

    def get_property(self, key):
        """The buffer's property of class ``key``; ``errc.invalid`` if it has none."""
        return self._properties.get_property(key)

    def get_range(self):
        return range_(*self.shape) if self.shape else range_(1)

    @property
    def size(self) -> int:
        return self._host.size

    def get_count(self) -> int:
        return self._host.size

    @property
    def nbytes(self) -> int:
        return self._host.nbytes

    def get_size(self) -> int:
        return self._host.nbytes

    def get_access(self, cgh=None, mode=types.access_mode.read_write, properties=None, **kw):
        """``buf.get_access(cgh, mode)``: an accessor (with ``cgh``) or a host accessor."""
        if cgh is None:
            return host_accessor(self, mode, properties)
        return accessor(self, cgh, mode, properties, **kw)

    def get_host_access(self, mode=types.access_mode.read_write):
        return host_accessor(self, mode)

    # Ordering --------------------------------------------------------------------------
    def _register(self, ev, write: bool) -> list:
        """Make ``ev`` the newest user of the buffer; the events it must wait for."""
        if self._closed:
            raise exception(errc.invalid, "this sycl.buffer was closed")
        with _access_lock:
            last = self._last_write
            if write:
                deps = [r for r in self._readers if not r._done]
                if last is not None and not last._done:
                    deps.append(last)
                self._last_write = ev
                self._readers = []
            else:
                deps = [last] if last is not None and not last._done else []
                readers = self._readers
                if len(readers) > 64:  # drop finished readers now and then
                    readers[:] = [r for r in readers if not r._done]
                readers.append(ev)
        return deps

    def _wait_all(self) -> None:
        with _access_lock:
            pending = list(self._readers)
            if self._last_write is not None:
                pending.append(self._last_write)
        for e in pending:
            e.wait()

    # Data movement ---------------------------------------------------------------------
    def _memory_for(self, dev, ctx):
        """What a kernel argument carries on ``dev``: the host address where the device
        reaches host memory, else the buffer's allocation there (made on first use)."""
        desc = dev._desc
        if desc.extra.get("host_accessible"):
            return self._host_ptr
        key = (id(ctx.handle), id(desc))
        entry = self._device_mem.get(key)
        if entry is None:
            with self._lock:
                entry = self._device_mem.get(key)
                if entry is None:
                    mem = alloc_on(dev.driver, desc, self.nbytes, "buffer", ctx.handle)
                    # The context handle is kept so its id stays unique while in use.
                    entry = self._device_mem[key] = (dev.driver, mem, ctx.handle)
        mem = entry[1]
        return mem

    def _prepare_device(self, dev, ctx, stream, write: bool, no_init: bool) -> None:
        """Before a command runs on ``dev``: copy in if its copy is stale; after a write
        only that copy is current. Runs in command order (accesses are ordered)."""
        desc = dev._desc
        if desc.extra.get("host_accessible"):
            if not no_init:
                self._make_host_valid()
            if write:
                self._valid = {"host"}
            return
        key = (id(ctx.handle), id(desc))
        mem = self._memory_for(dev, ctx)
        if key not in self._valid and not no_init:
            self._make_host_valid()
            dev.driver.copy(stream, mem, 0, memoryview(self._host).cast("B"), 0,
                            self.nbytes).wait()
        self._valid = {key} if write else self._valid | {key}

    def _make_host_valid(self, write: bool = False) -> None:
        if "host" not in self._valid:
            driver, mem, _ = self._device_mem[next(iter(self._valid))]
            driver.copy(None, memoryview(self._host).cast("B"), 0, mem, 0, self.nbytes).wait()
            self._valid = self._valid | {"host"}
        if write:
            self._valid = {"host"}

    # Life ------------------------------------------------------------------------------
    def close(self) -> None:
        """Wait for every use, then write the contents back to the original array."""
        if self._closed:
            return
        self._wait_all()
        self._make_host_valid()
        if self._user is not None:
            with rt_props.host_lock(self._properties):
                np.copyto(self._user, self._host.reshape(self._user.shape))
        for driver, mem, _ in self._device_mem.values():
            driver.free(mem)
        self._device_mem.clear()
        self._closed = True

    def __enter__(self) -> "buffer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self):
        return f"<sycl.buffer shape={self.shape} dtype={self.dtype}>"


class accessor:
    """``sycl.accessor(buf, cgh, mode=read_write, properties=None)``; in a host task
    it indexes like the NumPy array it views. ``sycl.accessor[T, D, mode]`` annotates a
    kernel parameter."""

    __reduce__ = not_picklable("accessor", "send the buffer's data instead")

    __slots__ = ("buffer", "mode", "no_init", "_cgh", "_range", "_offset", "properties")

    def __init__(self, buf, cgh=None, mode=types.access_mode.read_write, properties=None, *,
                 range=None, offset=None):
        if not isinstance(buf, buffer):
            raise exception(errc.accessor, f"sycl.accessor needs a sycl.buffer, not "
                            f"{type(buf).__name__}")
        if isinstance(cgh, (types.access_mode, str)):  # accessor(buf, mode) without cgh
            cgh, mode = None, cgh
        self.buffer = buf
        self.mode = _mode(mode)
        self.properties = properties
        self.no_init = _has_no_init(properties)
        if self.no_init and self.mode is _READ:
            raise exception(errc.accessor, "no_init cannot be used with a read_only accessor")
        shape = buf.shape or (1,)
        self._range = tuple(range) if range is not None else shape
        self._offset = tuple(offset) if offset is not None else (0,) * len(shape)
        if len(self._range) != len(shape) or any(
                o + r > s for o, r, s in zip(self._offset, self._range, shape)):
            raise exception(errc.accessor, f"accessor range {self._range} at offset "
                            f"{self._offset} exceeds the buffer's {shape}")
        self._cgh = cgh
        if cgh is not None:
            rt_props.check_context_bound(buf._properties, cgh._queue.get_context())
            cgh._add_accessor(self)

    def __class_getitem__(cls, params):
        return types.accessor_annotation(params)

    @property
    def write(self) -> bool:
        return self.mode is not _READ

    @property
    def dims(self) -> int:
        return len(self._range)

    @property
    def dtype(self):
        return self.buffer.dtype

    def get_range(self):
        return range_(*self._range)

    def get_offset(self):
        return id_(*self._offset)

    def get_count(self) -> int:
        return int(np.prod(self._range))

    def get_size(self) -> int:
        return self.get_count() * self.buffer.dtype.itemsize

    def linear_offset(self) -> int:
        """Element offset of the accessor's origin (the ABI's ``i64`` offset)."""
        shape = self.buffer.shape or (1,)
        off = 0
        for o, s in zip(self._offset, shape):
            off = off * s + o
        return off

    def _host_view(self) -> np.ndarray:
        base = self.buffer._host.reshape(self.buffer.shape or (1,))
        view = base[tuple(slice(o, o + r) for o, r in zip(self._offset, self._range))]
        if not self.write:
            view = view.view()
            view.flags.writeable = False
        return view

    @property
    def __array_interface__(self):
        return self._host_view().__array_interface__

    def __getitem__(self, index):
        return self._host_view()[index]

    def __setitem__(self, index, value):
        if not self.write:
            raise exception(errc.accessor, "writing through a read_only accessor")
        self._host_view()[index] = value

    def __len__(self):
        return self._range[0]

    def __repr__(self):
        return f"<sycl.accessor {self.mode.value} {self._range} of {self.buffer!r}>"


class host_accessor:
    """``with sycl.host_accessor(buf, mode) as view:`` a NumPy view of the contents,
    after every command that writes (or, for write modes, uses) the buffer finished.
    Later command groups on the buffer wait until it is closed."""

    __reduce__ = not_picklable("host_accessor", "send np.array(acc) (a copy) instead")

    def __init__(self, buf, mode=types.access_mode.read_write, properties=None):
        if not isinstance(buf, buffer):
            raise exception(errc.accessor, f"sycl.host_accessor needs a sycl.buffer, not "
                            f"{type(buf).__name__}")
        self.buffer = buf
        self.mode = _mode(mode)
        write = self.mode is not _READ
        self._event = new_event(None, USER, None)
        for dep in buf._register(self._event, write):
            dep.wait()
        buf._make_host_valid(write)
        view = buf._host.reshape(buf.shape)
        if not write:
            view = view.view()
            view.flags.writeable = False
        self._view = view

    def __enter__(self) -> np.ndarray:
        return self._view

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        complete(self._event)

    def __del__(self):
        try:
            if not self._event._done:
                complete(self._event)
        except Exception:
            pass

    @property
    def __array_interface__(self):
        return self._view.__array_interface__

    def __getitem__(self, index):
        return self._view[index]

    def __setitem__(self, index, value):
        self._view[index] = value

    def __len__(self):
        return len(self._view)

    def get_range(self):
        return range_(*self._view.shape)


class local_accessor:
    """``cgh.local_accessor(dtype, shape)`` (or ``sycl.local_accessor(dtype, shape, cgh)``):
    work-group local memory for a ``sycl.local_accessor[T, D]`` parameter."""

    __slots__ = ("dtype", "shape", "nbytes")

    def __init__(self, dtype, shape, cgh=None):
        self.dtype = types.as_dtype(dtype)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
            int(s) for s in shape)
        if not 1 <= len(shape) <= 3 or any(s <= 0 for s in shape):
            raise exception(errc.accessor, f"local_accessor shape {shape} must have 1-3 "
                            "positive extents")
        self.shape = shape
        self.nbytes = int(np.prod(shape)) * self.dtype.itemsize

    def __class_getitem__(cls, params):
        return types.local_accessor_annotation(params)

    @property
    def dims(self) -> int:
        return len(self.shape)

    def get_range(self):
        return range_(*self.shape)

    def __repr__(self):
        return f"<sycl.local_accessor {self.dtype} {self.shape}>"
