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
    failure) and scope after its values, as in C++; ``a += x`` (``-=``, and ``&=``,
    ``|=``, ``^=`` for integers) is the atomic fetch_op; ``is_lock_free()``."""

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


def reduce_over_group(group, x, init_or_op, op=None):
    """Combine ``x`` over the group with ``op`` (a function object such as ``sycl.plus()``),
    and with ``init`` when given (``reduce_over_group(g, x, init, op)``)."""
    _kernel_only("reduce_over_group")


# Group algorithms (SYCL 2020 4.17.4): markers lowered by frontend/group_algorithms.py ----
def group_broadcast(group, x, local_id=0):
    """``x`` of the work-item at ``local_id`` of ``group``, in every work-item."""
    _kernel_only("group_broadcast")


def any_of_group(group, x, pred=None):
    """Whether ``x`` (or ``pred(x)``) holds for any work-item of ``group``."""
    _kernel_only("any_of_group")


def all_of_group(group, x, pred=None):
    """Whether ``x`` (or ``pred(x)``) holds for every work-item of ``group``."""
    _kernel_only("all_of_group")


def none_of_group(group, x, pred=None):
    """Whether ``x`` (or ``pred(x)``) holds for no work-item of ``group``."""
    _kernel_only("none_of_group")


def inclusive_scan_over_group(group, x, op, init=None):
    """``op`` over the work-items of ``group`` up to and including this one."""
    _kernel_only("inclusive_scan_over_group")


def exclusive_scan_over_group(group, x, init_or_op, op=None):
    """``op`` over the work-items of ``group`` before this one (the first: init, or the
    identity)."""
    _kernel_only("exclusive_scan_over_group")


def joint_reduce(group, first, last, init_or_op, op=None):
    """``op`` over the elements ``[first, last)``, the group's work-items together."""
    _kernel_only("joint_reduce")


def joint_any_of(group, first, last, pred):
    """Whether ``pred`` holds for any element of ``[first, last)``."""
    _kernel_only("joint_any_of")


def joint_all_of(group, first, last, pred):
    """Whether ``pred`` holds for every element of ``[first, last)``."""
    _kernel_only("joint_all_of")


def joint_none_of(group, first, last, pred):
    """Whether ``pred`` holds for no element of ``[first, last)``."""
    _kernel_only("joint_none_of")


def joint_inclusive_scan(group, first, last, result, op, init=None):
    """The inclusive scan of ``[first, last)`` written from ``result``; returns the end
    of the output."""
    _kernel_only("joint_inclusive_scan")


def joint_exclusive_scan(group, first, last, result, init_or_op, op=None):
    """The exclusive scan of ``[first, last)`` written from ``result``; returns the end
    of the output."""
    _kernel_only("joint_exclusive_scan")


def shift_group_left(group, x, delta=1):
    """``x`` of the sub-group's work-item ``delta`` places higher."""
    _kernel_only("shift_group_left")


def shift_group_right(group, x, delta=1):
    """``x`` of the sub-group's work-item ``delta`` places lower."""
    _kernel_only("shift_group_right")


def permute_group_by_xor(group, x, mask):
    """``x`` of the sub-group's work-item whose local id is this one's xor ``mask``."""
    _kernel_only("permute_group_by_xor")


def select_from_group(group, x, remote_local_id):
    """``x`` of the sub-group's work-item ``remote_local_id``."""
    _kernel_only("select_from_group")
