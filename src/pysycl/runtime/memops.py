"""Memory commands of a command group: ``memcpy``, ``copy``, ``fill``, ``memset``.

Each side is a ``usm_array``, an accessor of the group, or host memory (a NumPy array
or any buffer-protocol object). Sizes are checked at submit; the copy itself is one
driver call when the command starts (a ``memmove`` on the native CPU).

>>> import pysycl as sycl, numpy as np
>>> q = sycl.queue(); d = sycl.malloc_device(3, np.float32, q)
>>> q.copy(np.arange(3, dtype=np.float32), d).wait()
>>> out = np.zeros(3, np.float32); q.memcpy(out, d).wait(); out.tolist()
[0.0, 1.0, 2.0]
"""
from __future__ import annotations

import numpy as np

from ..bundle.device_globals import instance_of
from ..errors import errc, exception, type_error
from ..host_objects import device_global
from ..properties import host_access
from .buffer import accessor
from .event import STREAM
from .usm import find_allocation, usm_array
from .usm_views import interface_memory


class _Side:
    """One end of a memory command, resolved at submit. ``box`` is set for a ranged
    accessor whose elements are not one contiguous run (see :func:`_box`)."""

    __slots__ = ("mem", "offset", "nbytes", "dtype", "acc", "box")

    def __init__(self, mem, offset, nbytes, dtype, acc=None, box=None):
        self.mem, self.offset, self.nbytes, self.dtype, self.acc = mem, offset, nbytes, dtype, acc
        self.box = box

    def layout(self) -> tuple:
        """(first byte, run bytes, ((count, stride bytes), ...) innermost first)."""
        return self.box if self.box is not None else (self.offset, self.nbytes, ())


def _box(shape, offset, rng, item: int) -> tuple:
    """The sub-box ``rng`` at ``offset`` of a row-major array of ``shape`` as runs of
    contiguous bytes: (first byte, run bytes, ((count, stride bytes), ...)) with the
    enclosing dimensions innermost first. Dimensions the box spans fully merge into the
    run, so a box of whole rows is one run."""
    strides = [item] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    start = sum(o * st for o, st in zip(offset, strides))
    d = len(shape) - 1
    width = rng[d] * item
    while d > 0 and rng[d] == shape[d]:
        d -= 1
        width *= rng[d]
    outer = tuple((rng[k], strides[k]) for k in range(d - 1, -1, -1) if rng[k] != 1)
    return start, width, outer


def _runs(layout, limit: int):
    """(byte offset, length) of the contiguous runs of ``layout`` in order, ``limit``
    bytes in all."""
    start, width, outer = layout
    counts = [c for c, _ in reversed(outer)]
    strides = [st for _, st in reversed(outer)]
    for idx in np.ndindex(*counts):
        if limit <= 0:
            return
        n = min(width, limit)
        yield start + sum(i * st for i, st in zip(idx, strides)), n
        limit -= n


def _rect(layout, like=None) -> tuple:
    """(rect, region) of ``layout`` for Driver.copy_rect; a contiguous ``layout`` takes
    the shape of ``like`` with dense pitches."""
    start, width, outer = layout
    if not outer and like is not None:
        _, width, like_outer = like
        outer, pitch = [], width
        for count, _ in like_outer:
            outer.append((count, pitch))
            pitch *= count
    rows, row_pitch = outer[0] if outer else (1, width)
    slices, slice_pitch = outer[1] if len(outer) > 1 else (1, rows * row_pitch)
    return (start, row_pitch, slice_pitch), (width, rows, slices)


def _total(layout) -> int:
    return layout[1] * int(np.prod([c for c, _ in layout[2]], dtype=np.int64))


def _shape(layout) -> tuple:
    return (layout[1], *(c for c, _ in layout[2]))


