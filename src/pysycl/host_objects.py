"""Host objects that kernels use by name: ``specialization_id`` and ``device_global``.

Both are "uniquely identifiable objects" (DPC++'s host-variable mapping): device code knows them only by a
symbolic ID that the frontend records in IR (``spec.get{id=...}``, ``dg.addr{id=...}``).
A constructor cannot see the name it is about to be bound to, so it records where it
ran and the ID is resolved lazily on first use (``pysycl.detail.get_unique_id``).

>>> import numpy as np
>>> coeff = specialization_id(np.float32, 2.5)
>>> coeff.default_bytes == np.float32(2.5).tobytes()
True
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .detail import capture_definition_site, get_unique_id, references
from .errors import errc, exception, type_error, value_error
from .properties import properties, properties_for
from .properties.base import property as property_base
from .spec_values import value_bytes, value_from_bytes
from .types import as_dtype, default_bytes


def _caller_line() -> str:
    """``file:line`` of the user code that called the constructor (for messages)."""
    frame = sys._getframe(2)
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


class _Identifiable:
    """Shared by both host objects: lazy unique ID, and no copies (a copy would be a
    second object claiming the same device symbol)."""

    _pysycl_uid_kind = ""

    def __init__(self, name):
        # stacklevel=2: skip this __init__ and the subclass __init__.
        self._pysycl_site = capture_definition_site(stacklevel=2)
        if name is not None:
            self._pysycl_name = _checked_name(name, self._pysycl_uid_kind)

    @property
    def unique_id(self) -> str:
        """The symbolic ID: ``"<module>.<name>"`` for a module-level object or one given
        ``name=``, else its definition site (``pysycl.detail`` explains the rules)."""
        return get_unique_id(self)

    #: What a copy would need instead (said when one is attempted).
    _copy_hint = ""

    def __copy__(self):
        raise type_error(errc.invalid, f"{type(self).__name__} objects cannot be copied: each "
                         f"is one symbol of device code{self._copy_hint}")

    def __deepcopy__(self, memo):
        self.__copy__()

    def __reduce__(self):
        """Pickled by reference (module and name, as Python pickles functions): the
        receiving process finds the same object by importing its module."""
        site = self._pysycl_site
        name = None if site.scope == "function" else \
            references.name_of(self, site.module, site.qualname)
        return references.reduce_by_reference(self, repr(self),
                                              site.module, name)


def _dtype_text(dt: np.dtype) -> str:
    """``float32[6]`` for an array dtype, the dtype's name otherwise."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{base.name}[{', '.join(map(str, shape))}]"
    return str(dt)


def _is_property_list(value) -> bool:
    """A property list given where the initial value goes (``device_global(T, props)``)."""
    if isinstance(value, (properties, property_base)):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and \
        all(isinstance(v, property_base) for v in value)


def _checked_name(name, kind: str) -> str:
    """A ``name=``: dotted Python identifiers (``"gain"``, ``"filters.gain"``)."""
    if not isinstance(name, str):
        raise type_error(errc.invalid, f"sycl.{kind} name= takes a str, not "
                                       f"{type(name).__name__}")
    if not all(part.isidentifier() for part in name.split(".")):
        raise value_error(errc.invalid, f"sycl.{kind} name={name!r} is not a dotted Python "
                                        "name (e.g. 'gain' or 'filters.gain')")
    return name


class specialization_id(_Identifiable):
    """``sycl::specialization_id<T>``: a spec constant's identity and default value.
    ``name=`` fixes its ID to ``"<module>.<name>"`` (for one made in a function or held
    in a list, whose ID would otherwise come from where it was made).

    >>> s = specialization_id(np.int32)
    >>> s.default_bytes
    b'\\x00\\x00\\x00\\x00'
    """

    _pysycl_uid_kind = "specialization_id"

    def __init__(self, dtype, default=None, *, name: str | None = None):
        super().__init__(name)
        self.dtype = as_dtype(dtype)
        self.default = default
        self.default_bytes = value_bytes(default, self.dtype)

    def __repr__(self):
        return f"specialization_id({self.dtype}, default={self.default!r})"


class device_global(_Identifiable):
    """``sycl::ext::oneapi::experimental::device_global<T, props>``: a global in device
    memory holding T's default value at first (zero, or a ``@sycl.struct``'s field
    defaults: C++20's value-initialising constructor). Kernels use ``dg.get()``,
    ``dg.set(v)``, ``dg[i]``; the host copies through queue/handler ``copy``/``memcpy``.
    ``name=`` fixes its ID as for ``specialization_id``. ``value`` sets the initial
    value instead (``device_global(np.int32, 4)``; another device_global: its initial
    value); ``properties`` may also come second (``device_global(T, props)``).

    >>> device_global(np.int32, 4).initial_value
    np.int32(4)
    """

    _pysycl_uid_kind = "device_global"
    _copy_hint = ("; sycl.device_global(dtype, other) makes another one starting with "
                  "other's initial value")

    def __init__(self, dtype, value=None, properties=None, *, name: str | None = None):
        super().__init__(name)
        if properties is None and _is_property_list(value):   # device_global(T, props)
            value, properties = None, value
        self.dtype = as_dtype(dtype)
        # Only device_global properties: a kernel or argument property here would be
        # dropped silently.
        self.properties = properties_for(properties, "global_variable",
                                         f"sycl.device_global at {_caller_line()}")
        self.initial_bytes = self._initial_bytes(value)

    def _initial_bytes(self, value) -> bytes:
        """The initial value's bytes: T's default, ``value`` converted to T (the
        extension's ``device_global(const T& init)``), or another device_global's
        initial value (its device contents live per device and are not known here)."""
        if value is None:
            return default_bytes(self.dtype)
        if isinstance(value, device_global):
            if value.dtype != self.dtype:
                raise type_error(errc.invalid, f"a device_global of {_dtype_text(self.dtype)} "
                                 "cannot start with the value of a device_global of "
                                 f"{_dtype_text(value.dtype)}")
            return value.initial_bytes
        return value_bytes(value, self.dtype)

    @property
    def initial_value(self):
        """The value every device's instance starts with (a NumPy value of the dtype)."""
        return value_from_bytes(self.dtype, self.initial_bytes)

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize

    @property
    def element_dtype(self) -> np.dtype:
        """The element type of ``copy`` (``T`` for an array ``T[n]``, else the dtype)."""
        sub = self.dtype.subdtype
        return sub[0] if sub is not None else self.dtype

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
