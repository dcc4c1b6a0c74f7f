"""Public type vocabulary shared by the frontend, runtime and bundles.

Kernel parameters are annotated with the objects made here (``sycl.accessor[np.float32,
2, sycl.read_only]`` makes an :class:`AccessorAnnotation`). Runtime classes with the
same public name (``sycl.accessor``, ``sycl.id``, ...) delegate their ``__class_getitem__``
to the helpers below, so one name serves as constructor and as annotation.

>>> accessor_annotation((np.float32, 2, read_only)).dims
2
"""
from __future__ import annotations

import copy
import enum
from typing import Any

import numpy as np

from ._records import FrozenValue
from .errors import errc, overflow_error, type_error, value_error


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
    try:
        return np.dtype(t)
    except TypeError as e:   # also a TypeError: callers that catch one still do
        raise type_error(errc.invalid, f"{t!r} is not a data type: {e}") from None


def vec(dtype, n: int) -> np.dtype:
    """The dtype of C++ ``vec<T, n>``: n in 1, 2, 3, 4, 8, 16; a 3-vector takes 4 slots.

    >>> vec(np.float32, 3).itemsize
    16
    """
    if n not in (1, 2, 3, 4, 8, 16):
        raise value_error(errc.invalid, f"sycl.vec size must be 1, 2, 3, 4, 8 or 16, not {n}")
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


class ReducerAnnotation(FrozenValue):
    """``reducer[T]``, ``reducer[T, op]``, ``reducer[T, n]``, ``reducer[T, n, op]``: a
    reduction variable (SYCL 2020 4.10.6.3). ``extent`` is 0 for a scalar reducer, n
    for one over a span of n elements (``r[i] += x``; C++ requires a static extent).
    ``op`` is the operator's IR name, or None when the kernel's use (``+=``...) tells."""

    __slots__ = _fields = ("dtype", "extent", "op")
    dtype: np.dtype
    extent: int
    op: str | None

    def __init__(self, dtype, extent=0, op=None):
        _set(self, "dtype", dtype)
        _set(self, "extent", extent)
        _set(self, "op", op)


def reducer_annotation(params) -> ReducerAnnotation:
    from .functional import as_operator
    if not isinstance(params, tuple):
        params = (params,)
    dt, extent, op = as_dtype(params[0]), 0, None
    for p in params[1:]:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool) and not extent \
                and op is None:
            if p <= 0:
                raise TypeError(f"a span reducer's extent must be positive, not {p}")
            extent = int(p)
        elif as_operator(p) is not None and op is None:
            op = as_operator(p).ir_name
        else:
            raise TypeError(f"sycl.reducer[T, n, op]: {p!r} is neither an extent nor a "
                            "SYCL function object (sycl.plus, sycl.minimum, ...)")
    return ReducerAnnotation(dt, extent, op)


class reducer:
    """Annotation ``sycl.reducer[T]`` (or ``[T, op]``, ``[T, n]``, ``[T, n, op]``): the
    kernel parameter a ``sycl.reduction`` argument binds to; in the kernel ``r += x``,
    ``r.combine(x)``, ``r[i] += x`` (span), ``r.identity()``."""

    def __class_getitem__(cls, params):
        return reducer_annotation(params)


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
#: dtype metadata key of a struct's default value (its bytes), so code that sees only the
#: dtype (a specialization_id or device_global of it, a struct field of it) finds it.
DEFAULT_KEY = "pysycl_default"


def struct(cls):
    """Make an annotated class a kernel struct with C layout. A class attribute of a
    field's name is its default (C++'s default member initializer); a field of a
    ``@sycl.struct`` type without one defaults to that struct's defaults, any other to zero.

    >>> @struct
    ... class Point:
    ...     x: np.float32
    ...     y: np.float32 = 1.5
    >>> Point.dtype.itemsize, Point().y, Point(2).x
    (8, 1.5, 2)
    """
    fields = list(getattr(cls, "__annotations__", {}).items())
    if not fields:
        raise TypeError(f"@sycl.struct class {cls.__qualname__} has no annotated fields")
    names, offsets, formats = [], [], []
    offset, max_align = 0, 1
    for name, ann in fields:
        dt = as_dtype(ann)
        n = vec_size(dt)
        # A nested struct's dtype has explicit offsets, so NumPy gives it alignment 1:
        # C aligns it as its most aligned member (recorded when it was made).
        align = dt.itemsize if n else max(dt.alignment,
                                          int((dt.metadata or {}).get("pysycl_align", 1)))
        offset = (offset + align - 1) // align * align
        names.append(name); formats.append(dt); offsets.append(offset)
        offset += dt.itemsize
        max_align = max(max_align, align)
    size = (offset + max_align - 1) // max_align * max_align
    layout = {"names": names, "formats": formats, "offsets": offsets, "itemsize": size}
    meta = {"pysycl_name": cls.__name__, "pysycl_align": max_align}
    given = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    default = _struct_default_bytes(cls.__qualname__, np.dtype(layout, metadata=meta), given)
    if any(default):
        meta[DEFAULT_KEY] = default
    dtype = np.dtype(layout, metadata=meta)
    cls.dtype = dtype
    cls.__pysycl_struct__ = True
    # A field's value when the constructor is not given one: a fresh copy each time
    # for a struct-typed field (instances are mutable, as dataclass default factories).
    field_types = {name: ann for name, ann in fields}

    def default_of(name):
        if name in given:
            v = given[name]
            return copy.copy(v) if getattr(type(v), "__pysycl_struct__", False) else v
        ann = field_types[name]
        if isinstance(ann, type) and getattr(ann, "__pysycl_struct__", False):
            return ann()
        fdt = dtype.fields[name][0]
        if fdt.fields is None and fdt.subdtype is None:
            return 0
        return value_from_default(fdt)

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes at most {len(names)} field values, "
                            f"{len(args)} given")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in field_types:
                raise TypeError(f"{cls.__name__}() has no field {k!r}")
            if k in values:
                raise TypeError(f"{cls.__name__}() got two values for field {k!r}")
            values[k] = v
        for n in names:
            setattr(self, n, values[n] if n in values else default_of(n))

    def as_void(self) -> np.void:
        arr = np.zeros((), dtype)
        arr[()] = to_numpy_value(self, dtype)
        return arr[()]

    def __repr__(self):
        return f"{cls.__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    cls.__init__ = __init__
    cls.as_void = as_void
    cls.__repr__ = __repr__
    return cls


