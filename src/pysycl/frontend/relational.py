"""SYCL 2020 relational functions (4.17.9) in the builtin catalogue: the comparisons
``sycl.math.isequal``, ``isnotequal``, ``isgreater``, ``isgreaterequal``, ``isless``,
``islessequal``, ``islessgreater``, ``isordered``, ``isunordered``, ``isnormal``, and
``any``, ``all``, ``bitselect``, ``select``.

On scalars a comparison gives a bool; on float vecs SYCL's mask vec (-1 where true, 0
where false, in the signed integer of the element's width), as the predicates of
``sycl.math`` do. ``any``/``all`` of an integer vec test the most significant bit of
each element and give the int 1 or 0; ``select`` of vecs picks ``b[i]`` where the
most significant bit of ``c[i]`` is set.

>>> lookup(sycl_math.isequal).name
'math.isequal'
"""
from __future__ import annotations

import numpy as np

from ..ir import types as T
from ..ir.core import Value
from . import sycl_math
from .builtins import (_args, _cmp, _math_op, _math_operands, _relational, _select,
                       add_builtin, lookup)  # noqa: F401 - lookup: doctest
from .lowering import type_name

_SIGNED = {8: T.I8, 16: T.I16, 32: T.I32, 64: T.I64}
_COMPARISONS = {"isequal": "eq", "isnotequal": "ne", "isgreater": "gt",
                "isgreaterequal": "ge", "isless": "lt", "islessequal": "le"}


def _elem(t: T.Type) -> T.ScalarType:
    return t.elem if isinstance(t, T.VecType) else t


def _like(t: T.Type, elem: T.ScalarType) -> T.Type:
    return T.VecType(elem, t.n) if isinstance(t, T.VecType) else elem


def _float_pair(lw, node, name: str, nargs: int) -> list[Value]:
    return _math_operands(lw, node, name, nargs, ints=False)


def _either(lw, a: Value, b: Value, node, op: str = "or") -> Value:
    return lw.value(op, [a, b], a.type, node=node)


def _comparison(name: str):
    pred = _COMPARISONS[name]

    def lower(lw, node):
        x, y = _float_pair(lw, node, name, 2)
        return _relational(lw, _cmp(lw, pred, x, y, node), x.type, node)
    lower.__doc__ = (f"{name}(x, y): x {dict(eq='==', ne='!=', gt='>', ge='>=', lt='<', le='<=')[pred]}"
                     " y of floats: a bool, or a -1/0 mask vec of float vecs")
    return lower


def _islessgreater(lw, node):
    """islessgreater(x, y): x < y or x > y (false for NaN): a bool or a -1/0 mask vec."""
    x, y = _float_pair(lw, node, "islessgreater", 2)
    truth = _either(lw, _cmp(lw, "lt", x, y, node), _cmp(lw, "gt", x, y, node), node)
    return _relational(lw, truth, x.type, node)


def _ordered(name: str):
    def lower(lw, node):
        x, y = _float_pair(lw, node, name, 2)
        nan = _either(lw, _math_op(lw, "isnan", [x], node), _math_op(lw, "isnan", [y], node),
                      node)
        truth = nan if name == "isunordered" else lw.value("not", [nan], nan.type, node=node)
        return _relational(lw, truth, x.type, node)
    lower.__doc__ = (f"{name}(x, y): whether {'either' if name == 'isunordered' else 'neither'}"
                     " of x and y is NaN: a bool or a -1/0 mask vec")
    return lower


def _isnormal(lw, node):
    """isnormal(x): finite, not zero and not subnormal: a bool or a -1/0 mask vec."""
    (x,) = _float_pair(lw, node, "isnormal", 1)
    tiny = float(np.finfo(_elem(x.type).dtype).tiny)
    big = _cmp(lw, "ge", _math_op(lw, "fabs", [x], node), lw.const(tiny, x.type, node), node)
    inf = _math_op(lw, "isinf", [x], node)
    truth = lw.value("and", [big, lw.value("not", [inf], inf.type, node=node)], big.type,
                     node=node)
    return _relational(lw, truth, x.type, node)   # NaN fails the >= test


def _integer_value(lw, node, name: str, arg) -> Value:
    v = lw.operand(lw.wexpr(arg), node)
    v = lw.materialize(v, node) if not isinstance(v, Value) else v
    if not (isinstance(_elem(v.type), T.ScalarType) and _elem(v.type).is_int):
        lw.error(arg, f"{name}() takes integers or integer vecs, not {type_name(v.type)}")
    return v


