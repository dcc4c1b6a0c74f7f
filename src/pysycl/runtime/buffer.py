"""Buffers and accessors: memory whose uses the runtime orders by access mode.

``sycl.buffer(ndarray)`` uses the array's memory: on a device that can reach host memory
(the native CPU) kernels work on it in place; elsewhere the runtime copies to the device
on first use and back on ``host_accessor``, ``close()`` or when the last reference to
the buffer goes away (SYCL 2020 4.7.2.3: destruction waits for the buffer's commands and
writes back). Each buffer remembers its last writer and the readers since; a new command
group that reads waits for the writer (RAW), one that writes waits for both (WAW, WAR).
``host_accessor`` takes part in the same ordering: while it is open, later commands on
the buffer wait. A sub-buffer, ``sycl.buffer(parent, offset, sub_range)``, is a
contiguous part of its parent: it shares the parent's memory and ordering.

>>> import numpy as np, pysycl as sycl
>>> a = np.zeros(4, np.int32)
>>> with sycl.buffer(a) as b:
...     with sycl.host_accessor(b, sycl.write_only) as v:
...         v[:] = 7
>>> a.tolist()
[7, 7, 7, 7]
"""
from __future__ import annotations

import atexit
import sys
import threading
import weakref

import numpy as np

from .. import types
from ..errors import errc, exception, type_error
from ..properties import runtime as rt_props
from ..properties.arguments import no_init_key
from ..properties.base import properties as property_list
from ..properties.base import property as _property
from .event import USER, complete, new_event, still_matters
from .ranges import id as id_
from .ranges import range as range_
from .pickling import not_picklable
from .usm import alloc_on

# Reentrant, as each memory's own lock: the garbage collector may run a buffer's
# destructor (which waits for its uses, taking these locks) in a thread that holds them.
_access_lock = threading.RLock()
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


def _is_properties(arg) -> bool:
    return isinstance(arg, (_property, property_list)) or (
        isinstance(arg, list) and all(isinstance(p, _property) for p in arg))


def _access_args(args, mode, properties, rng, offset, what: str):
    """SYCL's positional forms ``(range[, offset][, mode][, properties])``, told apart
    by type; a plain tuple is a range, then an offset."""
    for arg in args:
        if isinstance(arg, (types.access_mode, str)) or hasattr(arg, "value") and \
                isinstance(getattr(arg, "value"), str) and not _is_properties(arg):
            mode = arg
        elif _is_properties(arg):
            properties = arg
        elif isinstance(arg, id_) or (rng is not None and offset is None and
                                      isinstance(arg, (tuple, list, int))):
            offset = arg
        elif isinstance(arg, (range_, tuple, list, int)) and rng is None:
            rng = arg
        else:
            raise exception(errc.accessor, f"{what}: unexpected argument {arg!r} (expected "
                            "a range, an id offset, an access mode or properties)")
    return mode, properties, rng, offset


def _ints(value) -> tuple:
    return (int(value),) if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)


def _check_box(shape, rng, offset, what: str) -> tuple[tuple, tuple]:
    """``(range, offset)`` of an access to a buffer of ``shape``: checked to lie inside."""
    rng = shape if rng is None else _ints(rng)
    offset = (0,) * len(shape) if offset is None else _ints(offset)
    if len(rng) != len(shape) or len(offset) != len(shape) or any(
            v < 0 for v in rng + offset) or any(
            o + r > s for o, r, s in zip(offset, rng, shape)):
        raise exception(errc.accessor, f"{what}: range {rng} at offset {offset} does not fit "
                        f"the buffer's {shape}")
    return rng, offset


def _check_writable(buf, mode, what: str) -> None:
    """A buffer made from a read-only array is never written (SYCL 2020 4.7.2.3: a
    const host pointer is not written back; here writing is refused outright)."""
    if mode is not _READ and buf._mem.read_only:
        raise exception(errc.accessor, f"{what} of mode {mode.value} on a buffer made from a "
                        "read-only array: use sycl.read_only, or give the buffer a writable "
                        "array (np.array(data) copies it)")


