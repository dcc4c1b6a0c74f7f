"""Group algorithms (SYCL 2020 4.17.4) in the builtin catalogue: broadcast, vote, reduce
and scan over a group's work-items, the ``joint_*`` forms over a range of memory, and
the sub-group shuffles.

Each lowers to the IR's group ops (``group.reduce``, ``group.scan``, ``group.broadcast``,
``group.shuffle``), which every target lowers its own way: SPIR-V group operations and
warp shuffles on devices, sequential passes over the work-group on the native CPU
(passes/lower_group_reduce.py). What SYCL derives from them is composed here: an initial
value is combined with the result, ``none_of`` is ``not any_of``, a vote with a
predicate calls the ``@sycl.device`` predicate first, and a ``joint_*`` algorithm walks
its range in steps of the group's size, every work-item taking one element per step.
Complex numbers go through all of them, with ``plus`` and ``multiplies`` as operators
(SYCL's complex extension); the devices take them apart in
passes/lower_complex_group_ops.py.

>>> lookup(kernel_api.joint_reduce).name
'sycl.joint_reduce'
"""
from __future__ import annotations

import ast

import numpy as np

from .. import functional
from ..ir import types as T
from ..ir.builder import Builder
from ..ir.core import Value
from . import kernel_api
from .builtins import _group, add_builtin, lookup, operator_name
from .diagnostics import loc_of
from .values import GroupHandle, Lit, Obj, TupleVal


def _positional(lw, node, counts: tuple, name: str) -> list:
    if node.keywords:
        lw.error(node, f"{name}() takes positional arguments only")
    if len(node.args) not in counts:
        lw.error(node, f"{name}() takes {' or '.join(map(str, counts))} arguments, got "
                 f"{len(node.args)}")
    return [lw.expr(a) for a in node.args]


def _builder(lw, node) -> Builder:
    return Builder(lw.regions[-1], loc_of(lw.src, node))


#: The value types group algorithms move and combine: numbers (a complex number goes
#: through a device's group primitives as its parts: passes/lower_complex_group_ops.py).
_GROUP_VALUE_TYPES = (T.ScalarType, T.ComplexType)


def _scalar(lw, fv, node, what: str) -> Value:
    v = lw.materialize(lw.operand(fv, node), node)
    if not isinstance(v.type, _GROUP_VALUE_TYPES):
        lw.error(node, f"{what} works on scalars and complex numbers here, not {v.type}")
    return v


def _is_operator(fv) -> bool:
    return isinstance(fv, Obj) and functional.as_operator(fv.value) is not None


def _local(lw, g: GroupHandle, node) -> tuple[Value, Value]:
    """This work-item's linear id in ``g`` and the number of work-items in ``g`` (i64)."""
    b = _builder(lw, node)
    if g.scope == "sub_group":
        return b.op("sg.local_id", type=T.I64), b.op("sg.local_range", type=T.I64)
    size = b.op("wi.local_range", type=T.I64, dim=0)
    for d in range(1, g.dims):
        size = b.op("mul", size, b.op("wi.local_range", type=T.I64, dim=d), type=T.I64)
    return b.op("wi.local_linear_id", type=T.I64), size


def _with_init(lw, node, op: str, init_fv, value: Value, init_first: bool = True) -> Value:
    """``op(init, value)`` in the type SYCL gives the result: the initial value's (a
    Python number takes ``value``'s)."""
    ty = value.type if isinstance(init_fv, Lit) else lw.materialize(init_fv, node).type
    init = lw.coerce(init_fv, ty, node)
    value = lw.coerce(value, ty, node)
    b = _builder(lw, node)
    return b.combine(op, init, value) if init_first else b.combine(op, value, init)


def _identity(b: Builder, op: str, ty: T.ScalarType | T.ComplexType) -> Value:
    v = functional.known_identity(op, ty.dtype)
    return b.const(bool(v) if ty == T.BOOL else v.item(), ty)


# Broadcast and votes ---------------------------------------------------------------------
@add_builtin("sycl.group_broadcast", [kernel_api.group_broadcast])
def _broadcast(lw, node):
    """group_broadcast(g, x[, local_id]): x of the work-item at local_id (default 0):
    IR op group.broadcast {scope}."""
    args = _positional(lw, node, (2, 3), "group_broadcast")
    g = _group(lw, args[0], node)
    x = _scalar(lw, args[1], node, "group_broadcast")
    if len(args) == 3:
        lid = _linear_id(lw, g, args[2], node.args[2])
    else:
        lid = lw.const(0, T.I64, node)
    return lw.value("group.broadcast", [x, lid], x.type, {"scope": g.scope}, node)


