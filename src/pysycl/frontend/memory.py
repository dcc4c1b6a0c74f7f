"""Memory locations: accessor elements, USM pointers, device globals, aggregate locals.

An lvalue-like expression lowers to a :class:`~values.Ptr` (a place); reading it is a
``load``, writing a ``store`` (values converted to the element type like NumPy's
``__setitem__``). Places compose, so ``acc[i].pos.x = 1`` is ``acc.ptr`` ->
``ptr.field`` -> ``ptr.field`` -> ``store``. Indices are converted to i64.

=================  ==================================================
``acc[i, j]``      ``acc.ptr acc, i, j`` (``acc[item]``: ``wi.global_id`` per dim)
``p[i]``           ``ptr.offset p, i``
``dg``             ``dg.addr {id}``
``local.x``        ``var.addr local`` + ``ptr.field {field="x"}``
``arr[i]``         ``var.addr arr`` + ``ptr.elem arr, i`` (a local array or vec)
``TABLE[i]``       ``const.table {data}`` + ``ptr.elem`` (host data frozen as a table)
=================  ==================================================
"""
from __future__ import annotations

import ast

import numpy as np

from ..host_objects import device_global, specialization_id
from ..ir import types as T
from ..ir.core import Value
from .lowering import type_name
from .scope import classify_value, host_table
from .values import HostTable, Lit, Obj, Ptr, ReducerHandle, TupleVal, Weak, strong

AGGREGATES = (T.StructType, T.ArrayType, T.VecType, T.TupleType)


