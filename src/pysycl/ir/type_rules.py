"""Type rules of the verifier: one small function per op (or op family).

A rule takes the op and the module and returns an error message, or None when the op
is well typed. Rules assume the op's shape (operand/region counts, required attrs) was
already checked against the catalogue. Ops without a rule have no type constraint beyond
their shape (``cast``, ``sg.*``, ``spec.load``...).

>>> from .core import Module, Op
>>> from .types import F32, I32
>>> x, y = Op("const", type=F32, attrs={"value": 1.0}), Op("const", type=I32, attrs={"value": 1})
>>> check_types(Op("add", [x.result, y.result], F32), Module("m"))
'operand 1 has type i32, expected f32 (the result type)'
"""
from __future__ import annotations

import numbers
from typing import Callable

import numpy as np

from .core import Module, Op
from .ops import COMPLEX_FUNCTIONS, MATH_FUNCTIONS, MATH_PAIRS, MATH_PREDICATES
from .types import (BOOL, I32, I64, AccessorType, ArrayType, ComplexType, LocalAccessorType,
                    PointerType, ScalarType, StructType, TupleType, Type, VecType)

Rule = Callable[[Op, Module], "str | None"]
RULES: dict[str, Rule] = {}

#: Ops that act on complex numbers part by part (the other arithmetic has complex.* ops).
PARTWISE = ("add", "sub", "neg")
BINARY = ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or",
          "xor", "shl", "shr")
UNARY = ("neg", "not", "abs")
CMP_PREDS = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE_OPS = ("plus", "multiplies", "minimum", "maximum", "bit_and", "bit_or", "bit_xor",
              "logical_and", "logical_or")
RMW_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "xchg")
ORDERS = ("relaxed", "acquire", "release", "acq_rel", "seq_cst")
SCOPES = ("work_item", "sub_group", "work_group", "device", "system")
GROUP_SCOPES = ("work_group", "sub_group")


def check_types(op: Op, module: Module) -> str | None:
    """What is wrong with ``op``'s operand and result types, or None (ops without a
    rule are not checked here)."""
    rule = RULES.get(op.name)
    return rule(op, module) if rule else None


def _rule(*names: str):
    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn
    return register


def _is_int(t: Type) -> bool:
    return isinstance(t, ScalarType) and t.is_int


def _same_as_result(op: Op, operands) -> str | None:
    for i in operands:
        if op.operands[i].type != op.type:
            return f"operand {i} has type {op.operands[i].type}, expected {op.type} (the result type)"
    return None


def _bool_like(t: Type) -> bool:
    return t == BOOL or (isinstance(t, VecType) and t.elem == BOOL)


@_rule("const")
def _const(op: Op, m: Module) -> str | None:
    v, t = op.attrs["value"], op.type
    if isinstance(t, ScalarType):
        is_bool = isinstance(v, (bool, np.bool_))
        if t.is_bool:
            ok = is_bool
        elif t.is_int:
            ok = isinstance(v, numbers.Integral) and not is_bool
        else:
            ok = isinstance(v, numbers.Real) and not is_bool
        return None if ok else f"value {v!r} does not fit constant type {t}"
    try:
        size = t.size
    except TypeError:
        return f"constants of type {t} are not allowed"
    if not isinstance(v, bytes) or len(v) != size:
        return f"a constant of type {t} needs {size} bytes of value, got {v!r:.40}"
    return None


@_rule(*BINARY, *UNARY)
def _arith(op: Op, m: Module) -> str | None:
    if isinstance(op.type, ComplexType) and op.name not in PARTWISE:
        return f"{op.name} of complex numbers is an op of its own (complex.*)"
    if not isinstance(op.type, (ScalarType, VecType, ComplexType)):
        return f"arithmetic on non-scalar type {op.type}"
    return _same_as_result(op, range(len(op.operands)))


def _complex_operands(op: Op) -> ComplexType | str:
    t = op.operands[0].type
    if not isinstance(t, ComplexType):
        return f"operand 0 has type {t}, expected a complex type"
    for i, v in enumerate(op.operands[1:], 1):
        if v.type != t:
            return f"operand {i} has type {v.type}, expected {t}"
    return t


