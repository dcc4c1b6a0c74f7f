"""Public type vocabulary shared by the frontend, runtime and bundles.

Kernel parameters are annotated with the objects made here (``sycl.accessor[np.float32,
2, sycl.read_only]`` makes an :class:`AccessorAnnotation`). Runtime classes with the
same public name (``sycl.accessor``, ``sycl.id``, ...) delegate their ``__class_getitem__``
to the helpers below, so one name serves as constructor and as annotation.

>>> accessor_annotation((np.float32, 2, read_only)).dims
2
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ._records import FrozenValue


class access_mode(enum.Enum):
    read = "read_only"
    write = "write_only"
    read_write = "read_write"

    # SYCL 2020 spells the tags read_only / write_only / read_write.
    read_only = "read_only"
    write_only = "write_only"


read_only = access_mode.read_only
write_only = access_mode.write_only
read_write = access_mode.read_write

SCALAR_ANNOTATIONS = {int: np.dtype(np.int64), float: np.dtype(np.float64),
                      bool: np.dtype(np.bool_)}


def as_dtype(t: Any) -> np.dtype:
    """``int``/``float``/``bool`` mean int64/float64/bool_; ``@sycl.struct`` classes give
    their ``dtype``; anything else goes through ``np.dtype``."""
    if t in SCALAR_ANNOTATIONS:
        return SCALAR_ANNOTATIONS[t]
    dt = getattr(t, "dtype", None)
    if isinstance(dt, np.dtype) and isinstance(t, type) and getattr(t, "__pysycl_struct__", False):
        return dt
    return np.dtype(t)


def vec(dtype, n: int) -> np.dtype:
    """The dtype of C++ ``vec<T, n>``: n in 1, 2, 3, 4, 8, 16; a 3-vector takes 4 slots.

    >>> vec(np.float32, 3).itemsize
    16
    """
    if n not in (1, 2, 3, 4, 8, 16):
        raise ValueError(f"sycl.vec size must be 1, 2, 3, 4, 8 or 16, not {n}")
    base = as_dtype(dtype)
    return np.dtype((base, (4 if n == 3 else n,)), metadata={"pysycl_vec": n})


def vec_size(dt: np.dtype) -> int | None:
    """n if ``dt`` was made by :func:`vec`, else None."""
    meta = dt.metadata or {}
    return meta.get("pysycl_vec")


# Kernel parameter annotations ------------------------------------------------------
# Frozen value classes written out by hand with the semantics of frozen dataclasses
# (``==``, ``hash`` and ``repr`` from the fields; the warm-start index reads the repr).
_set = object.__setattr__


class AccessorAnnotation(FrozenValue):
    __slots__ = _fields = ("dtype", "dims", "mode", "properties")
    dtype: np.dtype
    dims: int
    mode: access_mode
    properties: Any  # a sycl.properties or None

    def __init__(self, dtype, dims, mode=access_mode.read_write, properties=None):
        _set(self, "dtype", dtype)
        _set(self, "dims", dims)
        _set(self, "mode", mode)
        _set(self, "properties", properties)


class LocalAccessorAnnotation(FrozenValue):
    __slots__ = _fields = ("dtype", "dims")
    dtype: np.dtype
    dims: int

    def __init__(self, dtype, dims=1):
        _set(self, "dtype", dtype)
        _set(self, "dims", dims)


class GlobalPtrAnnotation(FrozenValue):
    __slots__ = _fields = ("dtype", "properties", "annotated")
    dtype: np.dtype
    properties: Any  # annotated_ptr properties
    # True for ``annotated_ptr[T, p]``: its properties also annotate the pointer
    # (``llvm.ptr.annotation``, sycl_ext_oneapi_properties), not only the kernel parameter.
    annotated: bool

    def __init__(self, dtype, properties=None, annotated=False):
        _set(self, "dtype", dtype)
        _set(self, "properties", properties)
        _set(self, "annotated", annotated)


class IndexAnnotation(FrozenValue):
    __slots__ = _fields = ("kind", "dims")
    kind: str   # "id", "item", "nd_item", "range"
    dims: int

    def __init__(self, kind, dims):
        _set(self, "kind", kind)
        _set(self, "dims", dims)


class SpecConstantAnnotation(FrozenValue):
    """``spec_constant[T, spec_id]``: a placeholder parameter that reads ``spec_id``
    (SYCL 1.2.1's ``spec_constant<T, ID>``: the ID is part of the type, so the kernel
    reads the constant under its own symbolic ID). ``spec_id`` is ``None`` for the
    bare ``spec_constant[T]``, which the compiler refuses."""

    __slots__ = _fields = ("dtype", "spec_id")
    dtype: np.dtype
    spec_id: Any

    def __init__(self, dtype, spec_id=None):
        _set(self, "dtype", dtype)
        _set(self, "spec_id", spec_id)


class KernelHandlerAnnotation:
    """``sycl.kernel_handler``: supplied by the runtime, not passed by the caller."""


def _dims(d) -> int:
    if not isinstance(d, int) or not 1 <= d <= 3:
        raise TypeError(f"dimensions must be 1, 2 or 3, not {d!r}")
    return d


def accessor_annotation(params) -> AccessorAnnotation:
    """``accessor[T]``, ``accessor[T, D]``, ``accessor[T, D, mode]``, ``accessor[T, D, mode, props]``."""
    if not isinstance(params, tuple):
        params = (params,)
    dt = as_dtype(params[0])
    dims = _dims(params[1]) if len(params) > 1 else 1
    mode = access_mode(params[2].value if isinstance(params[2], access_mode) else params[2]) \
        if len(params) > 2 else access_mode.read_write
    props = params[3] if len(params) > 3 else None
    return AccessorAnnotation(dt, dims, mode, props)


def local_accessor_annotation(params) -> LocalAccessorAnnotation:
    if not isinstance(params, tuple):
        params = (params,)
    return LocalAccessorAnnotation(as_dtype(params[0]), _dims(params[1]) if len(params) > 1 else 1)


def global_ptr_annotation(params) -> GlobalPtrAnnotation:
    if isinstance(params, tuple):
        return GlobalPtrAnnotation(as_dtype(params[0]), params[1] if len(params) > 1 else None)
    return GlobalPtrAnnotation(as_dtype(params))


def index_annotation(kind: str, dims) -> IndexAnnotation:
    return IndexAnnotation(kind, _dims(dims))


class global_ptr:
    """Annotation ``sycl.global_ptr[T]``: a USM pointer argument."""

    def __class_getitem__(cls, params):
        return global_ptr_annotation(params)


class annotated_ptr:
    """Annotation ``sycl.annotated_ptr[T, props]``: a USM pointer with compile-time properties."""

    def __class_getitem__(cls, params):
        if not isinstance(params, tuple) or len(params) != 2:
            raise TypeError("use sycl.annotated_ptr[T, sycl.properties(...)]")
        return GlobalPtrAnnotation(as_dtype(params[0]), params[1], annotated=True)


class item:
    def __class_getitem__(cls, dims):
        return index_annotation("item", dims)


class nd_item:
    def __class_getitem__(cls, dims):
        return index_annotation("nd_item", dims)


class group:
    """``sycl.group[D]``: the work-group an ``nd_item`` belongs to (``nd.get_group()``),
    as an annotation."""

    def __class_getitem__(cls, dims):
        return index_annotation("group", dims)


class sub_group:
    """``sycl.sub_group``: the sub-group of an ``nd_item`` (``nd.get_sub_group()``)."""

    def __class_getitem__(cls, dims):
        return index_annotation("sub_group", dims)


class local_accessor_type:
    def __class_getitem__(cls, params):
        return local_accessor_annotation(params)


class kernel_handler(KernelHandlerAnnotation):
    """``sycl.kernel_handler`` parameter annotation (SYCL 2020 4.9.4.3)."""


def _is_specialization_id(obj) -> bool:
    # host_objects imports this module: recognise its class by its kind tag.
    return getattr(type(obj), "_pysycl_uid_kind", None) == "specialization_id"


def spec_constant_annotation(params) -> SpecConstantAnnotation:
    """``spec_constant[spec_id]``, ``spec_constant[T, spec_id]`` or ``spec_constant[T]``;
    ``T`` must be ``spec_id``'s type (``TypeError`` otherwise)."""
    if _is_specialization_id(params):
        return SpecConstantAnnotation(params.dtype, params)
    if isinstance(params, tuple):
        if len(params) != 2 or not _is_specialization_id(params[1]):
            raise TypeError("spec_constant[...] takes a specialization_id, or a type and a "
                            f"specialization_id, not {params!r}")
        dtype, spec_id = as_dtype(params[0]), params[1]
        if dtype != spec_id.dtype:
            raise TypeError(f"spec_constant[{dtype}, ...]: the specialization_id holds "
                            f"{spec_id.dtype}, not {dtype}")
        return SpecConstantAnnotation(dtype, spec_id)
    return SpecConstantAnnotation(as_dtype(params))


