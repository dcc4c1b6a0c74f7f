"""Host objects that kernels use by name: ``specialization_id`` and ``device_global``.

Both are "uniquely identifiable objects" (seed 004): device code knows them only by a
symbolic ID that the frontend records in IR (``spec.get{id=...}``, ``dg.addr{id=...}``).
A constructor cannot see the name it is about to be bound to, so it records where it
ran and the ID is resolved lazily on first use (``pysycl.detail.get_unique_id``).

>>> import numpy as np
>>> coeff = specialization_id(np.float32, 2.5)
>>> coeff.default_bytes == np.float32(2.5).tobytes()
True
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .detail import capture_definition_site, get_unique_id
from .errors import errc, exception
from .properties import as_properties
from .types import as_dtype


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
    if isinstance(value, (tuple, list)):
        return [to_numpy_value(v, base) for v in value]
    return value


def value_bytes(value: Any, dtype: np.dtype) -> bytes:
    """The little-endian bytes of ``value`` converted by NumPy to ``dtype``; ``None`` is
    all zeros (API.md: an unset default means zero)."""
    arr = np.zeros((), dtype)
    if value is not None:
        try:
            arr[()] = to_numpy_value(value, dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise exception(errc.invalid,
                            f"cannot convert {value!r} to dtype {dtype}: {e}") from None
    return arr.tobytes()


class _Identifiable:
    """Shared by both host objects: lazy unique ID, and no copies (a copy would be a
    second object claiming the same device symbol)."""

    _pysycl_uid_kind = ""

    def __init__(self):
        # stacklevel=2: skip this __init__ and the subclass __init__.
        self._pysycl_site = capture_definition_site(stacklevel=2)

    @property
    def unique_id(self) -> str:
        """The symbolic ID (``"<module>.<name>"`` for a module-level object)."""
        return get_unique_id(self)

    def __copy__(self):
        raise TypeError(f"{type(self).__name__} objects cannot be copied")

    def __deepcopy__(self, memo):
        raise TypeError(f"{type(self).__name__} objects cannot be copied")

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} objects cannot be pickled")


class specialization_id(_Identifiable):
    """``sycl::specialization_id<T>``: a spec constant's identity and default value.

    >>> s = specialization_id(np.int32)
    >>> s.default_bytes
    b'\\x00\\x00\\x00\\x00'
    """

    _pysycl_uid_kind = "specialization_id"

    def __init__(self, dtype, default=None):
        super().__init__()
        self.dtype = as_dtype(dtype)
        self.default = default
        self.default_bytes = value_bytes(default, self.dtype)

    def __repr__(self):
        return f"specialization_id({self.dtype}, default={self.default!r})"


class device_global(_Identifiable):
    """``sycl::ext::oneapi::experimental::device_global<T, props>``: a zero-initialised
    global in device memory. Kernels use ``dg.get()``, ``dg.set(v)``, ``dg[i]``; the host
    copies through queue/handler ``copy``/``memcpy``, which the runtime installs in
    :attr:`host_copy_hook` (the frontend never needs it).

    >>> device_global(np.int32).dtype
    dtype('int32')
    """

    _pysycl_uid_kind = "device_global"
    #: Set by the runtime: ``hook(dg, op, *args)`` for host reads/writes (API.md).
    host_copy_hook: Callable | None = None

    def __init__(self, dtype, properties=None):
        super().__init__()
        self.dtype = as_dtype(dtype)
        self.properties = as_properties(properties)

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize

    @property
    def element_dtype(self) -> np.dtype:
        """The element type of ``copy`` (``T`` for an array ``T[n]``, else the dtype)."""
        sub = self.dtype.subdtype
        return sub[0] if sub is not None else self.dtype

    def __pysycl_memory__(self, queue):
        """``(memory, offset, nbytes, dtype)`` for ``runtime.memops``: the memory is this
        variable's instance on the queue's device (``bundle.device_globals``)."""
        from .bundle.device_globals import instance_of
        return instance_of(self, queue._device), 0, self.nbytes, self.element_dtype

    def _kernel_only(self, what):
        raise exception(errc.invalid, f"device_global {what} is only available inside kernels; "
                                      "on the host use q.copy / q.memcpy")

    def get(self):
        self._kernel_only("get()")

    def set(self, value):
        self._kernel_only("set()")

    def __getitem__(self, index):
        self._kernel_only("indexing")

    def __repr__(self):
        return f"device_global({self.dtype}, properties={self.properties!r})"