@_rule("complex.make")
def _complex_make(op: Op, m: Module) -> str | None:
    if not isinstance(op.type, ComplexType):
        return f"result type {op.type} is not complex"
    return _parts_of(op, range(2))


def _parts_of(op: Op, operands) -> str | None:
    for i in operands:
        if op.operands[i].type != op.type.elem:
            return f"operand {i} has type {op.operands[i].type}, expected {op.type.elem}"
    return None


@_rule("complex.real", "complex.imag", "complex.abs", "complex.arg")
def _complex_part(op: Op, m: Module) -> str | None:
    t = _complex_operands(op)
    if isinstance(t, str):
        return t
    return None if op.type == t.elem else f"result type {op.type}, expected {t.elem}"


@_rule("complex.mul", "complex.div", *(f"complex.{n}" for n in COMPLEX_FUNCTIONS))
def _complex_arith(op: Op, m: Module) -> str | None:
    t = _complex_operands(op)
    if isinstance(t, str):
        return t
    return None if op.type == t else f"result type {op.type}, expected {t}"


@_rule("cmp")
def _cmp(op: Op, m: Module) -> str | None:
    a, b = op.operands
    if op.attrs["pred"] not in CMP_PREDS:
        return f"unknown predicate {op.attrs['pred']!r}"
    if a.type != b.type:
        return f"operands have different types {a.type} and {b.type}"
    if isinstance(a.type, ComplexType):
        return "complex numbers are compared part by part (complex.real, complex.imag)"
    return None if _bool_like(op.type) else f"cmp gives bool, not {op.type}"


@_rule("bitcast")
def _bitcast(op: Op, m: Module) -> str | None:
    def bits(t):
        return t.elem.size * t.n if isinstance(t, VecType) else getattr(t, "size", None)
    a = op.operands[0].type
    if not isinstance(a, (VecType, ScalarType)) or bits(a) != bits(op.type):
        return f"bitcast of {a} to {op.type}: sizes differ"
    return None


@_rule("select")
def _select(op: Op, m: Module) -> str | None:
    if not _bool_like(op.operands[0].type):
        return f"condition has type {op.operands[0].type}, expected bool"
    return _same_as_result(op, (1, 2))


@_rule(*(f"math.{n}" for n in MATH_FUNCTIONS))
def _math(op: Op, m: Module) -> str | None:
    if op.name[5:] in MATH_PREDICATES:
        return None if _bool_like(op.type) else f"{op.name} gives bool, not {op.type}"
    return _same_as_result(op, range(len(op.operands)))


def int32_like(t: Type) -> Type:
    """i32 in the shape of ``t``: a vec of i32 for a vec (the integer results and
    operands of frexp, lgamma_r, remquo, ldexp)."""
    return VecType(I32, t.n) if isinstance(t, VecType) else I32


@_rule("math.ldexp")
def _ldexp(op: Op, m: Module) -> str | None:
    want = int32_like(op.type)
    if op.operands[1].type != want:
        return f"the exponent has type {op.operands[1].type}, expected {want}"
    return _same_as_result(op, (0,))


@_rule(*(f"math.{n}" for n in MATH_PAIRS))
def _math_pair(op: Op, m: Module) -> str | None:
    t = op.operands[0].type
    want = TupleType((t, int32_like(t)))
    if op.type != want:
        return f"{op.name} of {t} gives {want}, not {op.type}"
    bad = [i for i, v in enumerate(op.operands) if v.type != t]
    return f"operand {bad[0]} has type {op.operands[bad[0]].type}, expected {t}" if bad else None


@_rule("struct.make")
def _struct_make(op: Op, m: Module) -> str | None:
    if not isinstance(op.type, StructType):
        return f"result type {op.type} is not a struct"
    fields = op.type.fields
    if len(op.operands) != len(fields):
        return f"{len(op.operands)} operands for a struct of {len(fields)} fields"
    for i, (v, f) in enumerate(zip(op.operands, fields)):
        if v.type != f.type:
            return f"operand {i} has type {v.type}, field {f.name!r} has type {f.type}"
    return None


