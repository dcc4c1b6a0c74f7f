"""Specialization-constant values as bytes: the one encoding that host objects, kernel
bundles, handlers and the default-value property set all use.

A value converts through NumPy to the constant's dtype and is stored little-endian, with
padding zeroed; ``None`` means the type's default (zero, or a ``@sycl.struct``'s field
defaults). ``@sycl.struct`` instances and nested tuples or lists fill structured dtypes
field by field.

>>> value_bytes(42, np.dtype("<i4")).hex()
'2a000000'
>>> value_from_bytes(np.dtype("<f4"), value_bytes(2.5, np.dtype("<f4")))
np.float32(2.5)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .detail import get_unique_id
from .errors import errc, exception
from .types import default_bytes, to_numpy_value


def value_bytes(value: Any, dtype) -> bytes:
    """The little-endian bytes of ``value`` converted by NumPy to ``dtype``; ``None`` is
    the type's default (zero, or a ``@sycl.struct``'s field defaults); ``errc.invalid``
    if it does not convert."""
    dtype = np.dtype(dtype)
    if value is None:
        return default_bytes(dtype)
    arr = np.zeros((), dtype)
    if value is not None:
        try:
            arr[()] = to_numpy_value(value, dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise exception(errc.invalid,
                            f"cannot convert {value!r} to dtype {dtype}: {e}") from None
    return arr.tobytes()


def value_from_bytes(dtype, raw: bytes):
    """A NumPy value of ``dtype`` (scalar, ``np.void`` struct or array) from its bytes."""
    dtype = np.dtype(dtype)
    arr = np.frombuffer(bytes(raw), dtype=dtype, count=1)
    if dtype.subdtype is not None or dtype.fields is not None:
        return arr[0].copy()
    return arr[0]


# -- a specialization_id's value -------------------------------------------------------

def spec_uid(spec_id) -> str:
    """The symbolic ID of a ``sycl.specialization_id`` (or a symbolic ID string)."""
    if isinstance(spec_id, str):
        return spec_id
    uid = getattr(spec_id, "unique_id", None)
    if isinstance(uid, str):
        return uid
    return get_unique_id(spec_id)


def spec_dtype(spec_id) -> np.dtype:
    """The constant's dtype; ``errc.invalid`` for anything but a specialization_id."""
    dt = getattr(spec_id, "dtype", None)
    if dt is None:
        raise exception(errc.invalid, f"{spec_id!r} is not a sycl.specialization_id")
    return np.dtype(dt)


def spec_value_bytes(spec_id, value) -> bytes:
    """``value`` converted to the constant's dtype, as bytes (raw bytes of the dtype's
    size pass as they are)."""
    dt = spec_dtype(spec_id)
    if isinstance(value, (bytes, bytearray)) and len(value) == dt.itemsize:
        return bytes(value)
    return value_bytes(value, dt)


def spec_key(values) -> tuple:
    """The one key of a set of specialization-constant values (``{spec_id or symbolic
    ID: value}``): ``((symbolic ID, value bytes), ...)`` sorted. A value keyed by its
    ``specialization_id`` converts to the constant's dtype (bytes of its size pass as
    they are); one keyed by a symbolic ID must be bytes already.

    >>> spec_key(None), spec_key({"m.k": b"\\x01"})
    ((), (('m.k', b'\\x01'),))
    """
    if not values:
        return ()
    out = []
    for spec_id, value in values.items():
        if isinstance(spec_id, str):
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise exception(errc.invalid, f"spec constant {spec_id}: give bytes or key "
                                "the value by its specialization_id")
            out.append((spec_id, bytes(value)))
        else:
            out.append((spec_uid(spec_id), spec_value_bytes(spec_id, value)))
    return tuple(sorted(out))


def spec_default_bytes(spec_id) -> bytes:
    """The bytes of the constant's default value."""
    raw = getattr(spec_id, "default_bytes", None)
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    return spec_value_bytes(spec_id, getattr(spec_id, "default", None))


def spec_value_from_bytes(spec_id, raw: bytes):
    """A NumPy value of the constant's dtype from its bytes."""
    return value_from_bytes(spec_dtype(spec_id), raw)

