"""Which values and var slots of a kernel may differ between the work-items of a group.

Used by work-group fission to check that barriers sit in work-group-uniform control flow
(barriers on the native CPU device). The analysis is deliberately
simple, flow-insensitive and conservative:

- non-uniform sources: work-item ids (``wi.global_id``, ``wi.local_id``, the linear ids,
  ``sg.local_id``/``sg.group_id``), memory reads (``load``, atomics: another item may have
  written anything), ``call`` results, ``var.addr`` (per-item storage);
- uniform sources: constants, kernel arguments, ranges, group ids, ``acc.range``,
  ``spec.get``, ``group.reduce`` results;
- any other result is non-uniform when one of its operands is;
- a var slot is non-uniform when any store to it (or a ``for`` over it) stores a
  non-uniform value or runs under divergent control flow (an ``if`` on a non-uniform
  condition, a loop with non-uniform bounds/condition, or a loop that a divergent
  ``break``/``continue`` can leave early), or when its address is taken.

Loads from local memory written uniformly are therefore treated as non-uniform; a kernel
that branches on one around a barrier is rejected even if it is in fact uniform.

>>> from pysycl.ir.core import Function, Region
>>> Uniformity(Function("k", "kernel", [], body=Region())).non_uniform_vars
set()
"""
from __future__ import annotations

from pysycl.ir.core import Function, Op, Region, Value

NON_UNIFORM_SOURCES = frozenset({
    "wi.global_id", "wi.local_id", "wi.global_linear_id", "wi.local_linear_id",
    "sg.local_id", "sg.group_id", "load", "atomic.rmw", "atomic.cmpxchg", "atomic.load",
    "call", "var.addr"})
UNIFORM_RESULTS = frozenset({"group.reduce", "group.broadcast"})


class Uniformity:
    """Runs the analysis on ``fn`` once; then answer queries."""

    def __init__(self, fn: Function):
        self.non_uniform_values: set[Value] = set()
        self.non_uniform_vars: set[str] = set()
        self.divergent_loops: set[int] = set()  # id() of loops a divergent exit can leave
        if fn.body is None:
            return
        while True:  # monotone: each round can only add facts
            before = (len(self.non_uniform_values), len(self.non_uniform_vars),
                      len(self.divergent_loops))
            self._region(fn.body, False, [])
            if before == (len(self.non_uniform_values), len(self.non_uniform_vars),
                          len(self.divergent_loops)):
                return

    def is_uniform(self, v: Value) -> bool:
        return v not in self.non_uniform_values

    def loop_is_uniform(self, op: Op) -> bool:
        """A for/while whose trip count is the same for every work-item."""
        if id(op) in self.divergent_loops:
            return False
        if op.name == "for":
            return all(self.is_uniform(v) for v in op.operands)
        cond = op.regions[0].ops[-1] if op.regions[0].ops else None
        return cond is not None and cond.name == "yield" and self.is_uniform(cond.operands[0])

    # ``loops`` holds (loop op, divergent flag at the loop's body) for break/continue.
    def _region(self, r: Region, divergent: bool, loops: list) -> None:
        for op in r.ops:
            self._op(op, divergent, loops)

    def _op(self, op: Op, divergent: bool, loops: list) -> None:
        self._value(op)
        if op.name == "var.store" and (divergent or not self.is_uniform(op.operands[0])):
            self.non_uniform_vars.add(op.attrs["name"])
        elif op.name == "var.addr":
            self.non_uniform_vars.add(op.attrs["name"])
        elif op.name in ("break", "continue") and loops and divergent and not loops[-1][1]:
            self.divergent_loops.add(id(loops[-1][0]))
        elif op.name == "if":
            inner = divergent or not self.is_uniform(op.operands[0])
            for reg in op.regions:
                self._region(reg, inner, loops)
        elif op.name in ("for", "while"):
            self._loop(op, divergent, loops)
        elif op.regions:  # wg.items: each item runs it, as it would the kernel body
            for reg in op.regions:
                self._region(reg, divergent, loops + [(op, True)])

    def _loop(self, op: Op, divergent: bool, loops: list) -> None:
        if op.name == "while":
            self._region(op.regions[0], divergent, loops)
        inner = divergent or not self.loop_is_uniform(op)
        if op.name == "for" and inner:
            self.non_uniform_vars.add(op.attrs["var"])
        self._region(op.regions[-1], inner, loops + [(op, inner)])
        if op.name == "while" and inner:
            self._region(op.regions[0], inner, loops)

    def _value(self, op: Op) -> None:
        if op.result is None or op.result in self.non_uniform_values:
            return
        if op.name in UNIFORM_RESULTS:
            return
        if (op.name in NON_UNIFORM_SOURCES
                or (op.name == "var.load" and op.attrs["name"] in self.non_uniform_vars)
                or any(v in self.non_uniform_values for v in op.operands)):
            self.non_uniform_values.add(op.result)
