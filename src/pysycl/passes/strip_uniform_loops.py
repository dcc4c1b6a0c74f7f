"""Vectorise across work-items through a kernel loop: implicit barriers around uniform loops.

LLVM's loop vectoriser only vectorises innermost loops. The native CPU runs a kernel
without barriers as ``for item: body``, so a kernel whose body holds a loop of its own
(FIR: ``for k in range(ntaps): acc += taps[k] * x[i + k]`` with ``ntaps`` a kernel
argument or an emulated spec constant) leaves the work-item loop outer and scalar, and
the inner loop is a serial float reduction that LLVM may not vectorise either.

When the loop's trip count is the same for every work-item (its bounds come from
constants, kernel arguments, spec constants, ranges: ``Uniformity``), the work-items may
run it in lock step: this pass puts a work-group barrier at the start of its body (and of
uniform loops nested directly in it) and marks the kernel ``wi_strip``. Work-group fission
then splits the kernel as for a real barrier::

    wg.items { i = gid; acc = 0 }                  # acc: one slot per work-item
    for k in range(ntaps):                         # once per strip of work-items
        wg.items { acc += taps[k] * x[i + k] }     # innermost: vectorised across items
    wg.items { y[i] = acc }

and the native backend runs it on strips of ``STRIP`` work-items along the last
dimension (``backends/native_cpu/lowering``: per-item slots are ``STRIP`` elements, so
they stay in L1 and the kernel still inlines into the work-item loop). No work-item can
observe the reordering: without barriers, SYCL work-items of a kernel may run in any
interleaving (3.8.1), and the loop is entered and left by all items of a strip alike.
Pocl's "implicit loop barriers" do the same; Intel's OpenCL CPU compiler vectorises the
whole kernel body across work-items instead.

This is our own transformation rather than LLVM's VPlan-native outer-loop vectoriser
(``-enable-vplan-native-path`` with ``llvm.loop.vectorize.enable`` on the work-item
loop): in LLVM 22 that path is correct on FIR but widens every memory access to a
gather/scatter (also the unit-stride ``x[i + k]`` and ``y[i]``), and ran no faster than
scalar code.

Only loops that profit and are safe are taken: a top-level ``for`` with uniform bounds
that is not a small constant loop (those fully unroll: ``ir.loops.full_unroll_wanted``),
whose body (nested loops included, which must be uniform ``for`` loops too) does not
write memory, call functions, ``break``, ``continue`` or ``return``; and only in kernels
without barriers or group operations, with one known number of dimensions.

>>> from pysycl.ir.core import Module
>>> strip_uniform_loops(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.loops import full_unroll_wanted
from pysycl.ir.core import Function, Module, Op
from pysycl.ir.types import ArrayType, IndexSpaceType

from .uniformity import Uniformity

#: Work-items per strip: per-item slots hold this many values (1 KiB per float var, in
#: L1). FIR with runtime taps (4M outputs, 2 threads of a Xeon host) ran 1.9/3.6/7.3 ms
#: (7/16/33 taps) with 256; 64 was slower with 16 taps (5.3 ms), 1024 with all
#: (2.4/4.9/9.5 ms).
STRIP = 256
_BODY_REJECT = frozenset({"store", "atomic.rmw", "atomic.cmpxchg", "atomic.store",
                          "atomic.fence", "call",
                          "break", "continue", "return", "barrier", "while", "wg.items",
                          "var.addr", "group.reduce", "group.broadcast", "printf"})


def strip_uniform_loops(m: Module, options=None) -> Module:
    for f in m.kernels:
        if f.body is not None:
            strip_kernel(f)
    return m


def strip_kernel(f: Function) -> bool:
    """Insert the implicit barriers into ``f`` (in place); True when it changed."""
    if f.attrs.get("reducers"):
        return False   # a reducer's work-group result is written once per group, not strip
    if not _one_dims(f) or any(op.name in _KERNEL_REJECT or op.name.startswith(("group.", "sg."))
                               for op in f.walk()):
        return False
    if any(op.name == "var" and isinstance(op.attrs.get("type"), ArrayType) for op in f.walk()):
        return False   # private arrays: kept per item by fission, but not worth STRIP copies
    ops = f.body.ops
    if any(op.name == "return" for op in ops[:-1]) or \
            any(op.name == "return" for top in ops for op in top.walk() if op is not top):
        return False
    uni = Uniformity(f)
    loops = [op for op in ops if op.name == "for" and _eligible(op, uni)]
    for loop in loops:
        _mark(loop)
    if loops:
        f.attrs["wi_strip"] = STRIP
    return bool(loops)


_KERNEL_REJECT = frozenset({"barrier", "wg.items"})


def _one_dims(f: Function) -> bool:
    """The kernel's number of dimensions is known (native lowering's ``kernel_dims``)."""
    if isinstance(f.attrs.get("dims"), int):
        return True
    return any(isinstance(p.type, IndexSpaceType) and p.type.dims for p in f.params)


def _eligible(loop: Op, uni: Uniformity) -> bool:
    if not uni.loop_is_uniform(loop):
        return False
    if full_unroll_wanted(loop):
        return False   # codegen unrolls it; the work-item loop around it vectorises
    for op in loop.regions[0].walk():
        if op.name in _BODY_REJECT or op.name.startswith(("group.", "sg.")):
            return False
        if op.name == "for" and not uni.loop_is_uniform(op):
            return False
    return True


def _mark(loop: Op) -> None:
    """A barrier at the start of ``loop``'s body and of the uniform loops nested in it
    that are not small constant loops (those stay item-level and unroll)."""
    body = loop.regions[0]
    for op in body.ops:
        if op.name == "for" and not full_unroll_wanted(op):
            _mark(op)
    body.ops.insert(0, Op("barrier", attrs={"scope": "work_group"}, loc=loop.loc))


__all__ = ["STRIP", "strip_kernel", "strip_uniform_loops"]