def _field_type(t: Type, field) -> Type | str:
    if not isinstance(t, StructType):
        return f"{t} is not a struct"
    try:
        return t.fields[field].type if isinstance(field, int) else t.field(field).type
    except (KeyError, IndexError, TypeError):
        return f"struct {t.name} has no field {field!r}"


@_rule("struct.get", "struct.insert")
def _struct_field(op: Op, m: Module) -> str | None:
    ft = _field_type(op.operands[0].type, op.attrs["field"])
    if isinstance(ft, str):
        return ft
    if op.name == "struct.get":
        return None if op.type == ft else f"field has type {ft}, result is {op.type}"
    if op.operands[1].type != ft:
        return f"inserted value has type {op.operands[1].type}, field has type {ft}"
    return _same_as_result(op, (0,))


@_rule("array.make", "vec.make")
def _make(op: Op, m: Module) -> str | None:
    want = ArrayType if op.name == "array.make" else VecType
    if not isinstance(op.type, want):
        return f"result type {op.type} is not {'an array' if want is ArrayType else 'a vec'}"
    counts = (op.type.n,) if want is ArrayType else (op.type.n, 1)
    if len(op.operands) not in counts:
        return f"{len(op.operands)} elements for {op.type}"
    for i, v in enumerate(op.operands):
        if v.type != op.type.elem:
            return f"element {i} has type {v.type}, expected {op.type.elem}"
    return None


@_rule("array.get", "vec.get")
def _get(op: Op, m: Module) -> str | None:
    agg, idx = op.operands
    want = ArrayType if op.name == "array.get" else VecType
    if not isinstance(agg.type, want):
        return f"operand 0 has type {agg.type}"
    if not _is_int(idx.type):
        return f"index has type {idx.type}, expected an integer"
    return None if op.type == agg.type.elem else f"element type is {agg.type.elem}, result is {op.type}"


@_rule("tuple.make")
def _tuple_make(op: Op, m: Module) -> str | None:
    got = TupleType(tuple(v.type for v in op.operands))
    return None if op.type == got else f"operands make {got}, result is {op.type}"


@_rule("tuple.get")
def _tuple_get(op: Op, m: Module) -> str | None:
    t, i = op.operands[0].type, op.attrs["index"]
    if not isinstance(t, TupleType) or not isinstance(i, int) or not 0 <= i < len(t.elems):
        return f"no element {i!r} in {t}"
    return None if op.type == t.elems[i] else f"element has type {t.elems[i]}, result is {op.type}"


@_rule("ptr.offset", "ptr.elem", "ptr.field")
def _ptr_arith(op: Op, m: Module) -> str | None:
    p = op.operands[0].type
    if not isinstance(p, PointerType):
        return f"operand 0 has type {p}, expected a pointer"
    if op.name != "ptr.field" and not _is_int(op.operands[1].type):
        return f"index has type {op.operands[1].type}, expected an integer"
    if op.name == "ptr.offset":
        want: Type | str = p
    elif op.name == "ptr.elem":
        if not isinstance(p.pointee, (ArrayType, VecType)):
            return f"ptr.elem needs a pointer to an array or vec, got {p}"
        want = PointerType(p.pointee.elem, p.space)
    else:
        ft = _field_type(p.pointee, op.attrs["field"])
        want = ft if isinstance(ft, str) else PointerType(ft, p.space)
    if isinstance(want, str):
        return want
    return None if op.type == want else f"result type {op.type}, expected {want}"


@_rule("load", "store", "atomic.load", "atomic.store", "atomic.rmw", "atomic.cmpxchg")
def _memory(op: Op, m: Module) -> str | None:
    p = op.operands[0].type
    if not isinstance(p, PointerType):
        return f"operand 0 has type {p}, expected a pointer"
    for i, v in enumerate(op.operands[1:], 1):
        if v.type != p.pointee:
            return f"operand {i} has type {v.type}, the pointer points to {p.pointee}"
    if op.result is not None and op.type != p.pointee:
        return f"result type {op.type}, the pointer points to {p.pointee}"
    if op.name.startswith("atomic."):
        return _atomic_attrs(op)
    return None


@_rule("atomic.fence")
def _fence(op: Op, m: Module) -> str | None:
    return _atomic_attrs(op)


