"""Properties of kernel arguments and pointers (``sycl_ext_oneapi_kernel_arg_properties``)
and of accessors.

``restrict`` and ``alignment`` may go on a kernel parameter (IR parameter attributes)
or on an ``annotated_ptr`` (a ``sycl-properties:`` pointer annotation), hence both
categories. ``no_init`` is a runtime accessor property: it changes what the runtime
copies, never the IR, so it has no meta name.

>>> restrict.meta_name, restrict.meta_value, alignment(64).meta_value
('sycl-restrict', '', '64')
"""
from __future__ import annotations

from ..errors import errc, exception
from ._values import parse_ints, positive_int
from .base import property, singleton_property


class restrict_key(singleton_property):
    """C99 ``restrict`` on a pointer argument: it aliases no other argument."""

    meta_name = "sycl-restrict"
    category = "kernel_arg"
    categories = frozenset({"pointer"})


class alignment(property):
    """The pointer is aligned to ``n`` bytes (a power of two).

    >>> alignment(3)
    Traceback (most recent call last):
    ...
    pysycl.errors.exception: alignment: 3 is not a power of two
    """

    meta_name = "sycl-alignment"
    category = "kernel_arg"
    categories = frozenset({"pointer"})

    def __init__(self, n):
        n = positive_int("alignment", n)
        if n & (n - 1):
            # LLVM's `align` attribute only takes powers of two.
            raise exception(errc.invalid, f"alignment: {n} is not a power of two")
        self._value = n

    @classmethod
    def from_meta(cls, text):
        return cls(*parse_ints(cls.__name__, text))


class no_init_key(singleton_property):
    """Accessor property: previous contents need not be copied to the device."""

    meta_name = None
    category = "accessor"


restrict = restrict_key()
no_init = no_init_key()