class MemoryRules:
    def place(self, node, write: bool = False):
        if isinstance(node, ast.Name):
            return self._table_place(self._name_place(node), node)
        if isinstance(node, ast.Attribute):
            base = self.place(node.value, write)
            if node.attr in ("real", "imag") and isinstance(base, (Lit, Weak)):
                return self._number_part(base, node)
            return self._table_place(self._attribute(strong(base), node), node)
        if isinstance(node, ast.Subscript):
            return self._subscript_chain(node, write)
        return self.wexpr(node)

    def _subscript_chain(self, node: ast.Subscript, write: bool):
        """``x[i][j]...``: the base is evaluated once, then each subscript applies in turn;
        on a D-dimensional accessor, D single subscripts are one element (C++'s
        ``acc[i][j]``, SYCL 2020 4.7.6.9), as ``acc[i, j]``."""
        chain = [node]
        while isinstance(chain[-1].value, ast.Subscript):
            chain.append(chain[-1].value)
        chain.reverse()                       # innermost (next to the base) first
        base = strong(self.place(chain[0].value, write))
        if len(chain) > 1 and isinstance(base, Value) and isinstance(
                base.type, (T.AccessorType, T.LocalAccessorType)) and \
                base.type.dims == len(chain) and not any(
                isinstance(sub.slice, (ast.Tuple, ast.Slice)) for sub in chain):
            index = ast.copy_location(ast.Tuple(elts=[sub.slice for sub in chain],
                                                ctx=ast.Load()), chain[0].slice)
            whole = ast.copy_location(ast.Subscript(value=chain[0].value, slice=index,
                                                    ctx=node.ctx), node)
            return self._subscript(base, whole)
        for sub in chain:
            base = self._subscript(strong(base), sub)
        return base

    def _table_place(self, fv, node):
        """Host data frozen as a table: its address, read-only (``readonly`` names it)."""
        if not isinstance(fv, HostTable):
            return fv
        ptr = self.value("const.table", [], T.PointerType(fv.type, "constant"), {"data": fv.data}, node)
        return Ptr(ptr, fv.name)

    def read(self, place, node):
        if isinstance(place, Ptr):
            return self.value("load", [place.value], place.pointee, node=node)
        return place

    def write(self, place, fv, node) -> None:
        if not isinstance(place, Ptr):
            self.error(node, "cannot assign to this expression in kernel code")
        if place.readonly and place.value.type.space == "constant":
            self.error(node, f"cannot write to '{place.readonly}': host data read by kernel "
                       "code is frozen into the kernel as a read-only table",
                       "pass it as a kernel argument (an accessor or USM pointer) to write to it")
        if place.readonly:
            self.error(node, f"cannot write to read_only accessor '{place.readonly}'",
                       "declare the parameter sycl.write_only or sycl.read_write")
        v = self.coerce(fv, place.pointee, node)
        self.emit("store", [place.value, v], node=node)

    # Names --------------------------------------------------------------------------
    def _name_place(self, node: ast.Name):
        slot = self.slots.get(node.id)
        if slot is not None and isinstance(slot.type, AGGREGATES) and node.id not in self.handles:
            ptr = self.value("var.addr", [], T.PointerType(slot.type, "private"), {"name": node.id}, node)
            return Ptr(ptr)
        fv = self.read_name(node.id, node)
        if isinstance(fv, Obj) and isinstance(fv.value, device_global):
            return self.device_global_place(fv.value, node)
        return fv

    def device_global_place(self, dg: device_global, node) -> Ptr:
        decl = self.session.use_device_global(dg, self.src, node)
        ptr = self.value("dg.addr", [], T.PointerType(decl.type, "global"), {"id": decl.unique_id}, node)
        return Ptr(ptr, device_global=dg)

    # Attributes ---------------------------------------------------------------------
    def _attribute(self, base, node: ast.Attribute):
        attr = node.attr
        if isinstance(base, Ptr) and isinstance(base.pointee, T.StructType):
            field = self._field(base.pointee, attr, node)
            ptr = self.value("ptr.field", [base.value], T.PointerType(field.type, base.value.type.space),
                             {"field": attr}, node)
            return Ptr(ptr, base.readonly)
        if isinstance(base, Ptr):
            base = self.read(base, node)
        if isinstance(base, Value) and isinstance(base.type, T.StructType):
            field = self._field(base.type, attr, node)
            return self.value("struct.get", [base], field.type, {"field": attr}, node)
        if isinstance(base, Value) and isinstance(base.type, T.VecType):
            return self.vec_attribute(base, attr, node)
        if isinstance(base, Value) and isinstance(base.type, T.NUMBER_TYPES):
            return self.number_attribute(base, attr, node)
        if isinstance(base, Obj):
            return self._py_attribute(base.value, node)
        what = type_name(base.type) if isinstance(base, Value) else type(base).__name__
        self.error(node, f"'{attr}' of a {what} value is not supported here",
                   "methods must be called, e.g. it.get_id(0)")

    def _number_part(self, base, node):
        """``.real``/``.imag`` of a Python number: a Python number again."""
        if isinstance(base, Lit):
            if isinstance(base.value, bool):   # True.real is the int 1
                return Lit(int(getattr(base.value, node.attr)))
            return Lit(getattr(base.value, node.attr))
        return Weak(self.number_attribute(base.value, node.attr, node))

    def _field(self, st: T.StructType, attr, node) -> T.StructField:
        try:
            return st.field(attr)
        except KeyError:
            names = ", ".join(f.name for f in st.fields)
            self.error(node, f"struct {st.name} has no field '{attr}' (fields: {names})")

    def _py_attribute(self, obj, node):
        """``np.float32``, ``sycl.math.sqrt``, ``Cls.CONST``: read at compile time."""
        if isinstance(obj, specialization_id):
            self.error(node, "read a specialization constant with "
                       "h.get_specialization_constant(spec_id) (h: sycl.kernel_handler)")
        try:
            value = getattr(obj, node.attr)
        except AttributeError:
            self.error(node, f"{_py_name(obj)} has no attribute '{node.attr}'")
        return classify_value(value, self.src, node, f"{_py_name(obj)}.{node.attr}")

    # Subscripts ---------------------------------------------------------------------
    def _subscript(self, base, node: ast.Subscript):
        if isinstance(node.slice, ast.Slice):
            self.unsupported(node.slice)
        if isinstance(base, Ptr):
            pointee = base.pointee
            if isinstance(pointee, (T.ArrayType, T.VecType)):
                return self._array_elem(base, node)
            base = self.read(base, node)
        if isinstance(base, TupleVal):
            return self._tuple_subscript(base, node)
        if isinstance(base, ReducerHandle):
            return self._reducer_elem(base, node)
        if not isinstance(base, Value):
            self.error(node, f"{_py_name(getattr(base, 'value', base))} cannot be indexed in kernel code")
        return self._value_subscript(base, node)

    def _tuple_subscript(self, base: TupleVal, node):
        """``t[k]``: the element for a constant ``k``; a tuple of numbers indexed at run
        time is frozen into a table (Python numbers stay weak: ``f32 * t[i]`` is f32)."""
        fv = self.expr(node.slice)
        if isinstance(fv, Lit) or isinstance(node.slice, ast.Tuple):
            return base.items[self._const_item(fv, node.slice, len(base.items))]
        arr = _tuple_array(base)
        if arr is None:
            self.error(node.slice, "this index must be a compile-time integer constant",
                       "a tuple indexed at run time must hold only numbers (nested tuples "
                       "of equal length for more dimensions)")
        weak = arr.dtype != np.bool_ and _all_python_numbers(base)
        name = node.value.id if isinstance(node.value, ast.Name) else "tuple"
        table = self._table_place(host_table(arr, self.src, node, name, weak), node)
        i = self.index_value(fv, node.slice)
        elem = table.pointee.elem
        ptr = self.value("ptr.elem", [table.value, i], T.PointerType(elem, "constant"), node=node)
        place = Ptr(ptr, name)
        if weak and isinstance(elem, T.NUMBER_TYPES):
            return Weak(self.read(place, node))
        return place

    def _reducer_elem(self, r: ReducerHandle, node) -> ReducerHandle:
        """``r[i]`` of a span reducer: a reducer of element ``i`` (SYCL 2020 4.10.6.3)."""
        if not r.extent or r.index is not None:
            self.error(node, f"reducer '{r.name}' is not a span reducer and cannot be indexed",
                       "annotate sycl.reducer[T, n] for a reduction over n elements")
        i = self.index_value(self.expr(node.slice), node.slice)
        return ReducerHandle(r.name, r.elem, r.extent, r.op, r.acc, r.identity, i)

    def _array_elem(self, base: Ptr, node):
        idx_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        place = base
        for n in idx_nodes:
            if not isinstance(place.pointee, (T.ArrayType, T.VecType)):
                self.error(node, f"too many indices for a {place.pointee} value")
            elem = place.pointee.elem
            i = self.index_value(self.expr(n), n)
            ptr = self.value("ptr.elem", [place.value, i], T.PointerType(elem, place.value.type.space), node=node)
            place = Ptr(ptr, place.readonly)
        return place

    def _value_subscript(self, base: Value, node):
        t = base.type
        if isinstance(t, (T.AccessorType, T.LocalAccessorType)):
            space = "local" if isinstance(t, T.LocalAccessorType) else "global"
            idx = self.accessor_indices(base, node.slice, node)
            ptr = self.value("acc.ptr", [base] + idx, T.PointerType(t.elem, space), node=node)
            ro = (base.name or "accessor") if isinstance(t, T.AccessorType) and t.mode == "read_only" else None
            return Ptr(ptr, ro)
        if isinstance(t, T.PointerType):
            i = self.index_value(self.expr(node.slice), node.slice)
            return Ptr(self.value("ptr.offset", [base, i], t, node=node),
                       self.readonly_source(base))
        if isinstance(t, (T.ArrayType, T.VecType)):
            i = self.index_value(self.expr(node.slice), node.slice)
            op = "array.get" if isinstance(t, T.ArrayType) else "vec.get"
            return self.value(op, [base, i], t.elem, node=node)
        if isinstance(t, T.TupleType):
            k = self.const_index(node.slice, len(t.elems))
            return self.value("tuple.get", [base], t.elems[k], {"index": k}, node)
        if isinstance(t, T.IndexSpaceType) and t.kind in ("id", "item", "nd_item"):
            d = self.const_index(node.slice, t.dims)
            return self.value("wi.global_id", [], T.I64, {"dim": d}, node)
        if isinstance(t, T.ScalarType) and t.is_int and _one_dim_sub_group_query(node.value):
            # sg.get_local_id()[0]: sub-group queries give an id<1> / range<1> in SYCL
            # 2020 (4.9.1.8), here its one element; [0] of it is that element.
            self.const_index(node.slice, 1)
            return base
        self.error(node, f"a {type_name(t)} value cannot be indexed")

    def accessor_indices(self, acc: Value, slice_node, node) -> list[Value]:
        dims = acc.type.dims
        if isinstance(slice_node, ast.Tuple):
            items = [self.expr(e) for e in slice_node.elts]
        else:
            fv = self.expr(slice_node)
            items = self.index_items(fv, slice_node)
        if len(items) != dims:
            self.error(node, f"accessor '{acc.name or 'accessor'}' has {dims} dimension(s) but "
                       f"{len(items)} index(es) were given")
        return [self.index_value(x, slice_node) for x in items]

    def index_items(self, fv, node) -> list:
        """An index object (item, id tuple, scalar) as a list of per-dimension indices."""
        if isinstance(fv, TupleVal):
            return list(fv.items)
        if isinstance(fv, Value) and isinstance(fv.type, T.IndexSpaceType) and \
                fv.type.kind in ("id", "item", "nd_item"):
            return [self.value("wi.global_id", [], T.I64, {"dim": d}, node) for d in range(fv.type.dims)]
        if isinstance(fv, Value) and isinstance(fv.type, T.TupleType):
            return [self.value("tuple.get", [fv], e, {"index": i}, node) for i, e in enumerate(fv.type.elems)]
        return [fv]

    def index_value(self, fv, node) -> Value:
        if isinstance(fv, Lit) and isinstance(fv.value, int):
            return self.const(fv.value, T.I64, node)
        if isinstance(fv, Obj):
            fv = self.materialize(fv, node)
        if isinstance(fv, Value):
            t = fv.type
            if isinstance(t, T.IndexSpaceType) and t.dims == 1:
                return self.coerce(fv, T.I64, node)
            if isinstance(t, T.ScalarType) and (t.is_int or t.is_bool):
                return self.cast(fv, T.I64, node)
        self.error(node, "indices must be integers", "convert with int(...)")

    def const_index(self, node, n: int) -> int:
        return self._const_item(self.expr(node), node, n)

    def _const_item(self, fv, node, n: int) -> int:
        if not isinstance(fv, Lit) or not isinstance(fv.value, int) or isinstance(fv.value, bool):
            self.error(node, "this index must be a compile-time integer constant")
        k = fv.value + n if fv.value < 0 else fv.value
        if not 0 <= k < n:
            self.error(node, f"index {fv.value} is out of range for {n} elements")
        return k