def _linear_id(lw, g: GroupHandle, fv, node) -> Value:
    """A local id (an int, or for a work-group of several dimensions an id tuple) as
    the linear id (SYCL linearisation: the last dimension varies fastest)."""
    items = list(fv.items) if isinstance(fv, TupleVal) else lw.index_items(fv, node)
    if len(items) == 1:
        return lw.index_value(items[0], node)
    if g.scope != "work_group" or len(items) != g.dims:
        lw.error(node, f"a local id of {len(items)} dimensions for a group of {g.dims}")
    b = _builder(lw, node)
    lin = lw.index_value(items[0], node)
    for d in range(1, g.dims):
        r = b.op("wi.local_range", type=T.I64, dim=d)
        lin = b.op("add", b.op("mul", lin, r, type=T.I64), lw.index_value(items[d], node),
                   type=T.I64)
    return lin


def _vote(name: str, op: str, negate: bool):
    def lower(lw, node):
        args = _positional(lw, node, (2, 3), name)
        g = _group(lw, args[0], node)
        if len(args) == 3:
            pred = _call_predicate(lw, args[2], args[1], node)
        else:
            pred = lw.truth(args[1], node.args[1])
        r = lw.value("group.reduce", [pred], T.BOOL, {"op": op, "scope": g.scope}, node)
        return lw.value("not", [r], T.BOOL, node=node) if negate else r
    lower.__doc__ = (f"{name}(g, pred) or {name}(g, x, pred_fn): group.reduce {{op={op}}} of "
                     f"the predicates{', negated' if negate else ''}")
    return lower


def _call_predicate(lw, fn_fv, x, node) -> Value:
    """``pred(x)`` of a ``@sycl.device`` predicate, as a bool."""
    fobj = fn_fv.value if isinstance(fn_fv, Obj) else None
    if getattr(fobj, "_pysycl_function_kind", None) not in ("device", "external"):
        lw.error(node, "the predicate must be a @sycl.device function of one argument")
    bound = lw.session.bind_call(fobj, [x], {}, lw, node)
    func = lw.session.callee(fobj, bound, lw, node)
    operands = [lw.coerce(fv, p.type, node, "argument") for fv, p in zip(bound, func.params)]
    r = lw.emit("call", operands, func.return_type, {"callee": func.name}, node).result
    if r is None:
        lw.error(node, f"predicate {fobj.__name__} returns nothing")
    return lw.truth(r, node)


for _name, _op, _neg in (("any_of_group", "logical_or", False),
                         ("all_of_group", "logical_and", False),
                         ("none_of_group", "logical_or", True)):
    add_builtin(f"sycl.{_name}", [getattr(kernel_api, _name)])(_vote(_name, _op, _neg))


# Reduce and scan ---------------------------------------------------------------------------
@add_builtin("sycl.reduce_over_group", [kernel_api.reduce_over_group])
def _reduce(lw, node):
    """reduce_over_group(g, x, op) or (g, x, init, op): IR op group.reduce {op, scope},
    then op(init, r)."""
    args = _positional(lw, node, (3, 4), "reduce_over_group")
    g = _group(lw, args[0], node)
    init = args[2] if len(args) == 4 else None
    x = lw.materialize(lw.operand(args[1], node), node)
    if init is not None and not isinstance(init, Lit):
        x = lw.coerce(x, lw.materialize(init, node).type, node)
    name = operator_name(lw, args[-1], x.type, node.args[-1])
    r = lw.value("group.reduce", [x], x.type, {"op": name, "scope": g.scope}, node)
    return r if init is None else _with_init(lw, node, name, init, r)


@add_builtin("sycl.inclusive_scan_over_group", [kernel_api.inclusive_scan_over_group])
def _inclusive(lw, node):
    """inclusive_scan_over_group(g, x, op[, init]): IR op group.scan {inclusive=true},
    then op(init, r)."""
    args = _positional(lw, node, (3, 4), "inclusive_scan_over_group")
    return _scan(lw, node, args[0], args[1], args[2], args[3] if len(args) == 4 else None,
                 True, node.args[2])


@add_builtin("sycl.exclusive_scan_over_group", [kernel_api.exclusive_scan_over_group])
def _exclusive(lw, node):
    """exclusive_scan_over_group(g, x, op) or (g, x, init, op): IR op group.scan
    {inclusive=false} (the first work-item gets the identity, or init)."""
    args = _positional(lw, node, (3, 4), "exclusive_scan_over_group")
    return _scan(lw, node, args[0], args[1], args[-1], args[2] if len(args) == 4 else None,
                 False, node.args[-1])