class spec_constant_type:
    def __class_getitem__(cls, params):
        return spec_constant_annotation(params)


# @sycl.struct ---------------------------------------------------------------------
def struct(cls):
    """Make an annotated class a kernel struct with C layout.

    >>> @struct
    ... class Point:
    ...     x: np.float32
    ...     y: np.float32
    >>> Point.dtype.itemsize
    8
    """
    fields = list(getattr(cls, "__annotations__", {}).items())
    if not fields:
        raise TypeError(f"@sycl.struct class {cls.__qualname__} has no annotated fields")
    names, offsets, formats = [], [], []
    offset, max_align = 0, 1
    for name, ann in fields:
        dt = as_dtype(ann)
        n = vec_size(dt)
        align = dt.itemsize if n else dt.alignment
        offset = (offset + align - 1) // align * align
        names.append(name); formats.append(dt); offsets.append(offset)
        offset += dt.itemsize
        max_align = max(max_align, align)
    size = (offset + max_align - 1) // max_align * max_align
    dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size},
                     metadata={"pysycl_name": cls.__name__, "pysycl_align": max_align})
    cls.dtype = dtype
    cls.__pysycl_struct__ = True

    def __init__(self, *args, **kwargs):
        values = dict(zip(names, args))
        values.update(kwargs)
        for n in names:
            setattr(self, n, values.get(n, 0))

    def as_void(self) -> np.void:
        arr = np.zeros((), dtype)
        for n in names:
            arr[n] = getattr(self, n)
        return arr[()]

    def __repr__(self):
        return f"{cls.__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    cls.__init__ = __init__
    cls.as_void = as_void
    cls.__repr__ = __repr__
    return cls


