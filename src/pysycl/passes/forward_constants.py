"""Forward constant locals: ``n = 16`` (a literal, or a specialization constant lowered
``"literal"``) assigned once at the top of a function, then read, becomes the constant
itself at every read.

Codegen keeps Python locals in stack slots (``var``/``var.store``/``var.load``); LLVM's
mem2reg turns them into SSA values, but only after our own codegen has decided what a
loop is. ``for k in range(n)`` with such an ``n`` then has a constant trip count when it is
lowered, so ``codegen/rules_control`` can ask for full unrolling
(``llvm.loop.unroll.full``; LLVM's unroller is otherwise off on the native CPU) and the
work-item loop around it becomes the innermost loop the vectoriser needs (FIR with a
literal spec constant: 16 taps unrolled, items 16 wide).

A var qualifies when it has exactly one ``var.store``, at the function's top level, of a
``const``; no ``for`` over it, no ``var.addr``; and no ``var.load`` before that store.

>>> from pysycl.ir.core import Module
>>> forward_constant_vars(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.core import Function, Module, Op, Value


def forward_constant_vars(m: Module, options=None) -> Module:
    for f in m.functions:
        if f.body is not None:
            forward_in_function(f)
    return m


def forward_in_function(f: Function) -> int:
    """Rewrite ``f`` in place; returns how many ``var.load`` ops were replaced."""
    stores: dict[str, list[Op]] = {}
    blocked: set[str] = set()
    for op in f.walk():
        if op.name == "var.store":
            stores.setdefault(op.attrs["name"], []).append(op)
        elif op.name == "var.addr":
            blocked.add(op.attrs["name"])
        elif op.name == "for":
            blocked.add(op.attrs.get("var"))
    top = {id(op): i for i, op in enumerate(f.body.ops)}
    consts: dict[str, tuple[int, Value]] = {}
    for name, ops in stores.items():
        if name in blocked or len(ops) != 1 or id(ops[0]) not in top:
            continue
        value = ops[0].operands[0]
        if value.owner is not None and value.owner.name == "const":
            consts[name] = (top[id(ops[0])], value)
    if not consts:
        return 0
    # Loads before the store (in a top-level op that comes first) read the slot
    # uninitialised or from an earlier call: leave those vars alone.
    for i, top_op in enumerate(f.body.ops):
        for op in top_op.walk():
            if op.name == "var.load" and op.attrs["name"] in consts and \
                    i < consts[op.attrs["name"]][0]:
                del consts[op.attrs["name"]]
    replace: dict[Value, Value] = {}
    for op in f.walk():
        if op.name == "var.load" and op.attrs["name"] in consts and op.result is not None:
            value = consts[op.attrs["name"]][1]
            if value.type == op.result.type:
                replace[op.result] = value
    if replace:
        for op in f.walk():
            op.operands = [replace.get(v, v) for v in op.operands]
    return len(replace)


__all__ = ["forward_constant_vars", "forward_in_function"]