def copy_layouts(driver, stream, dst, dst_layout, src, src_layout, nbytes: int):
    """Copy ``nbytes`` from ``src`` to ``dst`` in the row-major order of each side's
    layout: one rectangular copy where the boxes match (or one side is contiguous),
    else run by run. Returns the last command's token."""
    if not dst_layout[2] and not src_layout[2]:
        return driver.copy(stream, dst, dst_layout[0], src, src_layout[0], nbytes)
    if nbytes == _total(src_layout) == _total(dst_layout) and len(
            dst_layout[2] or src_layout[2]) <= 2:
        if _shape(dst_layout) == _shape(src_layout) or not src_layout[2] or not dst_layout[2]:
            d_rect, region = _rect(dst_layout, src_layout)
            s_rect, _ = _rect(src_layout, dst_layout)
            return driver.copy_rect(stream, dst, d_rect, src, s_rect, region)
    token = None
    d_runs, s_runs = _runs(dst_layout, nbytes), _runs(src_layout, nbytes)
    (d_at, d_left), (s_at, s_left) = next(d_runs, (0, 0)), next(s_runs, (0, 0))
    while d_left and s_left:
        n = min(d_left, s_left)
        token = driver.copy(stream, dst, d_at, src, s_at, n)
        d_at, d_left, s_at, s_left = d_at + n, d_left - n, s_at + n, s_left - n
        if not d_left:
            d_at, d_left = next(d_runs, (0, 0))
        if not s_left:
            s_at, s_left = next(s_runs, (0, 0))
    return token


def fill_layout(driver, stream, dst, layout, pattern: bytes, nbytes: int):
    """Repeat ``pattern`` over the first ``nbytes`` of ``layout`` (see copy_layouts)."""
    if not layout[2]:
        return driver.fill(stream, dst, layout[0], pattern, nbytes)
    if nbytes == _total(layout):
        rect, region = _rect(layout)
        return driver.fill_rect(stream, dst, rect, pattern, region)
    token = None
    for at, n in _runs(layout, nbytes):
        token = driver.fill(stream, dst, at, pattern, n)
    return token


def _side(cgh, obj, what: str, write: bool) -> _Side:
    q = cgh._queue
    if isinstance(obj, usm_array):
        obj._check_live()
        return _Side(obj._alloc, obj._offset, obj.nbytes, obj.dtype)
    if hasattr(obj, "__sycl_usm_array_interface__"):
        return _interface_side(obj, what)
    if isinstance(obj, accessor):
        if obj._cgh is not cgh:
            raise exception(errc.accessor, f"{what}: the accessor was not created for this "
                            "command group (pass cgh to sycl.accessor)")
        if write and not obj.write:
            raise exception(errc.accessor, f"{what}: cannot write through a read_only accessor")
        item = obj.dtype.itemsize
        start, width, outer = _box(obj._shape, obj._offset, obj._range, item)
        start += obj._base * item
        return _Side(None, start, obj.get_count() * item, obj.dtype, obj,
                     (start, width, outer) if outer else None)
    if isinstance(obj, (bytes, bytearray, memoryview)) or hasattr(obj, "__array_interface__") \
            or isinstance(obj, np.ndarray):
        arr = np.asarray(obj) if not isinstance(obj, (bytes, bytearray, memoryview)) else \
            np.frombuffer(obj, np.uint8)
        if not arr.flags.c_contiguous:
            raise exception(errc.invalid, f"{what}: host array is not C-contiguous")
        if write and not arr.flags.writeable:
            raise exception(errc.invalid, f"{what}: destination host array is read-only")
        if q._desc.extra.get("host_accessible"):
            mem = arr.ctypes.data if arr.size else 0   # an address: fastest for memmove
        else:
            mem = memoryview(arr).cast("B") if arr.size else memoryview(b"")
        # The array is kept alive by the command's closure via the side.
        side = _Side(mem, 0, arr.nbytes, arr.dtype)
        side.acc = arr if not isinstance(mem, memoryview) else None
        return side
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        # A USM address (``a.ptr + k``, as C++ passes ``ptr + k``): it reaches to the end
        # of its allocation; untyped, so counts of elements take the other side's type.
        block = find_allocation(int(obj))
        if block is None:
            raise exception(errc.invalid, f"{what}: address {int(obj):#x} is not in a live "
                            "USM allocation")
        offset = int(obj) - block.ptr
        return _Side(block.alloc, offset, block.nbytes - offset, None)
    if isinstance(obj, device_global):
        # The memory is the variable's instance on the queue's device.
        side = _Side(instance_of(obj, q._device, q._context.handle), 0, obj.nbytes,
                     obj.element_dtype, obj)
        _check_host_access(obj, write)
        side.mem.check_host_copy()
        return side
    raise type_error(errc.invalid, f"{what}: cannot use {type(obj).__name__} as memory "
                     "(expected sycl.usm_array, an accessor or a host array)")


