"""Statement lowering: assignment, structured control flow, return, assert.

``for i in range(a, b, c)`` becomes a ``for`` op that writes the slot ``i``; ``while``
gets a condition region ending in ``yield``; ``if``/``elif`` nest ``if`` ops. These are
the only control-flow ops, which is what makes fission at barriers and
``static_range`` unrolling simple.
"""
from __future__ import annotations

import ast

from ..ir import types as T
from ..ir.core import Region, Value
from . import kernel_api
from .lowering import type_name
from .values import AtomicHandle, Lit, Obj, TupleVal, Weak


class StatementRules:
    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:
        rule = getattr(self, "stmt_" + type(node).__name__, None)
        if rule is None:
            self.unsupported(node)
        rule(node)

    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring or a string used as a comment
        self.expr(node.value)

    # Assignment ---------------------------------------------------------------------
    def stmt_Assign(self, node):
        if self._is_private_array(node.value):
            return self._private_array(node)
        value = self.wexpr(node.value)
        for target in node.targets:
            self.store_target(target, value, node.value)

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            self.error(node.target, "an annotated assignment must assign a plain name")
        ty = self.annotation_type(node.annotation)
        name = node.target.id
        if name not in self.slots:
            self.declare_slot(name, ty, node)
        elif self.slots[name].type != ty:
            self.error(node, f"local variable '{name}' already has type "
                       f"{self.slots[name].type} (set on line {self.slots[name].line})")
        if node.value is not None:
            v = self.coerce(self.expr(node.value), ty, node.value)
            self.emit("var.store", [v], attrs={"name": name}, node=node)

    def stmt_AugAssign(self, node):
        op = self.binop_name(node.op, node)
        t = node.target
        reducer = self.reducer_target(t)
        if reducer is not None:
            # r += x is r.combine(x) for a plus reducer (the signature checked the op).
            return self.reducer_combine(reducer, self.wexpr(node.value), node)
        if isinstance(t, ast.Name):
            current = self.read_name(t.id, t)
            if isinstance(current, AtomicHandle):
                return self._atomic_compound(current, op, node)
            result = self.binop(op, current, self.wexpr(node.value), node)
            return self.assign_name(t.id, result, node)
        place = self.place(t, write=True)
        current = self.read(place, t)
        result = self.binop(op, current, self.wexpr(node.value), node)
        self.write(place, result, t)

    def _atomic_compound(self, a: AtomicHandle, op: str, node) -> None:
        """``a += x`` on an atomic_ref: SYCL 2020 (4.15.3) defines +=, -= (and &=, |=, ^=
        for integers) as the atomic fetch_op with the atomic_ref's default order, so the
        read-modify-write must not be split into a load and a store."""
        rmw = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor"}.get(op)
        if rmw is None or a.elem.is_float and rmw not in ("add", "sub"):
            allowed = "+= and -=" if a.elem.is_float else "+=, -=, &=, |= and ^="
            self.error(node, f"an atomic_ref of {type_name(a.elem)} supports {allowed}, not this operator",
                       "use the atomic_ref's fetch_* methods")
        v = self.coerce(self.operand(self.wexpr(node.value), node.value), a.elem, node)
        self.value("atomic.rmw", [a.ptr, v], a.elem,
                   {"order": a.order, "scope": a.scope, "op": rmw}, node)

    def store_target(self, target, value, value_node) -> None:
        if isinstance(target, ast.Name):
            return self.assign_name(target.id, value, target)
        if isinstance(target, ast.Tuple):
            return self._unpack(target, value, value_node)
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            return self.write(self.place(target, write=True), value, target)
        self.unsupported(target)

    def _unpack(self, target: ast.Tuple, value, value_node) -> None:
        if isinstance(value, TupleVal):
            items = list(value.items)
        else:
            v = self.materialize(value, value_node)
            if not isinstance(v.type, T.TupleType):
                self.error(value_node, f"cannot unpack a {v.type} value")
            items = [self.value("tuple.get", [v], e, {"index": i}, value_node)
                     for i, e in enumerate(v.type.elems)]
        if len(items) != len(target.elts):
            self.error(target, f"cannot unpack {len(items)} values into {len(target.elts)} names")
        # Every right-hand value is computed before the first store (a, b = b, a).
        items = [self.materialize(x, value_node) if isinstance(x, Value) else x for x in items]
        for t, item in zip(target.elts, items):
            self.store_target(t, item, value_node)

    def _is_private_array(self, value) -> bool:
        if not isinstance(value, ast.Call):
            return False
        fv = self.peek_callee(value.func)
        return isinstance(fv, Obj) and fv.value is kernel_api.private_array

    def _private_array(self, node):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            self.error(node, "sycl.private_array(...) must be assigned to one plain name")
        call = node.value
        if len(call.args) != 2 or call.keywords:
            self.error(call, "use sycl.private_array(dtype, n)")
        elem = self.annotation_type(call.args[0])
        n = self.expr(call.args[1])
        if not isinstance(n, Lit) or not isinstance(n.value, int) or n.value <= 0:
            self.error(call.args[1], "the size of sycl.private_array must be a positive "
                       "compile-time integer constant")
        name = node.targets[0].id
        if name in self.slots:
            self.error(node, f"'{name}' is already a local variable (line {self.slots[name].line})")
        self.declare_slot(name, T.ArrayType(elem, n.value), node)

    # Control flow ---------------------------------------------------------------------
    def stmt_If(self, node):
        cond = self.truth(self.expr(node.test), node.test)
        then, other = Region(), Region()
        self.emit("if", [cond], node=node, regions=[then, other])
        with self.region(then):
            self.block(node.body)
        with self.region(other):
            self.block(node.orelse)

    def stmt_While(self, node):
        if node.orelse:
            self.error(node, "while/else is not supported in kernel code")
        cond, body = Region(), Region()
        self.emit("while", [], node=node, regions=[cond, body])
        with self.region(cond):
            c = self.truth(self.expr(node.test), node.test)
            self.emit("yield", [c], node=node.test)
        self.loop_body(body, node.body)

    def loop_body(self, region, stmts):
        self.loop_depth += 1
        with self.region(region):
            self.block(stmts)
        self.loop_depth -= 1

    def stmt_For(self, node):
        if node.orelse:
            self.error(node, "for/else is not supported in kernel code")
        it = node.iter
        fv = self.peek_callee(it.func) if isinstance(it, ast.Call) else None
        if isinstance(fv, Obj) and fv.value in (range, kernel_api.static_range):
            return self._for_range(node, unroll=fv.value is kernel_api.static_range)
        return self._for_each(node)

    def _for_range(self, node, unroll: bool):
        call = node.iter
        if not isinstance(node.target, ast.Name):
            self.error(node.target, "a range loop needs one plain loop variable")
        if not 1 <= len(call.args) <= 3 or call.keywords:
            self.error(call, "range() takes 1 to 3 positional arguments")
        args = [self.wexpr(a) for a in call.args]
        if len(args) == 1:
            args = [Lit(0), args[0], Lit(1)]
        elif len(args) == 2:
            args.append(Lit(1))
        ty = self.range_type(args, call)
        if isinstance(args[2], Lit) and args[2].value == 0:
            self.error(call.args[2], "range() step must not be zero")
        bounds = [self.coerce(a, ty, n) for a, n in zip(args, call.args + [call] * (3 - len(call.args)))]
        name = node.target.id
        if name not in self.slots:
            # Python's range yields Python ints: the loop variable is weak, counting in the
            # range's type (int64, or the bounds' type: range(n_i32) counts in int32).
            self.declare_slot(name, ty, node.target, weak=True, loop=True)
        elif self.slots[name].type != ty:
            self.error(node.target, f"loop variable '{name}' would have type {ty}, but it has "
                       f"type {self.slots[name].type} (set on line {self.slots[name].line})")
        body = Region()
        attrs = {"var": name, "unroll": True} if unroll else {"var": name}
        self.emit("for", bounds, attrs=attrs, node=node, regions=[body])
        self.loop_body(body, node.body)

    def range_type(self, args, node) -> T.ScalarType:
        args = [a.value if isinstance(a, Weak) else a for a in args]
        typed = [a.type for a in args if isinstance(a, Value)]
        for a in args:
            if isinstance(a, Lit) and not isinstance(a.value, int) or \
                    isinstance(a, Value) and not (isinstance(a.type, T.ScalarType) and a.type.is_int):
                self.error(node, "range() arguments must be integers")
        ty = typed[0] if typed else T.I64
        for t in typed[1:]:
            ty = self.promote("add", ty, t, node)
        return ty

    def _for_each(self, node):
        """``for x in arr`` over a fixed array, vec or tuple: a counted loop."""
        seq = self.expr(node.iter)
        if isinstance(seq, TupleVal):
            self.error(node.iter, "iterate over a tuple with sycl.static_range(len(t))")
        seq = self.materialize(seq, node.iter)
        if not isinstance(seq.type, (T.ArrayType, T.VecType)):
            self.error(node.iter, f"cannot iterate over a {seq.type} value in kernel code",
                       "use range(...) or iterate over a fixed array")
        idx = self.temp_name("for.idx")
        self.declare_slot(idx, T.I64, node)
        bounds = [self.const(0, T.I64, node), self.const(seq.type.n, T.I64, node),
                  self.const(1, T.I64, node)]
        body = Region()
        self.emit("for", bounds, attrs={"var": idx}, node=node, regions=[body])
        with self.region(body):
            i = self.value("var.load", [], T.I64, {"name": idx}, node)
            op = "array.get" if isinstance(seq.type, T.ArrayType) else "vec.get"
            self.store_target(node.target, self.value(op, [seq, i], seq.type.elem, node=node), node)
        self.loop_body(body, node.body)

    def stmt_Break(self, node):
        self._in_loop(node, "break")
        self.emit("break", [], node=node)

    def stmt_Continue(self, node):
        self._in_loop(node, "continue")
        self.emit("continue", [], node=node)

    def _in_loop(self, node, what):
        if self.loop_depth == 0:
            self.error(node, f"'{what}' outside a loop")

    def stmt_Return(self, node):
        if node.value is None:
            if self.return_type not in (None, T.VOID):
                self.error(node, f"this function returns {self.return_type}; return a value")
            self.return_type = self.return_type or T.VOID
            return self.emit("return", [], node=node)
        if self.is_kernel:
            self.error(node, "a kernel returns nothing", "write results to an accessor or USM pointer")
        value = self.expr(node.value)
        if self.return_type is None:
            v = self.materialize(value, node.value)
            self.return_type, self.return_line = v.type, node.lineno
        elif self.return_type == T.VOID:
            self.error(node, "this function returned no value on an earlier line")
        else:
            v = self._return_value(value, node)
        self.emit("return", [v], node=node)

    def _return_value(self, value, node) -> Value:
        if isinstance(value, Value) and value.type != self.return_type and self.return_line:
            self.error(node.value, f"this function returns {self.return_type} (line "
                       f"{self.return_line}) but this return gives {value.type}")
        return self.coerce(value, self.return_type, node.value, "return value")

    def stmt_Assert(self, node):
        cond = self.truth(self.expr(node.test), node.test)
        if node.msg is not None and isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str):
            msg = node.msg.value
        elif node.msg is None:
            msg = ast.unparse(node.test)
        elif isinstance(node.msg, ast.JoinedStr):
            self.unsupported(node.msg)
        else:
            self.error(node.msg, "an assert message must be a string literal")
        self.emit("assert", [cond], attrs={"msg": msg}, node=node)