def _linear(shape, index) -> int:
    out = 0
    for i, s in zip(index, shape):
        out = out * s + i
    return out


class _Memory:
    """The storage a buffer and its sub-buffers share: the host copy, device copies and
    which of them are current, and the commands using it. Ordering covers the whole
    memory, so commands on overlapping sub-buffers run in submission order."""

    def __init__(self, host: np.ndarray, user, properties):
        self._properties = properties
        self._host = host.reshape(-1)
        self._user = user             # a non-contiguous user array written back on close
        self.nbytes = host.nbytes
        self._host_ptr = host.ctypes.data
        self._last_write = None
        self._readers: list = []
        self._device_mem: dict = {}   # (id ctx handle, id desc) -> (driver, alloc, ctx)
        self._valid = {"host"}        # where the current contents live
        self._lock = threading.RLock()   # (reentrant: see _access_lock)
        self._closed = False
        self.read_only = False        # made from a read-only array: no accessor writes
        # set_final_data / set_write_back (SYCL 2020 4.7.2.3): where close() writes the
        # contents (_USER: the user's array, if the buffer works on a copy of it).
        self.final = _USER
        self.write_back = True
        self.in_user_array = False   # host is the user's array itself (see buffer)

    # Ordering --------------------------------------------------------------------------
    def _register(self, ev, write: bool) -> list:
        """Make ``ev`` the newest user of the memory; the events it must wait for."""
        if self._closed:
            # Also what sycl.accessor(sycl.buffer(a), cgh) meets: the temporary buffer was
            # closed (written back) when its last reference went away, before the launch.
            raise exception(errc.invalid, "this sycl.buffer was closed (by close(), the end "
                            "of its with block, or its last reference going away) before "
                            "the command used it; keep the buffer in a variable while its "
                            "commands are submitted")
        with _access_lock:
            last = self._last_write
            if write:
                deps = [r for r in self._readers if still_matters(r)]
                if last is not None and still_matters(last):
                    deps.append(last)
                self._last_write = ev
                self._readers = []
            else:
                deps = [last] if last is not None and still_matters(last) else []
                readers = self._readers
                if len(readers) > 64:  # drop finished readers now and then
                    readers[:] = [r for r in readers if not r._done]
                readers.append(ev)
        return deps

    def _wait_all(self, raise_errors: bool = True) -> None:
        """Wait for every use; then raise a failed one's error nobody has seen yet
        (``raise_errors=False`` leaves it to its queue: ``wait()`` or the handler)."""
        with _access_lock:
            pending = list(self._readers)
            if self._last_write is not None:
                pending.append(self._last_write)
        for e in pending:   # every use ends before a failed one's error is raised
            if not e._done:
                e._wait_done()
        if raise_errors:
            for e in pending:
                e._raise_unseen()

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
        return entry[1]

    def _prepare_device(self, dev, ctx, stream, write: bool, discard: bool) -> None:
        """Before a command runs on ``dev``: copy in if its copy is stale, unless the
        command overwrites all of it (``discard``: no_init over the whole memory);
        after a write only that copy is current. Runs in command order."""
        desc = dev._desc
        if desc.extra.get("host_accessible"):
            if not discard:
                self._make_host_valid()
            if write:
                self._valid = {"host"}
            return
        key = (id(ctx.handle), id(desc))
        mem = self._memory_for(dev, ctx)
        if key not in self._valid and not discard:
            self._make_host_valid()
            dev.driver.copy(stream, mem, 0, memoryview(self._host).cast("B"), 0,
                            self.nbytes).wait()
        self._valid = {key} if write else self._valid | {key}

    def _contents(self) -> np.ndarray:
        """The current contents (flat), from the device copy that holds them without
        making the host storage current."""
        if "host" in self._valid:
            return self._host
        driver, mem, _ = self._device_mem[next(iter(self._valid))]
        out = np.empty_like(self._host)
        driver.copy(None, memoryview(out).cast("B"), 0, mem, 0, self.nbytes).wait()
        return out

    def _make_host_valid(self, write: bool = False) -> None:
        if "host" not in self._valid:
            driver, mem, _ = self._device_mem[next(iter(self._valid))]
            driver.copy(None, memoryview(self._host).cast("B"), 0, mem, 0, self.nbytes).wait()
            self._valid = self._valid | {"host"}
        if write:
            self._valid = {"host"}

    def leave_user_array(self) -> None:
        """Work on memory of its own from now on, holding the current contents: the
        user asked for nothing to be written back to the array the buffer was made from
        (``set_write_back(False)``, ``set_final_data``), which the buffer used in place
        (on a device that reaches host memory, kernels would write the user's array
        directly). Every use so far completes first: they may work in that array."""
        if not self.in_user_array:
            return
        self._wait_all(raise_errors=False)
        with self._lock:
            if not self.in_user_array:
                return
            own = self._host.copy()
            # (The user's array is written at close only if write-back is set again.)
            self._user, self._host, self._host_ptr = self._host, own, own.ctypes.data
            self.in_user_array = False

    def close(self, raise_errors: bool = True) -> None:
        """Wait for every use, write the contents back to the user's array, free the
        device copies; then raise the error of a use that failed (unless
        ``raise_errors`` is False: the buffer's destructor leaves it to the queue). The
        write-back happens either way, as C++'s buffer destructor does it."""
        if self._closed:
            return
        error = None
        try:
            self._wait_all(raise_errors)
        except Exception as e:   # a failed command's error: raised after the write-back
            error = e
        if self.final is _USER and self.write_back:
            self._make_host_valid()
            if self._user is not None:
                with rt_props.host_lock(self._properties):
                    np.copyto(self._user, self._host.reshape(self._user.shape))
        elif self.final is not _USER and self.final is not None and self.write_back:
            # set_final_data: the elements in order, as C++ copies them; the array the
            # buffer was made from is left as the device work left it
            with rt_props.host_lock(self._properties):
                np.copyto(self.final.reshape(-1)[:self._host.size], self._contents(),
                          casting="same_kind")
        for driver, mem, _ in self._device_mem.values():
            driver.free(mem)
        self._device_mem.clear()
        self._closed = True
        if error is not None:
            raise error