def _struct_default_bytes(qualname: str, dtype: np.dtype, given: dict) -> bytes:
    """The bytes of a struct's default value: the given field defaults over each field's
    type default. A default the field cannot hold is ``errc.invalid``, also the Python
    error NumPy gave (``TypeError``, ``ValueError``, ``OverflowError``)."""
    arr = np.zeros(1, dtype)   # a copy of a structured array may leave padding unset
    arr.view(np.uint8)[:] = np.frombuffer(default_bytes(dtype), np.uint8)
    for name, value in given.items():
        fdt = dtype.fields[name][0]
        try:
            arr[name][0] = to_numpy_value(value, fdt)
        except (TypeError, ValueError, OverflowError) as e:
            kind = {TypeError: type_error, OverflowError: overflow_error}.get(
                type(e), value_error)
            raise kind(errc.invalid, f"@sycl.struct {qualname}: the default {value!r} of "
                       f"field {name!r} is not a {fdt}: {e}") from None
    return arr.tobytes()


def default_bytes(dtype: np.dtype) -> bytes:
    """The bytes of ``dtype``'s default value: a ``@sycl.struct``'s defaults (also as a
    field or array element), zeros elsewhere (padding included).

    >>> default_bytes(np.dtype(np.int32))
    b'\\x00\\x00\\x00\\x00'
    """
    meta = dtype.metadata or {}
    if DEFAULT_KEY in meta:
        return bytes(meta[DEFAULT_KEY])
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return default_bytes(base) * int(np.prod(shape))
    if dtype.fields is not None:
        out = bytearray(dtype.itemsize)
        for fdt, off, *_ in dtype.fields.values():
            out[off:off + fdt.itemsize] = default_bytes(fdt)
        return bytes(out)
    return bytes(dtype.itemsize)


def value_from_default(dtype: np.dtype):
    """``dtype``'s default value as NumPy gives it (scalar, ``np.void`` or array)."""
    arr = np.frombuffer(default_bytes(dtype), dtype=dtype, count=1)
    return arr[0].copy() if dtype.fields is not None or dtype.subdtype is not None else arr[0]


def to_numpy_value(value: Any, dtype: np.dtype) -> Any:
    """``value`` in a form NumPy assigns into ``dtype``: ``@sycl.struct`` instances (also
    nested in tuples, lists and other structs) become tuples in field order.

    >>> to_numpy_value((1, 2), np.dtype([("a", "i4"), ("b", "f4")]))
    (1, 2)
    """
    if isinstance(value, np.void) or dtype.fields is None and dtype.subdtype is None:
        return value
    if dtype.fields is not None:
        if getattr(type(value), "__pysycl_struct__", False):
            value = tuple(getattr(value, n) for n in dtype.names)
        if isinstance(value, (tuple, list)):
            return tuple(to_numpy_value(v, dtype.fields[n][0]) for n, v in zip(dtype.names, value))
        return value
    base, _shape = dtype.subdtype
    if vec_size(dtype) == 3 and isinstance(value, (tuple, list, np.ndarray)) and len(value) == 3:
        # C++ vec<T, 3> takes three values; the fourth lane is padding (zero).
        value = [*value, 0]
    if isinstance(value, (tuple, list)):
        return [to_numpy_value(v, base) for v in value]
    return value


def to_struct_bytes(value, dtype: np.dtype) -> bytes:
    """Bytes of ``value`` (instance, tuple, np.void, scalar) laid out as ``dtype``."""
    if hasattr(value, "as_void"):
        value = value.as_void()
    arr = np.zeros((), dtype)
    arr[()] = to_numpy_value(value, dtype)
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


class address_space(enum.Enum):
    """SYCL 2020 ``access::address_space`` (the fourth ``atomic_ref`` template argument)."""

    global_space = "global"
    local_space = "local"
    generic_space = "generic"
    private_space = "private"
    constant_space = "constant"


class memory_scope(enum.Enum):
    """SYCL 2020 ``memory_scope``; values are the IR ``scope`` attribute."""

    work_item = "work_item"
    sub_group = "sub_group"
    work_group = "work_group"
    device = "device"
    system = "system"


class fence_space(enum.Enum):
    """``sycl.access.fence_space`` (SYCL 1.2.1, deprecated in SYCL 2020): what
    ``nd_item.barrier(space)`` fences (pysycl's barriers fence both)."""

    global_space = "global_space"
    local_space = "local_space"
    global_and_local = "global_and_local"


class access:
    """``sycl.access``: SYCL's ``access`` namespace (``sycl.access.address_space.local_space``,
    ``sycl.access.mode.read_write``, ``sycl.access.fence_space.local_space``)."""

    address_space = address_space
    mode = access_mode
    fence_space = fence_space

