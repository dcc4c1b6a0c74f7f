"""Kernel-language functions that users call as ``sycl.<name>`` inside kernels.

These Python objects are only markers: the frontend recognises them by identity through
the builtin catalogue (``frontend.builtins``) and lowers the call to IR. The public
facade re-exports them. Where a host meaning is obvious (``static_range``,
``private_array``) it is given, so ``@sycl.device`` helpers can also be called from
Python; the rest raise.

>>> list(static_range(3))
[0, 1, 2]
"""
from __future__ import annotations

import numpy as np

from ..errors import errc, exception
from ..functional import (bit_and, bit_or, bit_xor, logical_and, logical_or, maximum,  # noqa: F401
                          minimum, multiplies, plus)
from ..types import as_dtype, memory_order, memory_scope


def _kernel_only(name):
    raise exception(errc.invalid, f"sycl.{name} can only be used inside a kernel")


def static_range(*args):
    """``for i in sycl.static_range(n)``: a loop the compiler must unroll."""
    return range(*args)


def private_array(dtype, n):
    """A per-work-item array of ``n`` elements (on the host: a NumPy array)."""
    return np.zeros(n, as_dtype(dtype))


class atomic_ref:
    """``sycl.atomic_ref(acc_or_ptr, index, order=relaxed, scope=device)``, or as SYCL
    2020 writes it (4.15.3), ``sycl.atomic_ref[T, order, scope, space](acc[i])``; methods
    fetch_add/sub/min/max/and/or/xor, exchange, compare_exchange_strong/weak, load,
    store, each taking an optional memory order (two for compare_exchange: success,
    failure) and scope after its values, as in C++."""

    def __init__(self, ref, index=0, order=memory_order.relaxed, scope=memory_scope.device):
        _kernel_only("atomic_ref")

    def __class_getitem__(cls, params):
        # atomic_ref[T, order, scope, space]: the kernel compiler reads the parameters.
        return cls


def atomic_fence(order, scope):
    """``sycl.atomic_fence(order, scope)`` (SYCL 2020 4.15.1): order this work-item's
    memory operations before and after it, for the work-items of ``scope``."""
    _kernel_only("atomic_fence")


def get_spec_constant(placeholder):
    """``sycl.get_spec_constant(p)``: the value of a ``sycl.spec_constant[T]`` placeholder
    (the same as ``p.get()``; on the host, the value the placeholder holds)."""
    get = getattr(placeholder, "get", None)
    if get is None:
        raise exception(errc.invalid, f"sycl.get_spec_constant takes a spec_constant "
                        f"placeholder, not {type(placeholder).__name__}")
    return get()


def group_barrier(group, fence_scope=None):
    """Wait until every work-item of ``group`` reached this barrier."""
    _kernel_only("group_barrier")


def reduce_over_group(group, x, op):
    """Combine ``x`` over the group with ``op`` (``sycl.plus()``, ``minimum()``, ``maximum()``)."""
    _kernel_only("reduce_over_group")