_USER = object()   # _Memory.final: write back to the user's array (the default)


# Buffers alive at interpreter exit are closed (waited for and written back) while the
# runtime's threads still run: after that a finalizer could wait forever.
_live: "weakref.WeakSet[buffer]" = weakref.WeakSet()


@atexit.register
def _close_live_buffers() -> None:
    for buf in list(_live):
        try:
            buf.close()
        except Exception as e:  # noqa: BLE001 - exiting: report, go on with the others
            print(f"pysycl: writing back {buf!r} at exit failed: {e}", file=sys.stderr)


def _typed(flat: np.ndarray, dtype) -> np.ndarray:
    """The buffer memory ``flat`` seen as ``dtype`` elements (a reinterpreted buffer's)."""
    return flat if flat.dtype == dtype else flat.view(dtype)


def _max_elements(dtype) -> int:
    return ((1 << 63) - 1) // max(np.dtype(dtype).itemsize, 1)


def _swap_slots(a, b, cls) -> None:
    """Exchange every attribute of two objects of ``cls`` (an accessor's ``swap``)."""
    if type(b) is not cls:
        raise type_error(errc.invalid, f"swap takes another {cls.__name__}, not "
                         f"{type(b).__name__}")
    names = [n for k in cls.__mro__ for n in getattr(k, "__slots__", ())] or []
    names += list(vars(a)) if hasattr(a, "__dict__") else []
    for name in dict.fromkeys(names):
        if name in ("__weakref__", "__dict__"):
            continue
        has_a, has_b = hasattr(a, name), hasattr(b, name)
        va, vb = getattr(a, name, None), getattr(b, name, None)
        if has_b:
            setattr(a, name, vb)
        elif has_a:
            delattr(a, name)
        if has_a:
            setattr(b, name, va)
        elif has_b:
            delattr(b, name)