def _atomic_attrs(op: Op) -> str | None:
    if op.name == "atomic.rmw" and op.attrs["op"] not in RMW_OPS:
        return f"unknown atomic operation {op.attrs['op']!r}"
    if op.attrs["order"] not in ORDERS:
        return f"unknown memory order {op.attrs['order']!r}"
    if op.attrs["scope"] not in SCOPES:
        return f"unknown memory scope {op.attrs['scope']!r}"
    return None


@_rule("acc.ptr")
def _acc_ptr(op: Op, m: Module) -> str | None:
    if not op.operands or not isinstance(op.operands[0].type, (AccessorType, LocalAccessorType)):
        return "operand 0 must be an accessor"
    acc = op.operands[0].type
    if len(op.operands) - 1 != acc.dims:
        return f"{len(op.operands) - 1} indices for a {acc.dims}-dimensional accessor"
    for i, v in enumerate(op.operands[1:], 1):
        if not _is_int(v.type):
            return f"index {i} has type {v.type}, expected an integer"
    space = "local" if isinstance(acc, LocalAccessorType) else "global"
    want = PointerType(acc.elem, space)
    return None if op.type == want else f"result type {op.type}, expected {want}"


@_rule("acc.offset")
def _acc_offset(op: Op, m: Module) -> str | None:
    acc = op.operands[0].type
    if not isinstance(acc, AccessorType):
        return "operand 0 must be a buffer accessor"
    dim = op.attrs["dim"]
    if not isinstance(dim, int) or not 0 <= dim < acc.dims:
        return f"dim {dim!r} out of range for a {acc.dims}-dimensional accessor"
    return None if op.type == I64 else f"acc.offset gives i64, not {op.type}"


@_rule("acc.base")
def _acc_base(op: Op, m: Module) -> str | None:
    acc = op.operands[0].type
    if not isinstance(acc, AccessorType):
        return "operand 0 must be a buffer accessor"
    want = PointerType(acc.elem, "global")
    return None if op.type == want else f"result type {op.type}, expected {want}"


@_rule("acc.range")
def _acc_range(op: Op, m: Module) -> str | None:
    acc = op.operands[0].type
    if not isinstance(acc, (AccessorType, LocalAccessorType)):
        return "operand 0 must be an accessor"
    dim = op.attrs["dim"]
    if not isinstance(dim, int) or not 0 <= dim < acc.dims:
        return f"dim {dim!r} out of range for a {acc.dims}-dimensional accessor"
    return None if op.type == I64 else f"acc.range gives i64, not {op.type}"


@_rule("ptr.extent")
def _ptr_extent(op: Op, m: Module) -> str | None:
    p = op.operands[0].type
    if not isinstance(p, PointerType) or p.space != "global":
        return f"operand 0 has type {p}, expected a global pointer"
    return None if op.type == I64 else f"ptr.extent gives i64, not {op.type}"


@_rule("check")
def _check(op: Op, m: Module) -> str | None:
    ok, index, extent = (v.type for v in op.operands)
    if ok != BOOL:
        return f"condition has type {ok}, expected bool"
    if index != I64 or extent != I64:
        return f"index and extent are i64, not {index} and {extent}"
    return None


@_rule("dg.addr")
def _dg_addr(op: Op, m: Module) -> str | None:
    d = m.device_global(op.attrs["id"])
    if d is None:
        return f"device_global {op.attrs['id']!r} is not declared in the module"
    want = PointerType(d.type, "global")
    return None if op.type == want else f"result type {op.type}, expected {want}"


@_rule("const.table")
def _const_table(op: Op, m: Module) -> str | None:
    t, data = op.type, op.attrs["data"]
    if not isinstance(t, PointerType) or t.space != "constant":
        return f"result type {t}, expected a constant pointer"
    if not isinstance(data, bytes) or len(data) != t.pointee.size:
        return f"data must be the {t.pointee.size} bytes of {t.pointee}"
    return None


@_rule("spec.get")
def _spec_get(op: Op, m: Module) -> str | None:
    s = m.spec_constant(op.attrs["id"])
    if s is None:
        return f"specialization constant {op.attrs['id']!r} is not declared in the module"
    return None if op.type == s.type else f"result type {op.type}, the constant has type {s.type}"


