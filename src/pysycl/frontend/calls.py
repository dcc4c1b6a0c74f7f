"""Calls: builtins (through the catalogue), device functions, constructors, and the
methods of SYCL objects (work-items, groups, accessors, atomics, spec constants,
device globals).

Work-item queries take their dimension as a compile-time constant (it is the ``dim``
attribute of a ``wi.*`` op); without it they return the whole index as a tuple.
"""
from __future__ import annotations

import ast
import types

import numpy as np

from .. import types as pt
from ..host_objects import specialization_id
from ..ir import types as T
from ..ir.builder import Builder
from ..ir.core import Value
from . import builtins as catalogue
from . import complex_numbers  # noqa: F401 - registers the complex functions in the catalogue
from . import group_algorithms  # noqa: F401 - registers the group algorithms in the catalogue
from . import integer_math  # noqa: F401 - registers the integer functions
from . import relational  # noqa: F401 - registers the relational functions
from . import kernel_api
from .diagnostics import loc_of
from .lowering import describe, type_name
from .values import (AtomicHandle, GroupHandle, Lit, Obj, Ptr, ReducerHandle, SpecPlaceholder,
                     TupleVal, Weak)

# method -> (op, takes a dim); kind "item"/"id" (range launches), "nd_item", groups.
# An entry's second item: True (takes a dimension), False (none), "product" (the
# product over the dimensions: a linear range) or "leader" (the op's value is 0).
ITEM_METHODS = {"get_id": ("wi.global_id", True), "get_range": ("wi.global_range", True),
                "get_linear_id": ("wi.global_linear_id", False),
                "get_offset": ("wi.global_offset", True)}
ND_ITEM_METHODS = {
    "get_global_id": ("wi.global_id", True), "get_local_id": ("wi.local_id", True),
    "get_global_range": ("wi.global_range", True), "get_local_range": ("wi.local_range", True),
    "get_group_range": ("wi.group_range", True), "get_global_linear_id": ("wi.global_linear_id", False),
    "get_local_linear_id": ("wi.local_linear_id", False),
    "get_group_linear_id": ("wi.group_linear_id", False),
    "get_offset": ("wi.global_offset", True),
}
GROUP_METHODS = {
    "get_group_id": ("wi.group_id", True), "get_local_id": ("wi.local_id", True),
    "get_local_range": ("wi.local_range", True), "get_group_range": ("wi.group_range", True),
    "get_group_linear_id": ("wi.group_linear_id", False),
    "get_local_linear_id": ("wi.local_linear_id", False),
    # SYCL 2020 4.9.1.7: every work-group of an nd-range has the local range.
    "get_max_local_range": ("wi.local_range", True),
    "get_group_linear_range": ("wi.group_range", "product"),
    "get_local_linear_range": ("wi.local_range", "product"),
    "leader": ("wi.local_linear_id", "leader"),
}
# Sub-group queries are one-dimensional (SYCL 2020 4.9.1.8); results are i64 like wi.*.
SUB_GROUP_METHODS = {
    "get_local_id": ("sg.local_id", False), "get_local_linear_id": ("sg.local_id", False),
    "get_local_range": ("sg.local_range", False), "get_group_id": ("sg.group_id", False),
    "get_group_linear_id": ("sg.group_id", False), "get_group_range": ("sg.group_range", False),
    "get_local_linear_range": ("sg.local_range", False),
    "get_group_linear_range": ("sg.group_range", False),
    "get_max_local_range": ("sg.max_local_range", False), "leader": ("sg.local_id", "leader"),
}
# Accessor methods in kernels: buffer accessors, and the subset local accessors have.
ACCESSOR_METHODS = ("get_range", "get_offset", "get_pointer", "get_multi_ptr")
LOCAL_ACCESSOR_METHODS = ("get_range", "get_pointer", "get_multi_ptr")
# SYCL 2020 accessor sizes (4.7.6.9.1): elements (size, and the deprecated get_count)
# and bytes (byte_size, and the deprecated get_size).
ACCESSOR_SIZES = {"size": False, "get_count": False, "byte_size": True, "get_size": True}
ATOMIC_RMW = {"fetch_add": "add", "fetch_sub": "sub", "fetch_min": "min", "fetch_max": "max",
              "fetch_and": "and", "fetch_or": "or", "fetch_xor": "xor", "exchange": "xchg"}