def _scan(lw, node, g_fv, x_fv, op_fv, init, inclusive: bool, op_node):
    g = _group(lw, g_fv, node)
    x = _scalar(lw, x_fv, node, "a scan")
    if init is not None and not isinstance(init, Lit):
        x = lw.coerce(x, lw.materialize(init, node).type, node)
    name = operator_name(lw, op_fv, x.type, op_node)
    r = lw.value("group.scan", [x], x.type,
                 {"op": name, "scope": g.scope, "inclusive": inclusive}, node)
    return r if init is None else _with_init(lw, node, name, init, r)


# Shuffles (sub-groups: SYCL 2020 4.17.3.x defines them for sub_group only) ---------------
def _shuffle(name: str, mode: str, default: int | None):
    def lower(lw, node):
        counts = (2, 3) if default is not None else (3,)
        args = _positional(lw, node, counts, name)
        g = _group(lw, args[0], node)
        if g.scope != "sub_group":
            lw.error(node, f"{name} takes a sub-group (SYCL 2020 defines it for sub_group only)",
                     "nd.get_sub_group()")
        x = _scalar(lw, args[1], node, name)
        k = lw.index_value(args[2], node.args[2]) if len(args) == 3 else \
            lw.const(default, T.I64, node)
        return lw.value("group.shuffle", [x, k], x.type, {"mode": mode, "scope": g.scope},
                        node)
    lower.__doc__ = f"{name}(sg, x{', k' if default is None else '[, k]'}): IR op " \
                    f"group.shuffle {{mode={mode}}}"
    return lower


for _name, _mode, _default in (("shift_group_left", "down", 1), ("shift_group_right", "up", 1),
                               ("permute_group_by_xor", "xor", None),
                               ("select_from_group", "idx", None)):
    add_builtin(f"sycl.{_name}", [getattr(kernel_api, _name)])(_shuffle(_name, _mode, _default))


# Joint algorithms over [first, last) ------------------------------------------------------
def _range(lw, node, first_fv, last_fv) -> tuple[Value, Value]:
    """(first, number of elements) of a pointer range."""
    first = lw.materialize(first_fv, node)
    last = lw.materialize(last_fv, node)
    if not (isinstance(first.type, T.PointerType) and first.type == last.type):
        lw.error(node, "a joint algorithm takes a range of two pointers of one type "
                 "(first, last), e.g. p, p + n")
    if not isinstance(first.type.pointee, _GROUP_VALUE_TYPES):
        lw.error(node, "a joint algorithm works on scalars and complex numbers here, not "
                 f"{first.type.pointee}")
    return first, lw.value("ptr.diff", [last, first], T.I64, node=node)


@add_builtin("sycl.joint_reduce", [kernel_api.joint_reduce])
def _joint_reduce(lw, node):
    """joint_reduce(g, first, last, op) or (g, first, last, init, op): each work-item
    combines every size-th element, then group.reduce."""
    args = _positional(lw, node, (4, 5), "joint_reduce")
    g = _group(lw, args[0], node)
    first, n = _range(lw, node, args[1], args[2])
    t = first.type.pointee
    name = operator_name(lw, args[-1], t, node.args[-1])
    acc = _strided(lw, node, g, first, n, lambda b, acc, x: b.combine(name, acc, x),
                   _identity(_builder(lw, node), name, t), t)
    r = lw.value("group.reduce", [acc], t, {"op": name, "scope": g.scope}, node)
    return r if len(args) == 4 else _with_init(lw, node, name, args[3], r)


def _strided(lw, node, g, first, n, step, start: Value, t) -> Value:
    """``acc = start; for i in range(lid, n, size): acc = step(acc, first[i])``."""
    lid, size = _local(lw, g, node)
    acc, i = lw.temp_name("joint.acc"), lw.temp_name("joint.i")
    lw.declare_slot(acc, t, node)
    lw.declare_slot(i, T.I64, node)
    b = _builder(lw, node)
    b.store_var(acc, start)
    body = b.for_(i, lid, n, size)
    x = body.load(body.op("ptr.offset", first, body.load_var(i, T.I64), type=first.type))
    body.store_var(acc, step(body, body.load_var(acc, t), x))
    return b.load_var(acc, t)


