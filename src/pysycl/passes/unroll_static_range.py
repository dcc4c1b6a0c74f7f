"""Fully unroll ``for`` ops marked ``unroll = true`` (the frontend's ``sycl.static_range``).

The bounds must be known at compile time: ``const`` ops, or integer arithmetic on them
(an inner ``static_range(i)`` becomes constant once the outer loop over ``i`` is
unrolled, so loops are unrolled outermost first). The body is cloned once per iteration
with fresh values; reads of the loop variable become constants of its type, and after the
copies the variable is stored its last value (Python leaves it set after a loop). If the
body assigns the loop variable itself, each copy instead starts by storing the iteration's
value. ``break``/``continue`` of an unrolled loop have no loop left to leave and are
rejected, as are bounds not known at compile time: both ``exception(errc.build)`` at the
loop's location.

>>> from pysycl.ir.core import Module
>>> unroll_static_range(Module("m")).functions
[]
"""
from __future__ import annotations

import operator

from pysycl.errors import errc, exception
from pysycl.ir.clone import clone_region
from pysycl.ir.core import Module, Op, Region, Value
from pysycl.ir.verifier import describe_loc

MAX_TRIPS = 4096  # beyond this an unrolled body only bloats code and compile time
_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
         "floordiv": operator.floordiv, "mod": operator.mod, "shl": operator.lshift,
         "min": min, "max": max}


def unroll_static_range(m: Module, options=None) -> Module:
    """Unroll every ``for {unroll = true}`` of ``m`` in place; return ``m``."""
    for f in m.functions:
        if f.body is not None:
            _region(f.body)
    return m


def _region(r: Region) -> None:
    out: list[Op] = []
    for op in r.ops:
        if op.name == "for" and op.attrs.get("unroll"):
            copies = Region(unroll_loop(op))
            _region(copies)  # inner static_range loops, now with constant bounds
            out.extend(copies.ops)
        else:
            for reg in op.regions:
                _region(reg)
            out.append(op)
    r.ops = out


def const_int(v: Value) -> int | None:
    """The integer ``v`` always has, when it is a constant expression; else None."""
    op = v.owner
    if op is None:
        return None
    if op.name == "const":
        val = op.attrs.get("value")
        return val if isinstance(val, int) and not isinstance(val, bool) else None
    args = [const_int(x) for x in op.operands]
    if None in args:
        return None
    if op.name in _FOLD and len(args) == 2:
        try:
            return _wrap(_FOLD[op.name](*args), v)
        except (ZeroDivisionError, ValueError):
            return None
    if op.name == "neg":
        return _wrap(-args[0], v)
    if op.name == "cast" and len(args) == 1:
        return _wrap(args[0], v)
    return None


def _wrap(x: int, v: Value) -> int | None:
    t = v.type
    if not getattr(t, "is_int", False):
        return None
    bits = t.bits
    x &= (1 << bits) - 1
    return x - (1 << bits) if t.is_signed and x >> (bits - 1) else x


def unroll_loop(op: Op) -> list[Op]:
    """The ops that replace one ``for {unroll = true}``."""
    where = describe_loc(op.loc)
    bounds = [const_int(v) for v in op.operands]
    for which, b in zip(("start", "stop", "step"), bounds):
        if b is None:
            raise exception(errc.build, f"{where}: sycl.static_range needs bounds known at "
                            f"compile time, but the {which} of this loop is not a constant")
    lo, hi, step = bounds
    if step == 0:
        raise exception(errc.build, f"{where}: sycl.static_range with a step of 0")
    trips = range(lo, hi, step)
    if len(trips) > MAX_TRIPS:
        raise exception(errc.build, f"{where}: sycl.static_range of {len(trips)} iterations "
                        f"(more than {MAX_TRIPS}); use range() for a loop this long")
    body, name, t = op.regions[0], op.attrs["var"], op.operands[0].type
    _reject_exits(body, where)
    assigned = _assigns(body, name)
    out: list[Op] = []
    for i in trips:
        copy = clone_region(body, {})
        if assigned:
            c = Op("const", type=t, attrs={"value": i}, loc=op.loc)
            out += [c, Op("var.store", [c.result], attrs={"name": name}, loc=op.loc)]
        else:
            _constant_reads(copy, name, i)
        out += copy.ops
    if trips and not assigned:
        c = Op("const", type=t, attrs={"value": trips[-1]}, loc=op.loc)
        out += [c, Op("var.store", [c.result], attrs={"name": name}, loc=op.loc)]
    return out


def _reject_exits(r: Region, where: str) -> None:
    for op in r.ops:
        if op.name in ("break", "continue"):
            raise exception(errc.build, f"{describe_loc(op.loc)}: {op.name} inside the "
                            f"sycl.static_range loop at {where} is not supported (the loop is "
                            "unrolled away)")
        if op.name not in ("for", "while"):  # their break/continue are their own
            for reg in op.regions:
                _reject_exits(reg, where)


def _assigns(r: Region, name: str) -> bool:
    return any((op.name in ("var.store", "var.addr") and op.attrs.get("name") == name)
               or (op.name == "for" and op.attrs.get("var") == name) for op in r.walk())


def _constant_reads(r: Region, name: str, value: int) -> None:
    # Turning the cloned var.load into a const keeps its result Value, so users need no
    # rewiring.
    for op in r.walk():
        if op.name == "var.load" and op.attrs.get("name") == name:
            op.name, op.attrs = "const", {"value": value}