class CallRules:
    def expr_Call(self, node: ast.Call):
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.unsupported(a)
        for k in node.keywords:
            if k.arg is None:
                self.error(k.value, "star-args (**kwargs) are not supported in kernel code")
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.place(func.value)
            base = base.value if isinstance(base, Weak) else base
            if isinstance(base, Ptr) and base.device_global is not None:
                return self.device_global_method(base, func.attr, node)
            base = self.read(base, func.value)
            if not isinstance(base, Obj):
                return self.method_call(base, func.attr, node)
        if isinstance(func, ast.Subscript):
            callee = self.peek_callee(func.value)
            if isinstance(callee, Obj) and callee.value is kernel_api.atomic_ref:
                params = func.slice.elts if isinstance(func.slice, ast.Tuple) else [func.slice]
                return catalogue.atomic_ref_template(
                    self, node, [self.compile_time_value(p) for p in params])
        return self.call_object(self.expr(func), node)

    def peek_callee(self, func):
        """The compile-time object a callee expression names, without emitting code
        (None if it is not a plain name/attribute chain of Python objects)."""
        if isinstance(func, ast.Name):
            if func.id in self.local_names or func.id in self.env:
                return self.handles.get(func.id, (None,))[0]
            try:
                return self.read_name(func.id, func)
            except Exception:
                return None
        if isinstance(func, ast.Attribute):
            base = self.peek_callee(func.value)
            if isinstance(base, Obj) and hasattr(base.value, func.attr):
                return Obj(getattr(base.value, func.attr))
        return None

    def call_object(self, callee, node):
        if not isinstance(callee, Obj):
            self.error(node.func, f"a {describe(callee)} value is not callable")
        obj = callee.value
        rule = catalogue.lookup(obj)
        if rule is not None:
            return rule.lower(self, node)
        kind = getattr(obj, "_pysycl_function_kind", None)
        if kind == "kernel":
            self.error(node, f"kernel '{obj.name}' cannot be called from kernel code",
                       "move the shared code into a @sycl.device function")
        if kind in ("device", "external"):
            return self.call_device(obj, node)
        if isinstance(obj, type) and getattr(obj, "__pysycl_struct__", False):
            return self.construct(T.type_from_dtype(obj.dtype), node, obj.dtype)
        if isinstance(obj, np.dtype):
            return self.construct(T.type_from_dtype(obj), node, obj)
        if obj is pt.vec or obj is np.dtype:
            return self.compile_time_call(obj, node)
        hint = None
        if isinstance(obj, types.FunctionType):
            # A plain Python function: its body may well be kernel code; it is only not
            # marked as such (Numba users expect helpers to be compiled on demand).
            hint = (f"decorate '{obj.__name__}' with @sycl.device to compile it for the "
                    "device (it can then be called from kernels and stays callable on the "
                    "host)")
        self.error(node, f"calling {describe(obj)} is not supported in kernel code", hint)

    def compile_time_call(self, fn, node):
        """``sycl.vec(np.float32, 4)`` / ``np.dtype(...)`` with constant arguments."""
        args = [self.compile_time_value(a) for a in node.args]
        kwargs = {k.arg: self.compile_time_value(k.value) for k in node.keywords}
        try:
            return Obj(fn(*args, **kwargs))
        except (TypeError, ValueError) as e:
            self.error(node, f"invalid type: {e}")

    def compile_time_value(self, node):
        fv = self.expr(node)
        if isinstance(fv, Lit):
            return fv.value
        if isinstance(fv, Obj):
            return fv.value
        if isinstance(fv, TupleVal):
            return tuple(x.value for x in fv.items if isinstance(x, (Lit, Obj)))
        self.error(node, "this must be a compile-time constant")

    def construct(self, ty: T.Type, node, dtype: np.dtype):
        """``Point(1, 2.0)``, ``Point(x=1, y=2.0)``, ``Point((1, 2.0))``, ``V4(1, 2, 3, 4)``;
        a struct field not given takes its default (the ``@sycl.struct`` class's, as on
        the host)."""
        args = [self.expr(a) for a in node.args]
        if len(args) == 1 and not node.keywords:
            return self.coerce(args[0], ty, node)
        if isinstance(ty, T.StructType):
            names = [f.name for f in ty.fields]
            if len(args) > len(names):
                self.error(node, f"{type_name(ty)}() takes at most {len(names)} field values")
            by_name = dict(zip(names, args))
            for k in node.keywords:
                if k.arg not in names:
                    self.error(k, f"{type_name(ty)} has no field '{k.arg}'")
                by_name[k.arg] = self.expr(k.value)
            if len(by_name) < len(names):
                defaults = pt.value_from_default(dtype)
                for n in names:
                    by_name.setdefault(n, _constant(defaults[n]))
            return self.coerce(TupleVal(tuple(by_name[n] for n in names)), ty, node)
        return self.coerce(TupleVal(tuple(args)), ty, node)

    def call_device(self, fobj, node):
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        bound = self.session.bind_call(fobj, args, kwargs, self, node)
        func = self.session.callee(fobj, bound, self, node)
        operands = [self.coerce(fv, p.type, node, "argument") for fv, p in zip(bound, func.params)]
        op = self.emit("call", operands, func.return_type, {"callee": func.name}, node)
        return op.result if op.result is not None else Obj(None)

    # Methods --------------------------------------------------------------------------
    def method_call(self, base, name: str, node):
        if isinstance(base, AtomicHandle):
            return self.atomic_method(base, name, node)
        if isinstance(base, GroupHandle):
            table = GROUP_METHODS if base.scope == "work_group" else SUB_GROUP_METHODS
            return self.query(table, name, base.dims, node, base.scope.replace("_", "-"))
        if isinstance(base, ReducerHandle):
            return self.reducer_method(base, name, node)
        if isinstance(base, SpecPlaceholder):
            self._no_args(node, name, "get")
            decl = self.session.use_spec_constant(base.spec_id, self.src, node)
            return self.value("spec.get", [], decl.type, {"id": decl.unique_id}, node)
        if isinstance(base, Value):
            t = base.type
            if isinstance(t, T.IndexSpaceType):
                return self.index_method(base, name, node)
            if isinstance(t, (T.AccessorType, T.LocalAccessorType)):
                return self.accessor_method(base, name, node)
            if isinstance(t, T.VecType):
                return self.vec_method(base, name, node)
            if isinstance(t, T.NUMBER_TYPES):
                return self.number_method(base, name, node)
        self.error(node.func, f"'{name}' is not a method of {describe(base) if not isinstance(base, Value) else 'a ' + type_name(base.type) + ' value'}")

    def _no_args(self, node, name, expected):
        if name != expected or node.args or node.keywords:
            self.error(node, f"a spec_constant placeholder only has .{expected}()")

    def index_method(self, it: Value, name: str, node):
        kind, dims = it.type.kind, it.type.dims
        if kind == "kernel_handler":
            return self.kernel_handler_method(name, node)
        if kind == "nd_item":
            if name == "get_group":
                if node.args:
                    d = self.const_index(node.args[0], dims)
                    return self.value("wi.group_id", [], T.I64, {"dim": d}, node)
                return GroupHandle("work_group", dims)
            if name == "get_sub_group":
                return GroupHandle("sub_group", 1)
            if name == "barrier":
                # nd_item::barrier([fence_space]) (deprecated in SYCL 2020): a work-group
                # barrier, as group_barrier(nd.get_group()); every fence space is fenced.
                if len(node.args) > 1 or node.keywords:
                    self.error(node, "barrier() takes at most one fence space")
                for arg in node.args:
                    self.expr(arg)
                self.emit("barrier", [], attrs={"scope": "work_group"}, node=node)
                return Obj(None)
            return self.query(ND_ITEM_METHODS, name, dims, node, "nd_item")
        if kind in ("item", "id"):
            return self.query(ITEM_METHODS, name, dims, node, kind)
        self.error(node.func, f"'{name}' is not a method of {kind}")

    def query(self, table, name, dims, node, what):
        entry = table.get(name)
        if entry is None:
            self.error(node.func, f"'{name}' is not a method of sycl.{what}",
                       "methods: " + ", ".join(sorted(table)))
        op, takes_dim = entry
        if node.keywords or len(node.args) > (1 if takes_dim is True else 0):
            self.error(node, f"{name}() takes {'at most one dimension argument' if takes_dim is True else 'no arguments'}")
        if takes_dim == "product":
            total = self.value(op, [], T.I64, {"dim": 0}, node)
            for d in range(1, dims):
                total = self.value("mul", [total, self.value(op, [], T.I64, {"dim": d}, node)],
                                   T.I64, node=node)
            return total
        if takes_dim == "leader":
            first = self.value(op, [], T.I64, node=node)
            return self.value("cmp", [first, self.const(0, T.I64, node)], T.BOOL,
                              {"pred": "eq"}, node)
        if not takes_dim:
            return self.value(op, [], T.I64, node=node)
        if node.args:
            return self.value(op, [], T.I64, {"dim": self.const_index(node.args[0], dims)}, node)
        return TupleVal(tuple(self.value(op, [], T.I64, {"dim": d}, node) for d in range(dims)))

    def kernel_handler_method(self, name, node):
        if name != "get_specialization_constant":
            self.error(node.func, f"'{name}' is not available on a kernel_handler inside kernels",
                       "use h.get_specialization_constant(spec_id)")
        if len(node.args) != 1 or node.keywords:
            self.error(node, "get_specialization_constant takes one specialization_id")
        spec = self.expr(node.args[0])
        if not (isinstance(spec, Obj) and isinstance(spec.value, specialization_id)):
            self.error(node.args[0], "get_specialization_constant needs a sycl.specialization_id "
                       "defined outside the kernel")
        decl = self.session.use_spec_constant(spec.value, self.src, node)
        return self.value("spec.get", [], decl.type, {"id": decl.unique_id}, node)

    def accessor_method(self, acc: Value, name: str, node):
        dims = acc.type.dims
        if name == "get_range":
            if node.args:
                d = self.const_index(node.args[0], dims)
                return self.value("acc.range", [acc], T.I64, {"dim": d}, node)
            return TupleVal(tuple(self.value("acc.range", [acc], T.I64, {"dim": d}, node)
                                  for d in range(dims)))
        if name in ACCESSOR_SIZES:
            if node.args:
                self.error(node, f"{name}() takes no arguments")
            total = self.value("acc.range", [acc], T.I64, {"dim": 0}, node)
            for d in range(1, dims):
                total = self.value("mul", [total, self.value("acc.range", [acc], T.I64,
                                                             {"dim": d}, node)], T.I64, node=node)
            if ACCESSOR_SIZES[name]:
                item = self.const(acc.type.elem.size, T.I64, node)
                total = self.value("mul", [total, item], T.I64, node=node)
            return total
        buffer_acc = isinstance(acc.type, T.AccessorType)
        if name not in (ACCESSOR_METHODS if buffer_acc else LOCAL_ACCESSOR_METHODS):
            self.error(node.func, f"'{name}' is not an accessor method in kernel code",
                       "available: acc[i], acc.get_range(), acc.get_range(d), acc.get_offset() "
                       "(buffer accessors), acc.size(), acc.byte_size(), acc.get_pointer(), "
                       "acc.get_multi_ptr()")
        if name == "get_offset":
            if node.args:
                d = self.const_index(node.args[0], dims)
                return self.value("acc.offset", [acc], T.I64, {"dim": d}, node)
            return TupleVal(tuple(self.value("acc.offset", [acc], T.I64, {"dim": d}, node)
                                  for d in range(dims)))
        if node.args:
            self.error(node, f"{name}() takes no arguments")
        if buffer_acc:   # the buffer's first element, whatever the offset (SYCL 2020)
            return self.value("acc.base", [acc], T.PointerType(acc.type.elem, "global"),
                              node=node)
        zero = self.const(0, T.I64, node)
        return self.value("acc.ptr", [acc] + [zero] * dims,
                          T.PointerType(acc.type.elem, "local"), node=node)

    def atomic_method(self, a: AtomicHandle, name: str, node):
        """The methods of SYCL 2020's atomic_ref (4.15.3): each takes its values, then an
        optional memory order (success and failure for compare_exchange) and scope."""
        if node.keywords:
            self.error(node, f"{name}() takes positional arguments only")
        if name == "is_lock_free":
            # Every type atomic_ref takes here (32- and 64-bit, the latter only where the
            # device has atomic64) maps onto native atomic instructions on every backend.
            if node.args:
                self.error(node, "is_lock_free() takes no arguments")
            return self.const(True, T.BOOL, node)
        nvalues = {"load": 0, "store": 1, "compare_exchange_strong": 2,
                   "compare_exchange_weak": 2}.get(name, 1 if name in ATOMIC_RMW else None)
        if nvalues is None:
            self.error(node, f"atomic_ref has no method {name}()")
        norders = 2 if name.startswith("compare_exchange") else 1
        extra = node.args[nvalues:]
        if len(node.args) < nvalues or len(extra) > norders + 1:
            self.error(node, f"atomic_ref.{name}() takes {nvalues} value(s), then an optional "
                       f"memory order{' (or success and failure orders)' if norders == 2 else ''}"
                       " and scope")
        attrs = self._atomic_orders(a, name, extra, norders, node)
        args = [self.expr(x) for x in node.args[:nvalues]]
        if name in ATOMIC_RMW:
            if name in ("fetch_and", "fetch_or", "fetch_xor") and a.elem.is_float:
                self.error(node, f"{name} needs an integer atomic_ref, not {type_name(a.elem)}")
            v = self.coerce(args[0], a.elem, node)
            return self.value("atomic.rmw", [a.ptr, v], a.elem, dict(attrs, op=ATOMIC_RMW[name]), node)
        if name == "load":
            return self.value("atomic.load", [a.ptr], a.elem, attrs, node)
        if name == "store":
            self.emit("atomic.store", [a.ptr, self.coerce(args[0], a.elem, node)], attrs=attrs, node=node)
            return Obj(None)
        return self._cmpxchg(a, args, attrs, node)

    def _atomic_orders(self, a: AtomicHandle, name: str, extra, norders: int, node) -> dict:
        """``{"order", "scope"}`` of one operation: the atomic_ref's defaults, replaced by
        the orders and scope given after the values. SYCL's rules: a load takes no
        release order, a store no acquire order, a failure order is no stronger than
        the success order and neither release nor acq_rel."""
        orders, scope = [], None
        for arg in extra:
            fv = self.expr(arg)
            value = fv.value if isinstance(fv, Obj) else None
            if isinstance(value, pt.memory_order) and len(orders) < norders and scope is None:
                orders.append(value.value)
            elif isinstance(value, pt.memory_scope) and scope is None:
                scope = value.value
            else:
                self.error(arg, f"atomic_ref.{name}(): expected a sycl.memory_order or "
                           "sycl.memory_scope here (orders first, then the scope)")
        scope = a.scope if scope is None else scope
        # A default order is the atomic_ref's, which a load reads as its read order and
        # a store as its write order (acq_rel: acquire / release), as SYCL's defaults do.
        order = orders[0] if orders else a.order
        bad = {"load": ("release", "acq_rel"), "store": ("acquire", "acq_rel")}.get(name, ())
        if orders and order in bad:
            self.error(node, f"atomic_ref.{name}() cannot use memory_order.{order}")
        if len(orders) == 2:
            rank = ("relaxed", "acquire", "release", "acq_rel", "seq_cst").index
            failure = orders[1]
            if failure in ("release", "acq_rel") or rank(failure) > rank(order) and \
                    not (failure == "acquire" and order in ("acq_rel", "seq_cst")):
                self.error(node, f"atomic_ref.{name}(): failure order {failure} is not allowed "
                           f"with success order {order}")
        return {"order": order, "scope": scope}

    def _cmpxchg(self, a: AtomicHandle, args, attrs, node):
        """C++ ``compare_exchange_strong(T& expected, T desired) -> bool``: when
        ``expected`` is a local it receives the old value, as the reference would. The
        weak form is the strong one (which may not fail spuriously, so it satisfies the
        weak form's contract)."""
        expected = self.coerce(args[0], a.elem, node)
        desired = self.coerce(args[1], a.elem, node)
        old = self.value("atomic.cmpxchg", [a.ptr, expected, desired], a.elem, attrs, node)
        # Success is "the bits matched", as the hardware compares: a float == would call
        # -0.0 and 0.0 equal (a success that stored nothing) and NaN unequal to itself
        # (a failure that did store, so a CAS loop over a NaN would never end).
        seen, want = old, expected
        if a.elem.is_float:
            bits = T.I32 if a.elem.size == 4 else T.I64
            seen, want = (self.value("bitcast", [v], bits, node=node) for v in (old, expected))
        ok = self.value("cmp", [seen, want], T.BOOL, {"pred": "eq"}, node)
        target = node.args[0]
        if isinstance(target, ast.Name) and target.id in self.slots:
            self.assign_name(target.id, old, target)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            # expected[i] or s.field: C++'s T& receives the old value there too.
            place = self.place(target, write=True)
            if isinstance(place, Ptr):
                self.write(place, old, target)
        return ok

    # Reducers (SYCL 2020 4.10.6.3) --------------------------------------------------------
    def reducer_target(self, target) -> ReducerHandle | None:
        """The reducer (element) an assignment target names, or None."""
        root = target.value if isinstance(target, ast.Subscript) else target
        if not (isinstance(root, ast.Name) and isinstance(self.env.get(root.id), ReducerHandle)
                and root.id not in self.slots and root.id not in self.handles):
            return None
        place = self.place(target, write=True)
        if not isinstance(place, ReducerHandle):
            self.error(target, f"'{root.id}' is a reducer; combine into it with +=, *=, "
                       "&=, |=, ^= or combine(x)")
        return place

    def reducer_method(self, r: ReducerHandle, name: str, node):
        if name == "combine" and len(node.args) == 1 and not node.keywords:
            self.reducer_combine(r, self.wexpr(node.args[0]), node)
            return Obj(None)
        if name == "identity" and not node.args and not node.keywords:
            return r.identity
        self.error(node.func, f"a reducer has combine(x) and identity(), not {name}() with "
                   "these arguments", "r += x, r *= x, r &= x, r |= x, r ^= x, "
                   "r[i] += x for a span reducer")

    def reducer_combine(self, r: ReducerHandle, fv, node) -> None:
        """``acc = op(acc, x)`` on the work-item's accumulator (an element of it for a
        span reducer). Marked reassociable: SYCL leaves the order of a reduction open."""
        if r.extent and r.index is None:
            self.error(node, f"'{r.name}' is a span reducer of {r.extent} elements: "
                       f"combine into an element, {r.name}[i]")
        x = self.coerce(self.operand(fv, node), r.elem, node)
        b = Builder(self.regions[-1], loc_of(self.src, node))
        if r.index is None:
            b.store_var(r.acc, b.combine(r.op, b.load_var(r.acc, r.elem), x, reassoc=True))
            return
        arr = T.ArrayType(r.elem, r.extent)
        base = b.op("var.addr", type=T.PointerType(arr, "private"), name=r.acc)
        p = b.op("ptr.elem", base, r.index, type=T.PointerType(r.elem, "private"))
        b.store(p, b.combine(r.op, b.load(p), x, reassoc=True))

    def device_global_method(self, place: Ptr, name: str, node):
        if name == "get" and not node.args:
            return self.read(place, node)
        if name == "set" and len(node.args) == 1:
            self.write(place, self.expr(node.args[0]), node)
            return Obj(None)
        self.error(node.func, f"device_global has no method {name}() here",
                   "use dg.get(), dg.set(v), dg[i] or dg.field")


def _constant(value):
    """A NumPy default value as a compile-time constant (arrays element by element)."""
    if isinstance(value, np.ndarray):
        return TupleVal(tuple(_constant(v) for v in value))
    return Obj(value)