def _interface_side(obj, what: str) -> _Side:
    """A side given by ``__sycl_usm_array_interface__`` (dpctl, dpnp): memory inside a live
    pysycl USM allocation."""
    ptr, dtype, nbytes = interface_memory(obj)
    block = find_allocation(ptr) if ptr else None
    if block is None or ptr + nbytes > block.ptr + block.nbytes:
        raise exception(errc.invalid, f"{what}: the __sycl_usm_array_interface__ memory of "
                        f"{type(obj).__name__} is not USM pysycl allocated")
    side = _Side(block.alloc, ptr - block.ptr, nbytes, dtype)
    side.acc = obj          # held by the command until it is done
    return side


def _is_dg(side: _Side) -> bool:
    return hasattr(side.mem, "host_read") and hasattr(side.mem, "host_write")


def _device_global_pair(d: _Side, s: _Side, what: str) -> tuple[_Side, _Side] | None:
    """``(device_global side, other side)`` of a copy, or None when neither side is one."""
    if not (_is_dg(d) or _is_dg(s)):
        return None
    if _is_dg(d) and _is_dg(s):
        raise exception(errc.invalid, f"{what} between two device_globals")
    return (d, s) if _is_dg(d) else (s, d)


def _check_host_access(dg, write: bool) -> None:
    """``host_access`` (ext device_global): ``read`` forbids copies to the variable,
    ``write`` copies from it, ``none`` both."""
    props = dg.properties
    if not props.has_property(host_access):
        return
    mode = props.get_property(host_access).value.name
    if mode == "none" or (write and mode == "read") or (not write and mode == "write"):
        raise exception(errc.invalid, f"{'copy to' if write else 'copy from'} "
                        f"device_global {dg.unique_id} is not allowed: it has "
                        f"host_access({mode})")


def _dg_range(side: _Side, offset: int, n: int | None, unit: int, what: str) -> int:
    """Check ``[offset, offset + n)`` bytes lie in the variable; ``n`` None: to the end."""
    if offset < 0 or offset > side.nbytes:
        raise exception(errc.invalid, f"{what}: offset {offset // unit} is outside "
                        f"device_global {side.acc.unique_id} of {side.nbytes // unit} "
                        "elements" if unit > 1 else
                        f"{what}: offset {offset} is outside device_global "
                        f"{side.acc.unique_id} of {side.nbytes} bytes")
    if n is None:
        n = side.nbytes - offset
    if n < 0 or offset + n > side.nbytes:
        raise exception(errc.invalid, f"{what}: {n // unit} {'elements' if unit > 1 else 'bytes'}"
                        f" from {offset // unit} run past the end of device_global "
                        f"{side.acc.unique_id} ({side.nbytes // unit})")
    side.offset = offset
    return n


