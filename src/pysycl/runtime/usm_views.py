"""What makes a ``sycl.usm_array`` an array: views by basic indexing, NumPy's
``__array_ufunc__`` on memory the host reaches, and the ``__sycl_usm_array_interface__``
protocol of dpctl and dpnp (export, and import of objects exposing it).

Views are computed from the index alone: a basic index (ints, slices, ``...``,
``None``) applied to an array of the right shape and strides that is never read, so a
view of device memory is made without touching it.

>>> import numpy as np
>>> view_layout((4, 5), np.dtype(np.float32), (slice(1, 3),))
(20, (2, 5), True)
>>> view_layout((4, 5), np.dtype(np.float32), (slice(None), 1))
(4, (4,), False)
>>> is_basic((2, 3), 2), is_basic((slice(None),), 2), is_basic(([0, 1],), 1)
(False, True, False)
"""
from __future__ import annotations

import numpy as np

from ..errors import errc, exception, type_error


class ViewMemory:
    """The memory handle of a view that does not start at its allocation's first byte:
    its address (``ptr``, which every driver reads) and the allocation, which it keeps
    alive while a command uses it."""

    __slots__ = ("ptr", "alloc")

    def __init__(self, ptr: int, alloc):
        self.ptr = ptr
        self.alloc = alloc

    def __int__(self) -> int:
        return self.ptr

    __index__ = __int__


def _as_tuple(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def is_basic(index, ndim: int) -> bool:
    """Whether ``index`` selects a view (basic indexing that is not one element)."""
    parts = _as_tuple(index)
    ints = 0
    for p in parts:
        if isinstance(p, (bool, np.bool_)):
            return False
        if isinstance(p, (int, np.integer)):
            ints += 1
        elif not (p is Ellipsis or p is None or isinstance(p, slice)):
            return False
    return not (ints == ndim and len(parts) == ints)


def is_element(index, ndim: int) -> bool:
    """Whether ``index`` is one integer per dimension (one element)."""
    parts = _as_tuple(index)
    return len(parts) == ndim and all(isinstance(p, (int, np.integer)) and not isinstance(
        p, (bool, np.bool_)) for p in parts)


def view_layout(shape, dtype: np.dtype, index) -> tuple[int, tuple, bool]:
    """(byte offset, shape, C-contiguous) of ``a[index]`` for a basic ``index`` of a
    C-contiguous array of ``shape``: NumPy computes it on a zero-stride stand-in that
    is never read (IndexError for an index out of range, as NumPy)."""
    base = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=tuple(shape),
                                           strides=_c_strides(shape, dtype.itemsize),
                                           writeable=False)
    sub = base[index]
    offset = sub.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    contiguous = sub.strides == _c_strides(sub.shape, dtype.itemsize) or sub.size <= 1
    return offset, sub.shape, contiguous


def _c_strides(shape, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for extent in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def new_shape(shape: tuple, size: int, args) -> tuple:
    """The shape ``reshape(*args)`` asks for (one extent may be -1), checked."""
    want = args[0] if len(args) == 1 and not isinstance(args[0], (int, np.integer)) else args
    want = tuple(int(d) for d in want)
    if want.count(-1) > 1 or any(d < -1 for d in want):
        raise exception(errc.invalid, f"cannot reshape {shape} to {want}")
    known = int(np.prod([d for d in want if d != -1], dtype=np.int64))
    if -1 in want:
        if known == 0 or size % known:
            raise exception(errc.invalid, f"cannot reshape {shape} ({size} elements) to {want}")
        want = tuple(size // known if d == -1 else d for d in want)
    if int(np.prod(want, dtype=np.int64)) != size:
        raise exception(errc.invalid, f"cannot reshape {shape} ({size} elements) to {want}")
    return want


# __sycl_usm_array_interface__ ---------------------------------------------------------
def interface_of(a, syclobj) -> dict:
    """The ``__sycl_usm_array_interface__`` of a C-contiguous ``usm_array``: version 1,
    strides None (C order), ``syclobj`` the SYCL object the memory belongs to."""
    return {"data": (a.ptr, False), "shape": a.shape, "strides": None,
            "typestr": a.dtype.str, "version": 1, "offset": 0, "syclobj": syclobj}


def interface_memory(obj) -> tuple[int, np.dtype, int]:
    """(address of the first element, dtype, bytes) of an object exposing
    ``__sycl_usm_array_interface__``; it must be C-contiguous and writable."""
    try:
        iface = obj.__sycl_usm_array_interface__
        ptr, read_only = iface["data"]
        dtype = np.dtype(iface["typestr"])
        shape = tuple(int(s) for s in iface["shape"])
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise type_error(errc.invalid, f"{type(obj).__name__} has no usable "
                         f"__sycl_usm_array_interface__: {e}") from None
    strides = iface.get("strides")
    count = int(np.prod(shape, dtype=np.int64))
    if strides is not None and count > 1:
        want, step = [], 1
        for extent in reversed(shape):
            want.append(step)
            step *= extent
        if any(s != w for s, w, e in zip(strides, reversed(want), shape) if e != 1):
            raise exception(errc.invalid, f"{type(obj).__name__} is not C-contiguous "
                            f"(strides {tuple(strides)} elements)")
    if read_only:
        raise exception(errc.invalid, f"{type(obj).__name__} is read-only")
    offset = int(iface.get("offset", 0) or 0) * dtype.itemsize
    return int(ptr or 0) + offset, dtype, count * dtype.itemsize


# NumPy ufuncs ----------------------------------------------------------------------------
def run_ufunc(ufunc, method: str, inputs, kwargs, host_view):
    """``ufunc.method`` on NumPy views of ``usm_array`` inputs (``host_view`` makes one,
    refusing memory the host cannot reach). Results are NumPy arrays, except that an
    ``out=`` ``usm_array`` is written in place and returned."""
    args = [host_view(x) if _is_usm(x) else x for x in inputs]
    outs = kwargs.get("out")
    if outs is not None:
        kwargs["out"] = tuple(host_view(o) if _is_usm(o) else o for o in outs)
    result = getattr(ufunc, method)(*args, **kwargs)
    if outs is None:
        return result
    if isinstance(result, tuple):
        return tuple(o if _is_usm(o) else r for o, r in zip(outs, result))
    return outs[0] if _is_usm(outs[0]) else result


def _is_usm(x) -> bool:
    return hasattr(type(x), "_is_usm_array")
