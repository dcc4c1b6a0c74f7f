"""The rule table and the typed context every lowering rule receives.

A rule lowers one IR op: ``rule(ctx, op) -> llvm value | None``. Rules are registered in
``RULES`` by op name with :func:`rule`; a target's :class:`~.target_lowering.TargetLowering`
may override any of them (its ``rules`` dict is consulted first), which is how backends
swap work-item builtins, barriers, math and atomics without touching the shared rules
(as JAX's ``register_lowering``).

>>> @rule("const")
... def lower_const(ctx, op): ...
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir as ll

from .._records import Record
from ..errors import errc, exception
from ..ir.core import Function, Module, Op, Value
from ..ir.types import Type
from . import types as lt

Rule = Callable[["LoweringContext", Op], Any]
RULES: dict[str, Rule] = {}


def rule(*names: str):
    """Register the decorated function as the lowering of the IR ops ``names``."""
    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn
    return register


class AccessorValue(Record):
    """An accessor parameter after ABI expansion: element pointer, per-dimension memory
    range (i64), base element offset (i64: where its buffer starts in the memory, zero
    for local accessors), and for buffer accessors the access range and offset (one i64
    per dimension; None for local accessors, whose range is their memory)."""

    _fields = ("ptr", "ranges", "offset", "elem", "access", "offsets")
    ptr: ll.Value
    ranges: list
    offset: ll.Value
    elem: Type
    access: list | None
    offsets: list | None

    def __init__(self, ptr, ranges, offset, elem, access=None, offsets=None):
        self.ptr = ptr
        self.ranges = ranges
        self.offset = offset
        self.elem = elem
        self.access = access
        self.offsets = offsets


class VarSlot(Record):
    """A named local: ``ptr`` to its storage; per-item slots hold one element for each
    work-item of the group, indexed by the local linear id (work-group fission)."""

    _fields = ("ptr", "type", "per_item")
    ptr: ll.Value
    type: Type
    per_item: bool = False

    def __init__(self, ptr, type, per_item=False):
        self.ptr = ptr
        self.type = type
        self.per_item = per_item


class LoopTarget(Record):
    _fields = ("continue_block", "break_block")
    continue_block: ll.Block
    break_block: ll.Block

    def __init__(self, continue_block, break_block):
        self.continue_block = continue_block
        self.break_block = break_block


class LoweringContext:
    """State of lowering one function. Rules read operands through :meth:`get` and
    build with :attr:`builder`; allocas go through :meth:`alloca` into the entry block so
    mem2reg/SROA see them."""

    def __init__(self, lowering, module: Module, llmodule: ll.Module, fn: Function,
                 llfn: ll.Function, functions: dict[str, ll.Function]):
        self.lowering = lowering          # the TargetLowering (hooks)
        self.target = lowering.target
        self.module = module
        self.llmodule = llmodule
        self.function = fn
        self.llfn = llfn
        self.functions = functions        # IR function name -> LLVM function
        self.values: dict[Value, Any] = {}
        self.vars: dict[str, VarSlot] = {}
        self.loops: list[LoopTarget] = []
        self.yield_targets: list[tuple[ll.Block, ll.Block]] = []
        self.spec_buffer: ll.Value | None = None
        # global_ptr kernel parameter -> its hidden byte count (checked builds).
        self.extents: dict[Value, ll.Value] = {}
        # Pointer locals -> the name of the parameter they point into (checked builds).
        self.var_roots: dict[str, str] = {}
        self.wi: Any = None               # target work-item state (see TargetLowering)
        self._use_counts: dict[Value, int] | None = None
        entry = llfn.append_basic_block("entry")
        self.alloca_builder = ll.IRBuilder(entry)
        body = llfn.append_basic_block("body")
        self.builder = ll.IRBuilder(body)
        self._entry = entry

    # Values --------------------------------------------------------------------
    def get(self, v: Value):
        try:
            return self.values[v]
        except KeyError:
            raise self.error(None, f"value {v!r} used before it is defined") from None

    def operands(self, op: Op) -> list:
        return [self.get(v) for v in op.operands]

    def use_count(self, v: Value) -> int:
        """How many operands of this function's ops are ``v`` (counted once, on the
        first question)."""
        if self._use_counts is None:
            counts: dict[Value, int] = {}
            for op in self.function.walk():
                for o in op.operands:
                    counts[o] = counts.get(o, 0) + 1
            self._use_counts = counts
        return self._use_counts.get(v, 0)

    def vtype(self, t: Type) -> ll.Type:
        return lt.value_type(t, self.lowering.addrspaces)

    def mtype(self, t: Type) -> ll.Type:
        return lt.memory_type(t, self.lowering.addrspaces)

    # Memory --------------------------------------------------------------------
    def alloca(self, lltype: ll.Type, count: ll.Value | None = None, name: str = "") -> ll.Value:
        """An alloca in the entry block (a dynamic count must be available there)."""
        return self.alloca_builder.alloca(lltype, size=count, name=name)

    def entry_builder(self) -> ll.IRBuilder:
        """Builder for code that must run before the body (e.g. per-item slot sizes)."""
        return self.alloca_builder

    def finish_entry(self):
        self.alloca_builder.branch(self.llfn.blocks[1])

    def to_value(self, v: ll.Value, t: Type) -> ll.Value:
        """Memory form -> register form (``i8`` bool -> ``i1``)."""
        if getattr(t, "is_bool", False):
            return self.builder.icmp_unsigned("!=", v, ll.Constant(v.type, 0))
        return v

    def to_memory(self, v: ll.Value, t: Type) -> ll.Value:
        if getattr(t, "is_bool", False) and v.type == lt.I1:
            return self.builder.zext(v, lt.I8)
        return v

    def load(self, ptr: ll.Value, t: Type, align: int | None = None) -> ll.Value:
        a = align if align is not None else _align(t)
        return self.to_value(self.builder.load(ptr, typ=self.mtype(t), align=a), t)

    def store(self, value: ll.Value, ptr: ll.Value, t: Type, align: int | None = None):
        a = align if align is not None else _align(t)
        inst = self.builder.store(self.to_memory(value, t), ptr)
        if a:
            inst.align = a
        return inst

    # Blocks --------------------------------------------------------------------
    def block(self, name: str) -> ll.Block:
        return self.llfn.append_basic_block(name)

    def terminated(self) -> bool:
        return self.builder.block.is_terminated

    def branch_if_open(self, target: ll.Block):
        if not self.terminated():
            self.builder.branch(target)

    def lower_region(self, region) -> None:
        """Lower each op of ``region``; code after a terminator goes to a dead block so
        structured regions may hold ops after ``break``/``return``."""
        for op in region.ops:
            if self.terminated():
                self.builder.position_at_end(self.block("dead"))
            self.lower_op(op)

    def lower_op(self, op: Op):
        r = self.lowering.rule_for(op.name)
        if r is None:
            raise self.error(op, f"no lowering rule for op {op.name!r} on target "
                                 f"{self.lowering.name}")
        result = r(self, op)
        if op.result is not None:
            if result is None:
                raise self.error(op, f"rule for {op.name!r} produced no value")
            self.values[op.result] = result

    # Errors --------------------------------------------------------------------
    def error(self, op: Op | None, message: str) -> exception:
        where = f"{op.loc}: " if op is not None and op.loc.line else ""
        return exception(errc.build, f"{where}in function {self.function.name!r}: {message}")


def _align(t: Type) -> int | None:
    try:
        return t.align
    except TypeError:
        return None