_SUB_GROUP_INDEX_QUERIES = frozenset({"get_local_id", "get_local_range", "get_group_id",
                                      "get_group_range", "get_max_local_range"})


def _one_dim_sub_group_query(node) -> bool:
    """Whether ``node`` is a call such as ``sg.get_local_id()`` whose integer result
    stands for a one-element id or range (only sub-group queries give those as an int)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in _SUB_GROUP_INDEX_QUERIES and not node.args and not node.keywords


def _tuple_values(tv: TupleVal):
    out = []
    for x in tv.items:
        if isinstance(x, TupleVal):
            out.append(_tuple_values(x))
        elif isinstance(x, Lit) or isinstance(x, Obj) and isinstance(x.value, np.generic):
            out.append(x.value)
        else:
            return None
    return out


def _tuple_array(tv: TupleVal) -> np.ndarray | None:
    """A tuple of numbers (nested: a rectangular table) as an array, or None."""
    values = _tuple_values(tv)
    if values is None:
        return None
    try:
        arr = np.array(values)
    except (ValueError, OverflowError):
        return None
    return arr if arr.dtype.kind in "biufc" and arr.size else None


def _all_python_numbers(tv: TupleVal) -> bool:
    return all(_all_python_numbers(x) if isinstance(x, TupleVal) else isinstance(x, Lit)
               for x in tv.items)


def _py_name(obj) -> str:
    name = getattr(obj, "__name__", None)
    if name:
        return f"'{name}'"
    return f"a {type(obj).__name__} object"