def _check_element_types(src_dtype, dst_dtype, what: str) -> None:
    """``copy`` moves elements of one type, as C++'s ``copy<T>(const T*, T*, n)`` does:
    two sides of different element types are ``errc.invalid`` (a float32 array copied
    into int32 memory would otherwise arrive as its bit patterns). Bytes (uint8) go with
    anything, and integers of one size with each other (the bits are the value mod 2**n,
    as ``astype`` gives); ``memcpy`` copies bytes between any types."""
    if src_dtype is None or dst_dtype is None or src_dtype == dst_dtype:
        return
    if src_dtype.itemsize != dst_dtype.itemsize:
        raise exception(errc.invalid, f"{what} from {src_dtype} to {dst_dtype}: element "
                        "sizes differ")
    if np.uint8 in (src_dtype, dst_dtype) or (src_dtype.kind in "iu" and dst_dtype.kind in "iu"):
        return
    raise exception(errc.invalid, f"{what} from {src_dtype} to {dst_dtype}: element types "
                    "differ (convert with astype first, or memcpy the bytes)")


def _submit_dg_copy(cgh, dst: _Side, src: _Side, nbytes: int, what: str) -> None:
    """A copy with a device_global on one side, staged through host bytes when the
    command runs (the instance decides then which program's global holds the value)."""
    q = cgh._queue
    driver, stream = q._driver, q._stream
    if _is_dg(dst):
        inst, off = dst.mem, dst.offset

        def run():
            if isinstance(src.acc, np.ndarray) or isinstance(src.mem, memoryview):
                data = _host_bytes(src, nbytes)
            else:
                staging = bytearray(nbytes)
                smem = _resolve(q, src, stream, False)
                tok = copy_layouts(driver, stream, memoryview(staging), (0, nbytes, ()), smem,
                                   src.layout(), nbytes)
                if tok is not None:
                    tok.wait()
                data = staging
            inst.host_write(stream, off, data)
            return None
    else:
        inst, off = src.mem, src.offset

        def run():
            data = inst.host_read(stream, off, nbytes)
            dmem = _resolve(q, dst, stream, True)
            return copy_layouts(driver, stream, dmem, dst.layout(),
                                memoryview(bytearray(data)), (0, nbytes, ()), nbytes)
    cgh._set_command(STREAM, run, what)


def _host_bytes(side: _Side, nbytes: int):
    arr = side.acc if isinstance(side.acc, np.ndarray) else None
    if arr is not None:
        return memoryview(arr.reshape(-1).view(np.uint8))[side.offset:side.offset + nbytes]
    return memoryview(side.mem).cast("B")[side.offset:side.offset + nbytes]


def _resolve(q, side: _Side, stream, write: bool):
    acc = side.acc
    if isinstance(acc, accessor):
        mem = acc._mem
        mem._prepare_device(q._device, q._context, stream, write, acc._discard and write)
        return mem._memory_for(q._device, q._context)
    return side.mem


def _submit_copy(cgh, dst: _Side, src: _Side, nbytes: int, what: str) -> None:
    q = cgh._queue
    driver, stream = q._driver, q._stream
    d_layout, s_layout = dst.layout(), src.layout()
    if not any(isinstance(s.acc, accessor) for s in (dst, src)):
        dmem, smem = dst.mem, src.mem

        def run(_keep=(dst.acc, src.acc)):  # host arrays live as long as the command
            return driver.copy(stream, dmem, dst.offset, smem, src.offset, nbytes)
    else:
        def run():
            smem = _resolve(q, src, stream, False)
            dmem = _resolve(q, dst, stream, True)
            return copy_layouts(driver, stream, dmem, d_layout, smem, s_layout, nbytes)
    cgh._set_command(STREAM, run, what)