def _msb_set(lw, v: Value, node) -> Value:
    """Whether each element's most significant bit is set (bool or vec of bools)."""
    signed = _like(v.type, _SIGNED[_elem(v.type).bits])
    if signed != v.type:
        v = lw.value("bitcast", [v], signed, node=node)
    return _cmp(lw, "lt", v, lw.const(0, signed, node), node)


def _any_all(name: str):
    def lower(lw, node):
        if len(node.args) != 1 or node.keywords:
            lw.error(node, f"{name}() takes one integer or integer vec")
        v = _integer_value(lw, node, name, node.args[0])
        msb = _msb_set(lw, v, node)
        if not isinstance(v.type, T.VecType):
            return msb        # the deprecated scalar form: a bool
        elems = [lw.value("vec.get", [msb, lw.const(i, T.I64, node)], T.BOOL, node=node)
                 for i in range(v.type.n)]
        acc = elems[0]
        for e in elems[1:]:
            acc = lw.value("or" if name == "any" else "and", [acc, e], T.BOOL, node=node)
        return lw.cast(acc, T.I32, node)
    lower.__doc__ = (f"{name}(x): 1 if the most significant bit of {name} element(s) of an "
                     "integer vec is set, else 0 (of a scalar integer, a bool)")
    return lower


def _same_typed(lw, node, name: str) -> list[Value]:
    args = [lw.operand(lw.wexpr(a), node) for a in node.args]
    if node.keywords or len(args) != 3:
        lw.error(node, f"{name}() takes 3 arguments, got {len(args)}")
    first = next((a for a in args[:2] if isinstance(a, Value)), None)
    t = first.type if first is not None else lw.materialize(args[0], node).type
    return [lw.coerce(args[0], t, node), lw.coerce(args[1], t, node), args[2]]


def _bitselect(lw, node):
    """bitselect(a, b, c): each bit from b where c's bit is set, else from a (floats
    by their bits)."""
    a, b, c = _same_typed(lw, node, "bitselect")
    t = a.type
    c = lw.coerce(c, t, node)
    bits = _like(t, _SIGNED[_elem(t).bits])
    ia, ib, ic = (v if v.type == bits or _elem(t).is_int else
                  lw.value("bitcast", [v], bits, node=node) for v in (a, b, c))
    it = ia.type
    kept = lw.value("and", [ia, lw.value("not", [ic], it, node=node)], it, node=node)
    taken = lw.value("and", [ib, ic], it, node=node)
    r = lw.value("or", [kept, taken], it, node=node)
    return r if r.type == t else lw.value("bitcast", [r], t, node=node)


def _select_fn(lw, node):
    """select(a, b, c): c ? b : a; of vecs, b[i] where the most significant bit of the
    integer c[i] is set."""
    a, b, c = _same_typed(lw, node, "select")
    t = a.type
    if isinstance(t, T.VecType):
        cv = c if isinstance(c, Value) else None
        if cv is None or not isinstance(cv.type, T.VecType) or cv.type.n != t.n or \
                not cv.type.elem.is_int or cv.type.elem.bits != t.elem.bits:
            lw.error(node.args[2], f"select() of {type_name(t)} takes a vec of "
                     f"{t.n} {t.elem.bits}-bit integers as c")
        return _select(lw, _msb_set(lw, cv, node), b, a, node)
    return _select(lw, lw.truth(c, node), b, a, node)


for _name in _COMPARISONS:
    add_builtin(f"math.{_name}", [getattr(sycl_math, _name)])(_comparison(_name))
add_builtin("math.islessgreater", [sycl_math.islessgreater])(_islessgreater)
for _name in ("isordered", "isunordered"):
    add_builtin(f"math.{_name}", [getattr(sycl_math, _name)])(_ordered(_name))
add_builtin("math.isnormal", [sycl_math.isnormal])(_isnormal)
add_builtin("math.any", [sycl_math.any])(_any_all("any"))
add_builtin("math.all", [sycl_math.all])(_any_all("all"))
add_builtin("math.bitselect", [sycl_math.bitselect])(_bitselect)
add_builtin("math.select", [sycl_math.select])(_select_fn)