def to_struct_bytes(value, dtype: np.dtype) -> bytes:
    """Bytes of ``value`` (instance, tuple, np.void, scalar) laid out as ``dtype``."""
    if hasattr(value, "as_void"):
        value = value.as_void()
    arr = np.zeros((), dtype)
    arr[()] = value
    return arr.tobytes()


# Additions for the kernel language (frontend) ----------------------------------------
class spec_constant:
    """Annotation ``sycl.spec_constant[T, spec_id]`` (or ``sycl.spec_constant[spec_id]``):
    a pre-SYCL 2020 placeholder argument (the object ``cgh.set_spec_constant(spec_id,
    value)`` returns); kernels read it with ``p.get()``. The runtime's placeholder class
    may subclass this to share the name.

    >>> spec_constant[np.float32].dtype
    dtype('float32')
    """

    def __class_getitem__(cls, params):
        return spec_constant_annotation(params)


class memory_order(enum.Enum):
    """SYCL 2020 ``memory_order`` (4.15.3.1); values are the IR ``order`` attribute."""

    relaxed = "relaxed"
    acquire = "acquire"
    release = "release"
    acq_rel = "acq_rel"
    seq_cst = "seq_cst"


class memory_scope(enum.Enum):
    """SYCL 2020 ``memory_scope``; values are the IR ``scope`` attribute."""

    work_item = "work_item"
    sub_group = "sub_group"
    work_group = "work_group"
    device = "device"
    system = "system"