def _size(value, what: str) -> int:
    """A byte or element count (or offset) given to a memory command: an integer (Python
    or NumPy; not a bool, not a float, which would be truncated silently)."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise type_error(errc.invalid, f"{what} must be an integer, not {value!r}")
    return value.__index__()


def memcpy(cgh, dst, src, num_bytes=None, offset=0) -> None:
    """``handler.memcpy``: ``num_bytes`` from ``src`` to ``dst``; ``offset`` (bytes)
    applies to a device_global side."""
    d = _side(cgh, dst, "memcpy destination", True)
    s = _side(cgh, src, "memcpy source", False)
    pair = _device_global_pair(d, s, "memcpy")
    if pair is not None:
        g, h = pair
        n = _dg_range(g, _size(offset, "memcpy: offset"), None if num_bytes is None and
                      g is s else (h.nbytes if num_bytes is None else
                                   _size(num_bytes, "memcpy: num_bytes")), 1, "memcpy")
        if n > h.nbytes:
            raise exception(errc.invalid, f"memcpy of {n} bytes: the other side has "
                            f"{h.nbytes}")
        _submit_dg_copy(cgh, d, s, n, "memcpy")
        return
    if offset:
        raise exception(errc.invalid, "memcpy: offset applies to a device_global side only")
    n = s.nbytes if num_bytes is None else _size(num_bytes, "memcpy: num_bytes")
    if n < 0 or n > s.nbytes or n > d.nbytes:
        raise exception(errc.invalid, f"memcpy of {n} bytes: source has {s.nbytes}, "
                        f"destination {d.nbytes}")
    _submit_copy(cgh, d, s, n, "memcpy")


def copy(cgh, src, dst, count=None, start_index=0) -> None:
    """``handler.copy``: ``count`` elements; ``start_index`` applies to a device_global side."""
    s = _side(cgh, src, "copy source", False)
    d = _side(cgh, dst, "copy destination", True)
    pair = _device_global_pair(d, s, "copy")
    if pair is not None:
        g, h = pair
        item = g.dtype.itemsize
        if h.dtype is not None and h.dtype.itemsize != item and h.dtype != np.uint8:
            raise exception(errc.invalid, f"copy between {h.dtype} and device_global "
                            f"elements of {g.dtype}: element sizes differ")
        _check_element_types(s.dtype, d.dtype, "copy")
        if count is None:
            want = None if g is s else h.nbytes
        else:
            want = _size(count, "copy: count") * item
        n = _dg_range(g, _size(start_index, "copy: start_index") * item, want, item, "copy")
        if n > h.nbytes:
            raise exception(errc.invalid, f"copy of {n // item} elements: the other side has "
                            f"{h.nbytes // item}")
        _submit_dg_copy(cgh, d, s, n, "copy")
        return
    if start_index:
        raise exception(errc.invalid, "copy: start_index applies to a device_global side only")
    if s.dtype is not None and d.dtype is not None and s.dtype.itemsize != d.dtype.itemsize \
            and s.dtype != np.uint8 and d.dtype != np.uint8:
        raise exception(errc.invalid, f"copy from {s.dtype} to {d.dtype}: element sizes differ")
    _check_element_types(s.dtype, d.dtype, "copy")
    if s.dtype is None and d.dtype is None and count is not None:
        raise exception(errc.invalid, "copy between two USM addresses: the element type is "
                        "unknown; use memcpy with a byte count, or pass a sycl.usm_array")
    item = (s.dtype or d.dtype or np.dtype(np.uint8)).itemsize
    n = s.nbytes if count is None else _size(count, "copy: count") * item
    if n < 0 or n > s.nbytes or n > d.nbytes:
        raise exception(errc.invalid, f"copy of {n // item} elements: source has "
                        f"{s.nbytes // item}, destination {d.nbytes // item}")
    _submit_copy(cgh, d, s, n, "copy")


def _submit_fill(cgh, d: _Side, pattern: bytes, nbytes: int, what: str) -> None:
    q = cgh._queue
    driver, stream = q._driver, q._stream
    layout = d.layout()

    def run():
        mem = _resolve(q, d, stream, True)
        return fill_layout(driver, stream, mem, layout, pattern, nbytes)
    cgh._set_command(STREAM, run, what)


def fill(cgh, dst, value, count=None) -> None:
    """``handler.fill``: ``count`` elements of ``dst`` (default all) set to ``value``."""
    d = _side(cgh, dst, "fill destination", True)
    dtype = d.dtype if d.dtype is not None else (
        value.dtype if isinstance(value, np.generic) else np.dtype(np.uint8))
    try:
        pattern = np.asarray(value, dtype=dtype).tobytes()
    except (TypeError, ValueError, OverflowError) as e:   # OverflowError: 2**40 to int32
        raise exception(errc.invalid, f"fill: cannot convert {value!r} to {dtype}: {e}") \
            from None
    if len(pattern) != dtype.itemsize:
        raise exception(errc.invalid, f"fill: value {value!r} is not one {dtype} element")
    n = d.nbytes if count is None else _size(count, "fill: count") * dtype.itemsize
    if n < 0 or n > d.nbytes:
        raise exception(errc.invalid, f"fill of {n // dtype.itemsize} elements: destination "
                        f"has {d.nbytes // dtype.itemsize}")
    _submit_fill(cgh, d, pattern, n, "fill")


def memset(cgh, dst, byte, num_bytes=None) -> None:
    """``handler.memset``: ``num_bytes`` of ``dst`` (default all) set to ``byte``."""
    d = _side(cgh, dst, "memset destination", True)
    n = d.nbytes if num_bytes is None else _size(num_bytes, "memset: num_bytes")
    if n < 0 or n > d.nbytes:
        raise exception(errc.invalid, f"memset of {n} bytes: destination has {d.nbytes}")
    _submit_fill(cgh, d, bytes([_size(byte, "memset: the byte value") & 0xFF]), n, "memset")


# USM hints (SYCL 2020 4.9.4.3) --------------------------------------------------------
def _usm_range(obj, num_bytes, what: str) -> tuple[int, int]:
    """(address, bytes) of ``num_bytes`` of USM at ``obj`` (a ``usm_array`` or an address
    inside a live allocation); the range must lie in the allocation."""
    if isinstance(obj, usm_array):
        obj._check_live()
        address, block = obj.ptr, obj._block
        if num_bytes is None:
            num_bytes = obj.nbytes
    elif isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        address = int(obj)
        block = find_allocation(address)
        if block is None:
            raise exception(errc.invalid, f"{what}: address {address:#x} is not in a live "
                            "USM allocation")
    else:
        raise exception(errc.invalid, f"{what} takes a sycl.usm_array or a USM address, "
                        f"not {type(obj).__name__}")
    end = block.ptr + block.nbytes
    n = end - address if num_bytes is None else _size(num_bytes, f"{what}: num_bytes")
    if n < 0 or address + n > end:
        raise exception(errc.invalid, f"{what}: {n} bytes from {address:#x} run past the end "
                        f"of the allocation ({block.nbytes} bytes at {block.ptr:#x})")
    return address, n


def prefetch(cgh, ptr, num_bytes=None) -> None:
    """``handler.prefetch``: a hint that the device will soon use the range. The CPU
    devices and OpenCL migrate nothing, so the command only orders (it completes once
    its dependencies have)."""
    _usm_range(ptr, num_bytes, "prefetch")
    cgh._set_command(STREAM, _no_op, "prefetch")


def mem_advise(cgh, ptr, num_bytes, advice) -> None:
    """``handler.mem_advise``: backend-specific advice (an int) on the range; no backend
    here has advice to take, so, like ``prefetch``, the command only orders."""
    _usm_range(ptr, num_bytes, "mem_advise")
    if not isinstance(advice, (int, np.integer)) or isinstance(advice, (bool, np.bool_)):
        raise exception(errc.invalid, f"mem_advise: advice must be an int, not {advice!r}")
    cgh._set_command(STREAM, _no_op, "mem_advise")


def _no_op():
    return None
