"""Expression lowering: literals, names, operators, comparisons, short-circuit logic.

Operators follow NumPy scalar semantics (``typing_rules``): operands are converted to the
promoted type before the op, so every arithmetic op has same-typed operands (ir.ops).
Two Python literals fold with Python semantics, which is what NumPy sees as well
(``np.float32(x) * (2 * 3)`` multiplies by a weak 6). ``and``/``or``/``x if c else y``
short-circuit through a temporary slot and an ``if`` op.
"""
from __future__ import annotations

import ast

import numpy as np

from ..ir import types as T
from ..ir.core import Region, Value
from .diagnostics import unsupported
from .lowering import fv_type_name, type_name
from .typing_rules import (CMP_PREDS, PY_CMPS, PY_OPS, binary_result, compare_operand_type,
                           default_type, literal_fits, weak_storage_type)
from .values import Lit, Obj, TupleVal, Weak, is_complex, is_weak, promo_type

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and",
          ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "shl", ast.RShift: "shr"}
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>",
           "min": "min", "max": "max"}


_weak = promo_type  # the type ``typing_rules`` takes for an operand (weak: a Python type)


class ExpressionRules:
    def unsupported(self, node, what=None):
        unsupported(self.src, node, what)

    def expr(self, node: ast.expr):
        """``node`` lowered, a :class:`Weak` value given as its plain storage value (for the
        rules that do not promote: indices, arguments, stores...)."""
        fv = self.wexpr(node)
        return fv.value if isinstance(fv, Weak) else fv

    def wexpr(self, node: ast.expr):
        """``node`` lowered, keeping :class:`Weak` (for the rules that promote)."""
        rule = getattr(self, "expr_" + type(node).__name__, None)
        if rule is None:
            self.unsupported(node)
        return rule(node)

    def rvalue(self, node) -> Value:
        return self.materialize(self.expr(node), node)

    def expr_Constant(self, node):
        v = node.value
        if isinstance(v, (bool, int, float, complex)):
            return Lit(v)
        if v is None:
            return Obj(None)
        if v is Ellipsis:
            self.error(node, "'...' is only allowed as the whole body of an @sycl.external declaration")
        kind = "string" if isinstance(v, str) else type(v).__name__
        self.error(node, f"{kind} constants are not supported in kernel code")

    def expr_Name(self, node):
        return self.read(self.place(node), node)

    def expr_Attribute(self, node):
        return self.read(self.place(node), node)

    def expr_Subscript(self, node):
        return self.read(self.place(node), node)

    def expr_Tuple(self, node):
        return TupleVal(tuple(self.wexpr(e) for e in node.elts))

    # Arithmetic -----------------------------------------------------------------------
    def binop_name(self, op: ast.operator, node) -> str:
        name = BINOPS.get(type(op))
        if name is None:
            self.error(node, f"operator {type(op).__name__} is not supported in kernel code")
        return name

    def expr_BinOp(self, node):
        op = self.binop_name(node.op, node)
        return self.binop(op, self.wexpr(node.left), self.wexpr(node.right), node)

    def promote(self, op, a, b, node) -> T.ScalarType:
        try:
            return binary_result(op, a, b)
        except TypeError:
            an = type_name(a) if isinstance(a, T.Type) else f"Python {a.__name__}"
            bn = type_name(b) if isinstance(b, T.Type) else f"Python {b.__name__}"
            self.error(node, f"unsupported operand types for {SYMBOLS[op]}: {an} and {bn}")

    def binop(self, op: str, a, b, node):
        a, b = self.operand(a, node), self.operand(b, node)
        if isinstance(a, Lit) and isinstance(b, Lit):
            return self._fold(op, a, b, node)
        if isinstance(a, Value) and isinstance(a.type, T.PointerType) and op in ("add", "sub"):
            return self._ptr_arith(op, a, b, node)
        for x in (a, b):
            if isinstance(x, Value) and isinstance(x.type, T.VecType):
                return self._vec_binop(op, a, b, node)
        if is_complex(a) or is_complex(b):
            return self.complex_binop(op, a, b, node)
        if is_weak(a) and is_weak(b):
            return self._weak_binop(op, a, b, node)
        ty = self.promote(op, _weak(a), _weak(b), node)
        if op == "div" and not ty.is_float:
            ty = T.F64
        if ty == T.BOOL and op in ("add", "mul", "sub"):
            # NumPy: bool + bool is logical or, bool * bool logical and, bool - bool an error.
            if op == "sub":
                self.error(node, "boolean subtract is not supported (NumPy too); use ^ or !=")
            op = "or" if op == "add" else "and"
        va, vb = self.coerce(a, ty, node), self.coerce(b, ty, node)
        return self.value(op, [va, vb], ty, node=node)

    def _weak_binop(self, op, a, b, node):
        """Python numbers among themselves (one at least a run-time :class:`Weak`): computed
        in int64/float64, the result a Python number again (``k + 1``, ``k * 0.5``)."""
        ty = self.promote(op, weak_storage_type(a), weak_storage_type(b), node)
        if op == "div" and not ty.is_float:
            ty = T.F64
        v = self.value(op, [self.coerce(a, ty, node), self.coerce(b, ty, node)], ty, node=node)
        return Weak(v) if ty in (T.I64, T.F64) else v

    def operand(self, fv, node):
        """An operand of arithmetic: scalars, vecs and pointers; 1-D ids as integers."""
        if isinstance(fv, Weak):
            return fv
        if isinstance(fv, Obj) and isinstance(fv.value, np.generic):
            return self.materialize(fv, node)
        if isinstance(fv, Value) and isinstance(fv.type, T.IndexSpaceType) and fv.type.dims == 1:
            return self.coerce(fv, T.I64, node)
        if isinstance(fv, Lit) or isinstance(fv, Value) and isinstance(
                fv.type, (T.ScalarType, T.ComplexType, T.VecType, T.PointerType)):
            return fv
        what = type_name(fv.type) if isinstance(fv, Value) else "this"
        self.error(node, f"arithmetic on a {what} value is not supported in kernel code")

    def _fold(self, op, a: Lit, b: Lit, node):
        try:
            return Lit(PY_OPS[op](a.value, b.value))
        except ZeroDivisionError:
            self.error(node, "division by zero in a constant expression")
        except (TypeError, ValueError) as e:
            self.error(node, f"invalid constant expression: {e}")

    def _ptr_arith(self, op, p: Value, k, node):
        k = self.coerce(k, T.I64, node)
        if op == "sub":
            k = self.value("neg", [k], T.I64, node=node)
        return self.value("ptr.offset", [p, k], p.type, node=node)

    def _vec_binop(self, op, a, b, node):
        vt = a.type if isinstance(a, Value) and isinstance(a.type, T.VecType) else b.type
        for x in (a, b):
            if isinstance(x, Value) and isinstance(x.type, T.VecType) and x.type != vt:
                self.error(node, f"vec operands differ: {vt} and {x.type}")
        other = b if a is not None and isinstance(a, Value) and a.type == vt else a
        elem = vt.elem if isinstance(other, Value) and other.type == vt else \
            self.promote(op, vt.elem, _weak(other), node)
        if elem != vt.elem:
            self.error(node, f"{SYMBOLS[op]} of {vt} and {type_name(other.type)} would change the "
                       "element type; convert the scalar first")
        return self.value(op, [self.coerce(a, vt, node), self.coerce(b, vt, node)], vt, node=node)

    def expr_UnaryOp(self, node):
        v = self.operand(self.wexpr(node.operand), node) if not isinstance(node.op, ast.Not) \
            else self.expr(node.operand)
        if isinstance(v, Weak):  # -k, ~k of a Python number is a Python number
            r = self.expr_UnaryOp_value(node, v.value)
            return Weak(r) if isinstance(r, Value) and r.type == v.value.type else r
        return self.expr_UnaryOp_value(node, v)

    def expr_UnaryOp_value(self, node, v):
        if isinstance(node.op, ast.Not):
            if isinstance(v, Lit):
                return Lit(not v.value)
            return self.value("not", [self.truth(v, node)], T.BOOL, node=node)
        if isinstance(node.op, ast.Invert) and is_complex(v):
            self.error(node, f"bad operand type for ~: {fv_type_name(v)}")
        if isinstance(v, Lit):
            return Lit({ast.USub: lambda x: -x, ast.UAdd: lambda x: +x,
                        ast.Invert: lambda x: ~x}[type(node.op)](v.value))
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.USub):
            return self.value("neg", [v], v.type, node=node)
        if isinstance(v.type, T.ScalarType) and v.type.is_float:
            self.error(node, f"bad operand type for ~: {type_name(v.type)}")
        return self.value("not", [v], v.type, node=node)

    # Comparisons and logic -------------------------------------------------------------
    def compare(self, pred: str, a, b, node):
        a, b = self.operand(a, node), self.operand(b, node)
        if is_complex(a) or is_complex(b):
            return self.complex_compare(pred, a, b, node)
        if isinstance(a, Lit) and isinstance(b, Lit):
            return Lit(PY_CMPS[pred](a.value, b.value))
        if any(isinstance(x, Value) and isinstance(x.type, T.VecType) for x in (a, b)):
            return self.vec_compare(pred, a, b, node)
        if not all(isinstance(x, (Lit, Weak)) or isinstance(x.type, T.ScalarType) for x in (a, b)):
            self.error(node, "only scalars and vecs can be compared in kernel code")
        try:
            ty = compare_operand_type(self._cmp_type(a, b), self._cmp_type(b, a))
        except TypeError as e:
            self.error(node, f"cannot compare: {e}")
        va, vb = self.coerce(a, ty, node), self.coerce(b, ty, node)
        return self.value("cmp", [va, vb], T.BOOL, {"pred": pred}, node)

    @staticmethod
    def _cmp_type(fv, other):
        """What a comparison sees for ``fv``. A run-time Python int compared with an integer
        compares exactly in its storage type (as before weak values: ``k < n_i32`` is an
        int64 comparison, no wrap); with a float it is weak (``k < x_f32`` is float32)."""
        if not isinstance(fv, Weak):
            return _weak(fv)
        st = fv.value.type
        if isinstance(other, Lit):
            return st if literal_fits(other.value, st) else default_type(fv.py_type(0))
        ot = other.value.type if isinstance(other, Weak) else other.type
        if isinstance(other, Weak) or fv.py_type is int and isinstance(ot, T.ScalarType) and not ot.is_float:
            return st
        return fv.py_type

    def _pred(self, op, node) -> str:
        pred = CMP_PREDS.get(type(op).__name__)
        if pred is None:
            self.error(node, f"'{type(op).__name__}' comparisons (is, in) are not supported "
                       "in kernel code")
        return pred

    def expr_Compare(self, node):
        """``a < b < c`` is ``a < b and b < c`` with ``b`` evaluated once."""
        left, right = self.wexpr(node.left), self.wexpr(node.comparators[0])
        first = self.compare(self._pred(node.ops[0], node), left, right, node)
        if len(node.ops) == 1:
            return first
        return self._chain(first, right, node)

    def _chain(self, first, prev, node):
        name = self.temp_name("cmp")
        self.declare_slot(name, T.BOOL, node)
        self.emit("var.store", [self.truth(first, node)], attrs={"name": name}, node=node)
        for op, right in zip(node.ops[1:], node.comparators[1:]):
            cond = self.value("var.load", [], T.BOOL, {"name": name}, node)
            then = Region()
            self.emit("if", [cond], node=node, regions=[then, Region()])
            self.regions.append(then)
            r = self.wexpr(right)
            res = self.compare(self._pred(op, node), prev, r, node)
            self.emit("var.store", [self.truth(res, node)], attrs={"name": name}, node=node)
            prev = r
        for _ in node.ops[1:]:
            self.regions.pop()
        return self.value("var.load", [], T.BOOL, {"name": name}, node)

    def expr_BoolOp(self, node):
        """Python's value semantics: ``a or b`` is ``a`` if ``a`` is true, else ``b``."""
        values = [self.expr(node.values[0])]
        if all(isinstance(n, ast.Constant) for n in node.values):
            vals = [n.value for n in node.values]
            return Lit(all(vals) and vals[-1] if isinstance(node.op, ast.And) else any(vals) and
                       next((v for v in vals if v), vals[-1]))
        return self._short_circuit(node, values[0])

    def _short_circuit(self, node, first):
        is_and = isinstance(node.op, ast.And)
        name = self.temp_name("and" if is_and else "or")
        slot_type = self._bool_op_type(node, first)
        self.declare_slot(name, slot_type, node)
        self.emit("var.store", [self.coerce(first, slot_type, node)], attrs={"name": name}, node=node)
        depth = 0
        for operand in node.values[1:]:
            cur = self.value("var.load", [], slot_type, {"name": name}, node)
            cond = self.truth(cur, node)
            if not is_and:
                cond = self.value("not", [cond], T.BOOL, node=node)
            then = Region()
            self.emit("if", [cond], node=node, regions=[then, Region()])
            self.regions.append(then)
            depth += 1
            v = self.expr(operand)
            self.emit("var.store", [self.coerce(v, slot_type, operand)], attrs={"name": name}, node=operand)
        for _ in range(depth):
            self.regions.pop()
        return self.value("var.load", [], slot_type, {"name": name}, node)

    def _bool_op_type(self, node, first) -> T.Type:
        # The result is one of the operands: give the slot their common type. Operand
        # types are found without emitting code (a bool operand is the common case).
        if isinstance(first, Value) and first.type == T.BOOL or isinstance(first, Lit) and \
                isinstance(first.value, bool):
            return T.BOOL
        v = self.materialize(first, node)
        return v.type

    def expr_IfExp(self, node):
        cond = self.truth(self.expr(node.test), node.test)
        name = self.temp_name("ifexp")
        then, other = Region(), Region()
        self.emit("if", [cond], node=node, regions=[then, other])
        # Each branch is computed inside its region (only the taken one runs).
        with self.region(then):
            a = self.wexpr(node.body)
            a = a if isinstance(a, (Lit, Weak)) else self.materialize(a, node.body)
        with self.region(other):
            b = self.wexpr(node.orelse)
            b = b if isinstance(b, (Lit, Weak)) else self.materialize(b, node.orelse)
        weak = is_weak(a) and is_weak(b)  # `1 if c else 0`, `k if c else 0`: a Python int
        if weak:
            ty = self.promote("add", weak_storage_type(a), weak_storage_type(b), node)
        else:
            ty = self._ifexp_type(a, None if isinstance(a, Lit) else _weak(a), b, node)
        self.declare_slot(name, ty, node)
        with self.region(then):
            self.emit("var.store", [self.coerce(a, ty, node.body)], attrs={"name": name}, node=node.body)
        with self.region(other):
            self.emit("var.store", [self.coerce(b, ty, node.orelse)], attrs={"name": name}, node=node.orelse)
        v = self.value("var.load", [], ty, {"name": name}, node)
        return Weak(v) if weak and ty in (T.I64, T.F64, T.C128) else v

    def _ifexp_type(self, a, a_type, b, node) -> T.Type:
        """At least one branch strong: the branches' NumPy promotion (a Python number
        converts to the strong branch's type, ``x_f32 if c else 0`` is float32)."""
        b_type = None if isinstance(b, Lit) else _weak(b)
        a_type = a_type if a_type is not None else type(a.value)
        b_type = b_type if b_type is not None else type(b.value)
        if a_type == b_type:
            return default_type(a_type(0)) if isinstance(a_type, type) else a_type
        if all(isinstance(t, (*T.NUMBER_TYPES, type)) for t in (a_type, b_type)):
            return self.promote("add", a_type, b_type, node)
        self.error(node, f"the branches of a conditional expression have types {a_type} and {b_type}")