class _Count(int):
    """An element count that is both NumPy's ``buf.size`` and SYCL 2020's
    ``buf.size()`` (C++ code calls it; Python code reads it like an array's)."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)


def _host_storage(data, dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """``(host array, user array written back on close or None)`` for a buffer made
    from ``data`` (see :class:`buffer` for the forms)."""
    want = None if dtype is None else np.dtype(dtype)
    if isinstance(data, range_) or isinstance(data, (int, np.integer)) and not isinstance(
            data, (bool, np.bool_)) or (isinstance(data, tuple) and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_))
            for d in data) and data):
        shape = _ints(data)
        if any(d < 0 for d in shape):
            raise exception(errc.invalid, f"sycl.buffer shape {shape} has a negative extent")
        return np.zeros(shape, want or np.float32), None
    if isinstance(data, np.ndarray) or hasattr(data, "__array_interface__") or \
            hasattr(data, "__array__") and not isinstance(data, (list, tuple)):
        arr = np.asarray(data)
        if want is not None and want != arr.dtype:
            raise type_error(errc.invalid, f"buffer dtype {want} does not match the array's "
                             f"{arr.dtype}")
        _check_element_type(arr.dtype, type(data).__name__)
        if arr.flags.c_contiguous and arr.flags.writeable:
            return arr, None
        # A contiguous copy, written back on close (a read-only array is never written).
        return np.ascontiguousarray(arr).copy(), (arr if arr.flags.writeable else None)
    if isinstance(data, (list, tuple)):
        try:
            arr = np.array(data, dtype=want)
        except (TypeError, ValueError) as e:
            raise type_error(errc.invalid, f"sycl.buffer cannot hold {data!r:.60}: {e}") \
                from None
        _check_element_type(arr.dtype, type(data).__name__)
        return arr, None
    raise type_error(errc.invalid, "sycl.buffer takes a NumPy array, a list of values, or "
                     f"a shape (int, tuple of ints, sycl.range) and dtype, not "
                     f"{type(data).__name__}")


def _check_element_type(dtype: np.dtype, what: str) -> None:
    if dtype.hasobject or dtype.itemsize == 0:
        raise type_error(errc.invalid, f"sycl.buffer of a {what} of {dtype}: kernels read "
                         "numbers and structs (give numbers of one type, or dtype=)")


class buffer:
    """A SYCL buffer: ``sycl.buffer(data)`` or ``sycl.buffer(shape, dtype)``; ``with``,
    ``close()`` or dropping the last reference waits for its commands and writes results
    back to the array. ``sycl.buffer(parent, offset, sub_range)`` is a sub-buffer:
    ``sub_range`` elements of ``parent`` from ``offset`` (an id), contiguous in the parent.

    What the first argument means (Python has no ``T*``, so its type decides):

    * a NumPy array (or any object NumPy views without a copy): the buffer works on it
      and writes results back to it. A C-contiguous writable array is used in place; a
      non-contiguous one through a contiguous copy written back at close. A read-only
      array makes a read-only buffer: an accessor that writes is ``errc.accessor``.
    * a list (or a tuple that is not all ints), e.g. ``sycl.buffer([1.0, 2.0, 3.0])``:
      data. The buffer holds a copy (dtype as NumPy infers it, or ``dtype``); read it back
      with ``sycl.host_accessor``.
    * an int, a ``sycl.range``, a tuple of ints or ``shape=``: the shape of a new buffer
      of ``dtype`` (float32 unless given), zero-filled.

    >>> import numpy as np, pysycl as sycl
    >>> with sycl.host_accessor(sycl.buffer([1.0, 2.0, 3.0]), sycl.read_only) as v:
    ...     v.tolist(), v.dtype.name
    ([1.0, 2.0, 3.0], 'float64')
    >>> sycl.buffer((2, 3), np.int32).shape
    (2, 3)
    """

    __reduce__ = not_picklable("buffer", "send its data (np.array(sycl.host_accessor(buf))) "
                               "and make a new buffer there")

    def __init__(self, data=None, dtype=None, sub_range=None, *, shape=None, properties=None):
        self._parent = None
        if isinstance(data, buffer):
            self._init_sub(data, dtype, sub_range)
            return
        if rt_props.is_property_list(dtype):      # buffer(array, property_list), as in C++
            dtype, properties = None, rt_props.as_properties(dtype).merge(
                rt_props.as_properties(properties))
        elif rt_props.is_property_list(sub_range):    # buffer(shape, dtype, property_list)
            sub_range, properties = None, rt_props.as_properties(sub_range).merge(
                rt_props.as_properties(properties))
        self._properties = rt_props.buffer_properties(properties, data)
        if sub_range is not None:
            raise exception(errc.invalid, "sycl.buffer(parent, offset, sub_range) needs a "
                            f"sycl.buffer as parent, not {type(data).__name__}")
        if shape is not None:
            data = range_(*_ints(shape))
        host, user = _host_storage(data, dtype)
        read_only = isinstance(data, np.ndarray) and not data.flags.writeable
        self.shape = host.shape
        self.dtype = host.dtype
        self._base = 0
        self._mem = _Memory(host, user, self._properties)
        self._mem.read_only = read_only
        # Working in the user's own array (a contiguous writable one), without
        # use_host_ptr: the buffer moves to memory of its own if the user asks for
        # nothing to be written back there (see _Memory.leave_user_array).
        self._mem.in_user_array = user is None and not isinstance(data, (list, tuple)) and \
            host.size > 0 and np.shares_memory(host, np.asarray(data)) and \
            not self._properties.has_property(rt_props.use_host_ptr)
        _live.add(self)

    def _init_sub(self, parent: "buffer", offset, sub_range) -> None:
        """SYCL 2020 4.7.2.2: the region must lie in the parent and be contiguous there."""
        if parent._parent is not None:
            raise exception(errc.invalid, "cannot make a sub-buffer of a sub-buffer")
        if offset is None or sub_range is None:
            raise exception(errc.invalid, "a sub-buffer needs sycl.buffer(parent, offset, "
                            "sub_range)")
        shape = parent.shape or (1,)
        try:
            rng, off = _check_box(shape, sub_range, offset, "sub-buffer")
        except exception as e:
            raise exception(errc.invalid, str(e)) from None
        first = next((d for d, r in enumerate(rng) if r > 1), len(rng))
        if 0 not in rng and any(rng[d] != shape[d] for d in range(first + 1, len(rng))):
            raise exception(errc.invalid, f"sub-buffer of range {rng} at offset {off} is not "
                            f"contiguous in its parent of range {shape} (every dimension after "
                            "the first one longer than 1 must be whole)")
        self._parent = parent
        self._properties = parent._properties
        self._mem = parent._mem
        self._base = parent._base + _linear(shape, off)
        self.shape = rng
        self.dtype = parent.dtype

    # Info ------------------------------------------------------------------------------
    def has_property(self, key) -> bool:
        """``buf.has_property(sycl.property.buffer.use_host_ptr)``."""
        return rt_props.has_named(self._properties, key)

    def get_property(self, key):
        """The buffer's property of class ``key``; ``errc.invalid`` if it has none."""
        return self._properties.get_property(key)

    def get_range(self):
        return range_(*self.shape) if self.shape else range_(1)

    def is_sub_buffer(self) -> bool:
        return self._parent is not None

    _owner = None   # a reinterpreted buffer: the buffer whose memory it shares

    def reinterpret(self, dtype, reinterpret_range=None) -> "buffer":
        """SYCL 2020 ``buffer::reinterpret<T, D>(range)``: a buffer of the same memory
        (and ordering) seen as ``dtype`` elements in ``reinterpret_range`` (default: the
        same range for an element of the same size, else a 1-D range of the bytes);
        ``errc.invalid`` when the sizes in bytes differ."""
        new = types.as_dtype(dtype)
        _check_element_type(new, "buffer.reinterpret")
        if new.subdtype is not None:
            raise exception(errc.invalid, f"buffer.reinterpret to {new}: give the element "
                            "type (a vec or fixed array is its element type in a range)")
        nbytes = int(self.size) * self.dtype.itemsize
        if reinterpret_range is None:
            if new.itemsize == self.dtype.itemsize:
                shape = tuple(self.shape) or (1,)
            elif nbytes % new.itemsize == 0:
                shape = (nbytes // new.itemsize,)
            else:
                raise exception(errc.invalid, f"buffer.reinterpret: {nbytes} bytes are not a "
                                f"whole number of {new} elements")
        else:
            shape = _ints(reinterpret_range)
        if int(np.prod(shape, dtype=np.int64)) * new.itemsize != nbytes:
            raise exception(errc.invalid, f"buffer.reinterpret: {shape} of {new} is "
                            f"{int(np.prod(shape)) * new.itemsize} bytes, the buffer "
                            f"{nbytes}")
        start = self._base * self.dtype.itemsize
        if start % new.itemsize:
            raise exception(errc.invalid, f"buffer.reinterpret: the sub-buffer starts at byte "
                            f"{start}, not at a {new} element")
        out = buffer.__new__(buffer)
        out._parent = self._parent
        out._owner = self._owner or self
        out._properties = self._properties
        out._mem = self._mem
        out._base = start // new.itemsize
        out.shape = shape
        out.dtype = new
        return out

    @property
    def size(self) -> int:
        return _Count(np.prod(self.shape, dtype=np.int64))

    def get_count(self) -> int:
        return int(self.size)

    def byte_size(self) -> int:
        """SYCL 2020 ``buffer::byte_size()``."""
        return self.nbytes

    @property
    def nbytes(self) -> int:
        return int(self.size) * self.dtype.itemsize

    def get_size(self) -> int:
        return self.nbytes

    def set_final_data(self, final_data=None) -> None:
        """Where the contents go when the buffer is closed (SYCL 2020 4.7.2.3): a
        writable NumPy array (or buffer-protocol object) of at least as many elements,
        or None for nowhere. Either way the array the buffer was made from keeps its
        values (a buffer working in it in place moves to memory of its own first),
        unless the buffer was made with ``use_host_ptr`` (then it stays there)."""
        self._check_parent("set_final_data")
        if final_data is None:
            self._mem.leave_user_array()
            self._mem.final = None
            return
        target = np.asarray(final_data)
        if not target.flags.writeable or not target.flags.c_contiguous:
            raise exception(errc.invalid, "set_final_data needs a writable C-contiguous "
                            "array")
        if target.size < self.size:
            raise exception(errc.invalid, f"set_final_data: the array has {target.size} "
                            f"elements, the buffer {int(self.size)}")
        if not np.can_cast(self.dtype, target.dtype, "same_kind"):
            raise type_error(errc.invalid, f"set_final_data: cannot write {self.dtype} "
                             f"elements into an array of {target.dtype}")
        if not np.shares_memory(target, self._mem._host):
            self._mem.leave_user_array()
        self._mem.final = target

    def set_write_back(self, flag: bool = True) -> None:
        """Whether closing the buffer writes its contents back (SYCL 2020 4.7.2.3); with
        nowhere to write to, no effect. ``False`` leaves the array the buffer was made
        from with its values (see :meth:`set_final_data`)."""
        self._check_parent("set_write_back")
        if not flag:
            self._mem.leave_user_array()
        self._mem.write_back = bool(flag)

    def _check_parent(self, what: str) -> None:
        if self._parent is not None:
            raise exception(errc.invalid, f"{what} on a sub-buffer: set it on the parent "
                            "buffer, which writes back")

    def get_access(self, cgh=None, *args, **kw):
        """``buf.get_access(cgh, mode)``: an accessor (with ``cgh``) or a host accessor."""
        if cgh is None:
            return host_accessor(self, *args, **kw)
        return accessor(self, cgh, *args, **kw)

    def get_host_access(self, *args, **kw):
        return host_accessor(self, *args, **kw)

    def _host_array(self) -> np.ndarray:
        """The host copy of this buffer's elements, in its shape (no copy)."""
        flat = _typed(self._mem._host, self.dtype)
        return flat[self._base:self._base + self.size].reshape(self.shape or (1,))

    # Life ------------------------------------------------------------------------------
    def close(self) -> None:
        """Wait for every use, then write the contents back to the original array (a
        sub-buffer waits; its parent writes back; so does a reinterpreted buffer's)."""
        if self._parent is not None or self._owner is not None:
            self._mem._wait_all()
            return
        self._mem.close()
        _live.discard(self)

    def __del__(self):
        # The last reference: SYCL's destructor semantics. Not while the interpreter
        # shuts down (the atexit hook closed what was open then).
        mem = self.__dict__.get("_mem")
        if mem is not None and self._parent is None and self._owner is None and \
                not sys.is_finalizing():
            # A destructor cannot raise: a failed command's error stays with its queue.
            mem.close(raise_errors=False)

    def __enter__(self) -> "buffer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self):
        sub = " sub-buffer" if self._parent is not None else ""
        return f"<sycl.buffer{sub} shape={self.shape} dtype={self.dtype}>"


class accessor:
    """``sycl.accessor(buf, cgh, [range, [offset,]] mode=read_write, properties=None)``;
    in a host task it indexes like the NumPy array it views. ``sycl.accessor[T, D,
    mode]`` annotates a kernel parameter. A ranged accessor (``range``, ``offset``)
    sees ``range`` elements from ``offset``; its indices start at zero."""

    __reduce__ = not_picklable("accessor", "send the buffer's data instead")

    __slots__ = ("_mem", "_base", "_shape", "_dtype", "mode", "no_init", "_discard", "_cgh",
                 "_range", "_offset", "properties")

    def __init__(self, buf, cgh=None, *args, mode=types.access_mode.read_write,
                 properties=None, range=None, offset=None):
        if not isinstance(buf, buffer):
            raise exception(errc.accessor, f"sycl.accessor needs a sycl.buffer, not "
                            f"{type(buf).__name__}")
        if isinstance(cgh, (types.access_mode, str)):  # accessor(buf, mode) without cgh
            cgh, args = None, (cgh, *args)
        mode, properties, range, offset = _access_args(args, mode, properties, range, offset,
                                                       "sycl.accessor")
        self._mem, self._base, self._dtype = buf._mem, buf._base, buf.dtype
        self._shape = buf.shape or (1,)
        self.mode = _mode(mode)
        rt_props.properties_for(properties, "accessor", "sycl.accessor")
        _check_writable(buf, self.mode, "sycl.accessor")
        self.properties = properties
        self.no_init = _has_no_init(properties)
        if self.no_init and self.mode is _READ:
            raise exception(errc.accessor, "no_init cannot be used with a read_only accessor")
        self._range, self._offset = _check_box(self._shape, range, offset, "sycl.accessor")
        # no_init lets a command skip copying in only what it may overwrite: all of it.
        self._discard = self.no_init and self._range == self._shape and \
            buf.size * buf.dtype.itemsize == self._mem.nbytes
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
        return self._dtype

    def get_range(self):
        return range_(*self._range)

    def get_offset(self):
        return id_(*self._offset)

    def get_count(self) -> int:
        return int(np.prod(self._range, dtype=np.int64))

    def get_size(self) -> int:
        return self.get_count() * self._dtype.itemsize

    # SYCL 2020 names of the two above (4.7.6.9.1).
    size = get_count
    byte_size = get_size

    def empty(self) -> bool:
        return self.get_count() == 0

    def max_size(self) -> int:
        """The most elements an accessor of this element type can reach (byte sizes are
        signed 64-bit here)."""
        return _max_elements(self._dtype)

    def swap(self, other: "accessor") -> None:
        """Exchange what the two accessors refer to (SYCL 2020 4.7.6.9.1)."""
        _swap_slots(self, other, accessor)

    def is_placeholder(self) -> bool:
        return self._cgh is None

    def _host_view(self) -> np.ndarray:
        flat = _typed(self._mem._host, self._dtype)
        base = flat[self._base:self._base + int(np.prod(self._shape))].reshape(self._shape)
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
        return f"<sycl.accessor {self.mode.value} {self._range} at {self._offset} " \
               f"of a buffer of {self._shape} {self._dtype}>"


class host_accessor:
    """``with sycl.host_accessor(buf, [range, [offset,]] mode) as view:`` a NumPy view of
    the contents (of ``range`` elements from ``offset``), after every command that
    writes (or, for write modes, uses) the buffer finished. Later command groups on the
    buffer wait until it is closed."""

    __reduce__ = not_picklable("host_accessor", "send np.array(acc) (a copy) instead")

    def __init__(self, buf, *args, mode=types.access_mode.read_write, properties=None,
                 range=None, offset=None):
        if not isinstance(buf, buffer):
            raise exception(errc.accessor, f"sycl.host_accessor needs a sycl.buffer, not "
                            f"{type(buf).__name__}")
        mode, properties, range, offset = _access_args(args, mode, properties, range, offset,
                                                       "sycl.host_accessor")
        rt_props.properties_for(properties, "accessor", "sycl.host_accessor")
        self.mode = _mode(mode)
        _check_writable(buf, self.mode, "sycl.host_accessor")
        shape = buf.shape or (1,)
        self._range, self._offset = _check_box(shape, range, offset, "sycl.host_accessor")
        write = self.mode is not _READ
        mem = buf._mem
        self._event = new_event(None, USER, None)
        for dep in mem._register(self._event, write):
            dep.wait()
        mem._make_host_valid(write)
        view = buf._host_array()
        if buf.shape:
            view = view[tuple(slice(o, o + r) for o, r in zip(self._offset, self._range))]
        else:
            view = view.reshape(())
        if not write:
            view = view.view()
            view.flags.writeable = False
        self._view = view
        # The buffer lives while its host accessor does: closing it (its last reference
        # gone) would wait for this accessor, which nothing could close then.
        self._buffer = buf

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
        return range_(*self._range)

    def get_offset(self):
        return id_(*self._offset)

    def get_count(self) -> int:
        return int(np.prod(self._range, dtype=np.int64))

    size = get_count   # SYCL 2020 name (4.7.6.10)

    def byte_size(self) -> int:
        return self.get_count() * self._view.dtype.itemsize

    def empty(self) -> bool:
        return self.get_count() == 0

    def max_size(self) -> int:
        return _max_elements(self._view.dtype)

    def swap(self, other: "host_accessor") -> None:
        _swap_slots(self, other, host_accessor)


class local_accessor:
    """``cgh.local_accessor(dtype, shape)`` (or ``sycl.local_accessor(dtype, shape, cgh)``):
    work-group local memory for a ``sycl.local_accessor[T, D]`` parameter."""

    __slots__ = ("dtype", "shape", "nbytes")

    def __init__(self, dtype, shape, cgh=None):
        self.dtype = types.as_dtype(dtype)
        try:
            shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
                int(s) for s in shape)
        except (TypeError, ValueError):
            raise type_error(errc.accessor, f"local_accessor shape must be an int or a tuple "
                             f"of ints, not {shape!r}") from None
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

    def size(self) -> int:
        return int(np.prod(self.shape))

    def byte_size(self) -> int:
        return self.nbytes

    def empty(self) -> bool:
        return self.nbytes == 0

    def max_size(self) -> int:
        return _max_elements(self.dtype)

    def swap(self, other: "local_accessor") -> None:
        _swap_slots(self, other, local_accessor)

    def __repr__(self):
        return f"<sycl.local_accessor {self.dtype} {self.shape}>"