@_rule(*(f"wi.{n}" for n in ("global_id", "local_id", "group_id", "global_range",
                               "local_range", "group_range", "global_offset",
                               "global_linear_id", "local_linear_id", "group_linear_id")))
def _work_item(op: Op, m: Module) -> str | None:
    dim = op.attrs.get("dim", 0)
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 <= dim <= 2:
        return f"dim {dim!r} is not 0, 1 or 2"
    return None if op.type == I64 else f"work-item queries give i64, not {op.type}"


@_rule("barrier")
def _barrier(op: Op, m: Module) -> str | None:
    s = op.attrs["scope"]
    return None if s in GROUP_SCOPES else f"barrier scope {s!r} is not work_group or sub_group"


SHUFFLE_MODES = ("idx", "xor", "down", "up")


@_rule("group.scan")
def _group_scan(op: Op, m: Module) -> str | None:
    if not isinstance(op.attrs["inclusive"], bool):
        return "group.scan's inclusive attribute is a bool"
    return _group_reduce(op, m)


@_rule("group.broadcast", "group.shuffle")
def _group_move(op: Op, m: Module) -> str | None:
    if op.attrs["scope"] not in GROUP_SCOPES:
        return f"group scope {op.attrs['scope']!r} is not work_group or sub_group"
    if op.name == "group.shuffle":
        if op.attrs["mode"] not in SHUFFLE_MODES:
            return f"unknown shuffle mode {op.attrs['mode']!r}"
        if op.attrs["scope"] != "sub_group":
            return "shuffles are sub-group operations"
    if op.operands[1].type != I64:
        return f"the local id of {op.name} is i64, not {op.operands[1].type}"
    return _same_as_result(op, (0,))


@_rule("ptr.diff")
def _ptr_diff(op: Op, m: Module) -> str | None:
    a, b = (v.type for v in op.operands)
    if not isinstance(a, PointerType) or a != b:
        return f"ptr.diff takes two pointers of one type, not {a} and {b}"
    return None if op.type == I64 else f"ptr.diff gives i64, not {op.type}"


@_rule("group.reduce")
def _group_reduce(op: Op, m: Module) -> str | None:
    if op.attrs["op"] not in REDUCE_OPS:
        return f"unknown group operation {op.attrs['op']!r}"
    if op.attrs["scope"] not in GROUP_SCOPES:
        return f"group scope {op.attrs['scope']!r} is not work_group or sub_group"
    return _same_as_result(op, (0,))


@_rule("if", "yield", "assert")
def _bool_operand(op: Op, m: Module) -> str | None:
    t = op.operands[0].type
    return None if t == BOOL else f"condition has type {t}, expected bool"


@_rule("for")
def _for(op: Op, m: Module) -> str | None:
    types = {v.type for v in op.operands}
    if len(types) != 1 or not _is_int(op.operands[0].type):
        return "lo, hi and step must have one integer type, got " + ", ".join(
            str(v.type) for v in op.operands)
    return None


@_rule("wg.items")
def _wg_items(op: Op, m: Module) -> str | None:
    if len(op.operands) not in (0, 2):
        return f"has {len(op.operands)} operands, expected none or (lo, hi)"
    for i, v in enumerate(op.operands):
        if v.type != I64:
            return f"operand {i} has type {v.type}, expected i64"
    return None


@_rule("call")
def _call(op: Op, m: Module) -> str | None:
    callee = m.get_function(op.attrs["callee"])
    if callee is None:
        return f"callee {op.attrs['callee']!r} is not in the module"
    if callee.kind == "kernel":
        return f"kernel {callee.name!r} cannot be called"
    want = [p.type for p in callee.params]
    got = [v.type for v in op.operands]
    if want != got:
        return (f"arguments ({', '.join(map(str, got))}) do not match the parameters "
                f"({', '.join(map(str, want))}) of {callee.name!r}")
    if op.type != callee.return_type:
        return f"result type {op.type}, {callee.name!r} returns {callee.return_type}"
    return None