def _joint_vote(name: str, op: str, negate: bool):
    def lower(lw, node):
        args = _positional(lw, node, (4,), name)
        g = _group(lw, args[0], node)
        first, n = _range(lw, node, args[1], args[2])
        fobj = args[3].value if isinstance(args[3], Obj) else None
        if getattr(fobj, "_pysycl_function_kind", None) not in ("device", "external"):
            lw.error(node.args[3], "the predicate must be a @sycl.device function of one "
                     "argument")
        start = lw.const(op == "logical_and", T.BOOL, node)

        def step(b, acc, x):
            with lw.region(b.region):
                p = _call_predicate(lw, args[3], x, node)
            return b.combine(op, acc, p)
        acc = _strided(lw, node, g, first, n, step, start, T.BOOL)
        r = lw.value("group.reduce", [acc], T.BOOL, {"op": op, "scope": g.scope}, node)
        return lw.value("not", [r], T.BOOL, node=node) if negate else r
    lower.__doc__ = (f"{name}(g, first, last, pred_fn): the predicate of every element, "
                     f"combined with {op} over the group{', negated' if negate else ''}")
    return lower


for _name, _op, _neg in (("joint_any_of", "logical_or", False),
                         ("joint_all_of", "logical_and", False),
                         ("joint_none_of", "logical_or", True)):
    add_builtin(f"sycl.{_name}", [getattr(kernel_api, _name)])(_joint_vote(_name, _op, _neg))


@add_builtin("sycl.joint_inclusive_scan", [kernel_api.joint_inclusive_scan])
def _joint_inclusive(lw, node):
    """joint_inclusive_scan(g, first, last, result, op[, init]): the range in steps of
    the group's size, group.scan per step plus the steps before; returns result + n."""
    args = _positional(lw, node, (5, 6), "joint_inclusive_scan")
    return _joint_scan(lw, node, args[:4], args[4], args[5] if len(args) == 6 else None,
                       True, node.args[4])


@add_builtin("sycl.joint_exclusive_scan", [kernel_api.joint_exclusive_scan])
def _joint_exclusive(lw, node):
    """joint_exclusive_scan(g, first, last, result, op) or (..., result, init, op)."""
    args = _positional(lw, node, (5, 6), "joint_exclusive_scan")
    return _joint_scan(lw, node, args[:4], args[-1], args[4] if len(args) == 6 else None,
                       False, node.args[-1])


def _joint_scan(lw, node, args, op_fv, init, inclusive: bool, op_node):
    g = _group(lw, args[0], node)
    first, n = _range(lw, node, args[1], args[2])
    out = lw.materialize(args[3], node)
    t = first.type.pointee
    if not (isinstance(out.type, T.PointerType) and
            isinstance(out.type.pointee, _GROUP_VALUE_TYPES)):
        lw.error(node.args[3], "the result of a joint scan is a pointer to numbers")
    name = operator_name(lw, op_fv, t, op_node)
    lid, size = _local(lw, g, node)
    b = _builder(lw, node)
    carry, step = lw.temp_name("joint.carry"), lw.temp_name("joint.step")
    lw.declare_slot(carry, t, node)
    lw.declare_slot(step, T.I64, node)
    b.store_var(carry, _identity(b, name, t) if init is None else lw.coerce(init, t, node))
    # ceil(n / size) steps: every work-item takes part in every step's group ops.
    steps = b.op("floordiv", b.op("sub", b.op("add", n, size, type=T.I64),
                                  b.const(1, T.I64), type=T.I64), size, type=T.I64)
    body = b.for_(step, b.const(0, T.I64), steps, b.const(1, T.I64))
    i = body.op("add", body.op("mul", body.load_var(step, T.I64), size, type=T.I64), lid,
                type=T.I64)
    inside = body.cmp("lt", i, n)
    v_slot = lw.temp_name("joint.v")
    lw.declare_slot(v_slot, t, node)
    body.store_var(v_slot, _identity(body, name, t))
    then, _ = body.if_(inside)
    then.store_var(v_slot, then.load(then.op("ptr.offset", first, i, type=first.type)))
    v = body.load_var(v_slot, t)
    scanned = body.op("group.scan", v, type=t, op=name, scope=g.scope, inclusive=inclusive)
    total = body.op("group.reduce", v, type=t, op=name, scope=g.scope)
    c = body.load_var(carry, t)
    value = body.combine(name, c, scanned)
    write, _ = body.if_(inside)
    if out.type.pointee == t:
        stored = value
    elif isinstance(t, T.ComplexType) or isinstance(out.type.pointee, T.ComplexType):
        with lw.region(write.region):    # NumPy's rules: a complex number has no real value
            stored = lw.coerce(value, out.type.pointee, node)
    else:
        stored = write.op("cast", value, type=out.type.pointee)
    write.store(write.op("ptr.offset", out, i, type=out.type), stored)
    body.store_var(carry, body.combine(name, c, total))
    return lw.value("ptr.offset", [out, n], out.type, node=node)
