"""The state shared while one Python function is lowered to one IR function: the op
builder (region stack, locations), conversions between types, and local variables.

Python locals become named slots: one ``var`` per name at
function entry, typed from the first assignment; ``var.load``/``var.store`` per use.
Aggregates are read and written in place through ``var.addr`` (see ``memory``). The
expression, statement, memory and call rules are mixins over this class.
"""
from __future__ import annotations

import ast
import contextlib

import numpy as np

from .._records import Record
from ..ir import types as T
from ..ir.core import Op, Region, Value
from ..ir.ops import opdef
from .diagnostics import error_at, loc_of
from .scope import classify_value
from .source import ParsedFunction, lookup_name
from .typing_rules import binary_result, default_type, literal_fits
from .values import HANDLES, AtomicHandle, Lit, Obj, ReducerHandle, TupleVal, Weak, is_weak


class Slot(Record):
    """A local variable's slot (a mutable record, _records.py)."""

    _fields = ("type", "line", "weak", "loop")
    type: T.Type
    line: int          # where the first assignment set the type (for the error message)
    weak: bool = False  # holds a Python number: reads are :class:`Weak` values
    loop: bool = False  # a range loop variable (typed by the range, never inferred)

    def __init__(self, type, line, weak=False, loop=False):
        self.type = type
        self.line = line
        self.weak = weak
        self.loop = loop


def type_name(t: T.Type) -> str:
    """A type as users know it: NumPy names for scalars and complex numbers."""
    if isinstance(t, T.NUMBER_TYPES):
        return str(t.dtype)
    return str(t)


def fv_type_name(fv) -> str:
    if isinstance(fv, Value):
        return type_name(fv.type)
    if isinstance(fv, Lit):
        return f"Python {type(fv.value).__name__}"
    if isinstance(fv, Weak):
        return f"Python {fv.py_type.__name__}"
    if isinstance(fv, TupleVal):
        return "tuple"
    if isinstance(fv, Obj):
        return type(fv.value).__name__
    return type(fv).__name__


class LoweringBase:
    """One function being lowered. ``env`` maps parameter names to their values."""

    def __init__(self, session, parsed: ParsedFunction, env: dict, return_type, is_kernel: bool,
                 weak_hints: dict | None = None):
        self.session = session
        self.parsed = parsed
        self.src = parsed.source
        self.fn = parsed.fn
        self.env = dict(env)
        self.return_type = return_type      # None: inferred from the first `return`
        self.return_line = 0
        self.is_kernel = is_kernel
        self.slots: dict[str, Slot] = {}
        self.handles: dict[str, tuple] = {}
        # Locals holding a pointer into a read_only accessor (acc.get_pointer()): name ->
        # the accessor's name, so writes through them are refused as C++'s const does.
        self.readonly_ptrs: dict[str, str] = {}
        self.entry_ops: list[Op] = []
        self.regions: list[Region] = []
        self.loop_depth = 0
        self._temp = 0
        self.local_names = assigned_names(parsed.node)
        # Weak locals (see assign_name): name -> (type, line) fixed by an earlier pass, and
        # name -> [(type, line)] of the strong values assigned to a weak local in this pass.
        self.weak_hints: dict[str, tuple[T.Type, int]] = dict(weak_hints or {})
        self.weak_strong: dict[str, list[tuple[T.Type, int]]] = {}

    # Errors and emission ------------------------------------------------------------
    def error(self, node, message, hint=None):
        error_at(self.src, node, message, hint)

    def emit(self, name: str, operands=(), type: T.Type = T.VOID, attrs=None, node=None,
             regions=None) -> Op:
        d = opdef(name)  # only catalogue ops leave the frontend
        missing = [a for a in d.attrs if a not in (attrs or {})]
        assert not missing, f"frontend bug: op {name} without attrs {missing}"
        op = Op(name, operands, type, attrs, regions, loc_of(self.src, node))
        self.regions[-1].append(op)
        return op

    def value(self, name, operands, type, attrs=None, node=None) -> Value:
        return self.emit(name, operands, type, attrs, node).result

    @contextlib.contextmanager
    def region(self, region: Region):
        self.regions.append(region)
        try:
            yield region
        finally:
            self.regions.pop()

    def temp_name(self, what: str) -> str:
        # A dot never occurs in a Python identifier: temporaries cannot clash with locals.
        self._temp += 1
        return f"{what}.{self._temp}"

    # Constants and conversions --------------------------------------------------------
    def const(self, py, ty: T.Type, node) -> Value:
        if isinstance(ty, T.ComplexType):
            return self.value("const", [], ty, {"value": ty.const_bytes(py)}, node)
        if isinstance(ty, T.ScalarType):
            py = bool(py) if ty.is_bool else int(py) if ty.is_int else float(py)
            return self.value("const", [], ty, {"value": py}, node)
        if isinstance(ty, T.VecType):
            return self.value("vec.make", [self.const(py, ty.elem, node)], ty, node=node)
        raise AssertionError(f"const of {ty}")

    def materialize(self, fv, node) -> Value:
        """A run-time value for ``fv`` (weak literals take their default type, weak values
        their storage type)."""
        if isinstance(fv, Value):
            return fv
        if isinstance(fv, Weak):
            return fv.value
        if isinstance(fv, Lit):
            return self.const(fv.value, default_type(fv.value), node)
        if isinstance(fv, Obj) and isinstance(fv.value, np.void):
            ty = T.type_from_dtype(fv.value.dtype)
            return self.value("const", [], ty, {"value": fv.value.tobytes()}, node)
        if isinstance(fv, Obj) and isinstance(fv.value, np.generic):
            return self.const(fv.value.item(), T.number_from_dtype(fv.value.dtype), node)
        if isinstance(fv, TupleVal):
            items = [self.materialize(x, node) for x in fv.items]
            return self.value("tuple.make", items, T.TupleType(tuple(v.type for v in items)), node=node)
        what = fv.value if isinstance(fv, Obj) else fv
        self.error(node, f"{describe(what)} cannot be used as a value in kernel code")

    def cast(self, v: Value, ty: T.Type, node) -> Value:
        return v if v.type == ty else self.value("cast", [v], ty, node=node)

    def coerce(self, fv, ty: T.Type, node, what: str = "value") -> Value:
        """Convert ``fv`` to ``ty`` like NumPy assignment (``astype``). A weak run-time
        int converted to a narrower int wraps (NumPy would raise OverflowError for an
        out-of-range Python int; a kernel cannot)."""
        if isinstance(fv, Weak):
            fv = fv.value
        if isinstance(fv, Obj) and isinstance(fv.value, (np.generic, np.void)):
            fv = self.materialize(fv, node)
        if isinstance(fv, Lit) and isinstance(fv.value, complex) and not isinstance(ty, T.ComplexType):
            self.error(node, f"cannot convert a Python complex {what} to {type_name(ty)}",
                       "take its .real, .imag or abs() first")
        if isinstance(fv, Lit) and isinstance(ty, T.ComplexType):
            return self.const(fv.value, ty, node)
        if isinstance(fv, Lit) and isinstance(ty, (T.ScalarType, T.VecType)):
            elem = ty if isinstance(ty, T.ScalarType) else ty.elem
            if not literal_fits(fv.value, elem):
                self.error(node, f"Python integer {fv.value} is out of bounds for {type_name(elem)}")
            return self.const(fv.value, ty, node)
        if isinstance(fv, TupleVal):
            return self._coerce_items(list(fv.items), ty, node, what)
        if not isinstance(fv, Value):
            self.error(node, f"cannot use {describe(fv)} as a {type_name(ty)} {what}")
        src = fv.type
        if src == ty:
            return fv
        if isinstance(src, T.IndexSpaceType) and src.dims == 1 and src.kind in ("id", "item", "nd_item"):
            return self.cast(self.value("wi.global_id", [], T.I64, {"dim": 0}, node), ty, node)
        if isinstance(src, T.ScalarType) and isinstance(ty, T.ScalarType):
            return self.cast(fv, ty, node)
        if isinstance(ty, T.ComplexType) and isinstance(src, T.NUMBER_TYPES):
            return self.to_complex(fv, ty, node)
        if isinstance(src, T.ComplexType):
            self.error(node, f"cannot convert a {type_name(src)} {what} to {type_name(ty)}",
                       "take its .real, .imag or abs() first" if isinstance(ty, T.ScalarType)
                       else None)
        if isinstance(src, T.ScalarType) and isinstance(ty, T.VecType):
            return self.value("vec.make", [self.cast(fv, ty.elem, node)], ty, node=node)
        if isinstance(src, T.TupleType) and isinstance(ty, (T.StructType, T.ArrayType, T.VecType)):
            items = [self.value("tuple.get", [fv], e, {"index": i}, node) for i, e in enumerate(src.elems)]
            return self._coerce_items(items, ty, node, what)
        self.error(node, f"cannot convert a {type_name(src)} {what} to {type_name(ty)}")

    def _coerce_items(self, items: list, ty: T.Type, node, what) -> Value:
        if isinstance(ty, T.StructType):
            elems, op = [f.type for f in ty.fields], "struct.make"
        elif isinstance(ty, T.ArrayType):
            elems, op = [ty.elem] * ty.n, "array.make"
        elif isinstance(ty, T.VecType):
            elems, op = [ty.elem] * ty.n, "vec.make"
        elif isinstance(ty, T.TupleType):
            elems, op = list(ty.elems), "tuple.make"
        else:
            self.error(node, f"cannot convert a tuple {what} to {type_name(ty)}")
        if len(items) != len(elems):
            self.error(node, f"{type_name(ty)} needs {len(elems)} values, got {len(items)}")
        vals = [self.coerce(x, e, node, what) for x, e in zip(items, elems)]
        return self.value(op, vals, ty, node=node)

    def to_complex(self, v: Value, ty: T.ComplexType, node) -> Value:
        """A real or complex value as complex type ``ty`` (part by part, like NumPy)."""
        if isinstance(v.type, T.ComplexType):
            re, im = self.complex_parts(v, node)
        else:
            re, im = v, self.const(0.0, ty.elem, node)
        re, im = self.cast(re, ty.elem, node), self.cast(im, ty.elem, node)
        return self.value("complex.make", [re, im], ty, node=node)

    def complex_parts(self, z: Value, node) -> tuple[Value, Value]:
        elem = z.type.elem
        return (self.value("complex.real", [z], elem, node=node),
                self.value("complex.imag", [z], elem, node=node))

    def truth(self, fv, node) -> Value:
        """``bool(x)`` for conditions: numbers compare with zero, as Python does."""
        if isinstance(fv, Lit):
            return self.const(bool(fv.value), T.BOOL, node)
        v = self.materialize(fv, node)
        if v.type == T.BOOL:
            return v
        if isinstance(v.type, T.ComplexType):
            zero = self.const(0.0, v.type.elem, node)
            re, im = (self.value("cmp", [x, zero], T.BOOL, {"pred": "ne"}, node)
                      for x in self.complex_parts(v, node))
            return self.value("or", [re, im], T.BOOL, node=node)
        if not isinstance(v.type, T.ScalarType):
            self.error(node, f"a {type_name(v.type)} value cannot be used as a condition")
        zero = self.const(0, v.type, node)
        return self.value("cmp", [v, zero], T.BOOL, {"pred": "ne"}, node)

    # Local variables -------------------------------------------------------------------
    def declare_slot(self, name: str, ty: T.Type, node, weak: bool = False,
                     loop: bool = False) -> Slot:
        slot = Slot(ty, getattr(node, "lineno", 0), weak, loop)
        self.slots[name] = slot
        self.entry_ops.append(Op("var", [], T.VOID, {"name": name, "type": ty}, None,
                                 loc_of(self.src, node)))
        return slot

    def assign_name(self, name: str, fv, node) -> None:
        if isinstance(self.env.get(name), ReducerHandle) and name not in self.slots:
            self.error(node, f"cannot assign to reducer '{name}'",
                       f"combine into it: {name} += x or {name}.combine(x)")
        if isinstance(fv, HANDLES) or (isinstance(fv, Obj) and not isinstance(fv.value, (np.generic, np.void))):
            if name in self.slots:
                self.error(node, f"cannot assign {describe(fv)} to '{name}', which holds a "
                           f"{type_name(self.slots[name].type)} value (line {self.slots[name].line})")
            self.handles[name] = (fv, self.regions[-1])
            return
        if name in self.handles:
            self.error(node, f"'{name}' already names {describe(self.handles[name][0])} and cannot "
                       "become a run-time value")
        slot = self.slots.get(name)
        if slot is None:
            hint = self.weak_hints.get(name)
            if is_weak(fv) and hint is not None:
                # A weak local that strong values are assigned to: it has their type from
                # its first assignment on (rule 3 of the frontend docstring).
                v = self.coerce(fv, hint[0], node)
                slot = self.declare_slot(name, hint[0], node)
                slot.line = hint[1]
            elif is_weak(fv):
                v = self.weak_storage(fv, node)
                slot = self.declare_slot(name, v.type, node, weak=True)
            else:
                v = self.materialize(fv, node)
                slot = self.declare_slot(name, v.type, node)
        elif slot.weak and not slot.loop and not is_weak(fv) and isinstance(
                self._scalar_type(fv), T.NUMBER_TYPES):
            # First pass: remember the strong type; the compiler lowers the function again
            # with the local typed (``weak_local_types``).
            self.weak_strong.setdefault(name, []).append(
                (self._scalar_type(fv), getattr(node, "lineno", 0)))
            v = self.coerce(fv, slot.type, node)
        else:
            self._check_reassign(name, slot, fv, node)
            v = self.coerce(fv, slot.type, node)
        if isinstance(v.type, T.PointerType):
            source = self.readonly_source(v)
            if source is not None:
                self.readonly_ptrs[name] = source
        self.emit("var.store", [v], attrs={"name": name}, node=node)

    def readonly_source(self, v: Value) -> str | None:
        """The read_only accessor a pointer value points into, or None: SYCL 2020 gives
        ``get_pointer()``/``get_multi_ptr()`` of such an accessor a pointer to const."""
        while isinstance(v, Value) and v.owner is not None:
            op = v.owner
            if op.name in ("acc.base", "acc.ptr"):
                t = op.operands[0].type
                if isinstance(t, T.AccessorType) and t.mode == "read_only":
                    return op.operands[0].name or "accessor"
                return None
            if op.name == "var.load":
                return self.readonly_ptrs.get(op.attrs.get("name"))
            if op.name != "ptr.offset":
                return None
            v = op.operands[0]
        return None

    def weak_storage(self, fv, node) -> Value:
        """A Python number as a run-time value: int64, float64 or complex128."""
        if isinstance(fv, Lit):
            return self.materialize(fv, node)
        return self.coerce(fv.value, default_type(fv.py_type(0)), node)

    @staticmethod
    def _scalar_type(fv):
        if isinstance(fv, Value):
            return fv.type
        if isinstance(fv, Obj) and isinstance(fv.value, np.generic):
            return T.number_from_dtype(fv.value.dtype)
        return None

    def weak_local_types(self) -> dict[str, tuple[T.Type, int]]:
        """Types for the weak locals that strong values were assigned to in this pass: the
        NumPy promotion of the Python number kind with every such type (one type in the
        usual case: ``acc = 0.0`` then ``acc += x_f32`` gives float32)."""
        out = {}
        for name, assigned in self.weak_strong.items():
            st = self.slots[name].type
            ty = complex if isinstance(st, T.ComplexType) else int if st.is_int else float
            for t, _line in assigned:
                try:
                    ty = binary_result("add", ty, t)
                except TypeError:
                    ty = t  # no common type: the next pass reports the mismatch
            out[name] = (ty, assigned[0][1])
        return out

    def _check_reassign(self, name, slot, fv, node) -> None:
        ok = True
        if isinstance(fv, (Lit, Weak)):
            st = slot.type
            pv = fv.value if isinstance(fv, Lit) else fv.py_type(0)
            # A Python number converts to a local of its kind or a wider one (an int to
            # a float, a float to a complex number), not to a narrower one.
            ok = isinstance(st, T.ComplexType) and not isinstance(pv, bool) or \
                isinstance(st, T.ScalarType) and (
                    (isinstance(pv, bool) and st.is_bool)
                    or (isinstance(pv, int) and not isinstance(pv, bool) and not st.is_bool)
                    or (isinstance(pv, float) and st.is_float))
        elif isinstance(fv, Value):
            ok = fv.type == slot.type
        elif isinstance(fv, Obj) and isinstance(fv.value, np.generic):
            ok = T.number_from_dtype(fv.value.dtype) == slot.type
        if not ok:
            self.error(node, f"cannot assign a {fv_type_name(fv)} value to local variable '{name}', "
                       f"which has type {type_name(slot.type)} (set on line {slot.line})",
                       "a local keeps the type of its first assignment; convert explicitly, "
                       f"e.g. np.{type_name(slot.type)}(...), or use another name")

    def read_name(self, name: str, node):
        if name in self.handles:
            fv, region = self.handles[name]
            if isinstance(fv, AtomicHandle) and region not in self.regions:
                self.error(node, f"'{name}' was bound inside a nested block and is not visible here",
                           "create the atomic_ref where it is used")
            return fv
        if name in self.slots:
            slot = self.slots[name]
            v = self.value("var.load", [], slot.type, {"name": name}, node)
            return Weak(v) if slot.weak else v
        if name in self.env:
            return self.env[name]
        if name in self.local_names:
            self.error(node, f"local variable '{name}' is referenced before assignment")
        found, value = lookup_name(self.fn, name)
        if not found:
            self.error(node, f"name '{name}' is not defined")
        return classify_value(value, self.src, node, name)


# What kernel code calls the frontend's handles (their class names mean nothing to users).
_HANDLE_WORDS = {"ReducerHandle": "a sycl.reducer", "AtomicHandle": "a sycl.atomic_ref",
                 "GroupHandle": "a group", "SpecPlaceholder": "a specialization constant"}


def describe(x) -> str:
    if isinstance(x, Obj):
        x = x.value
    if type(x).__name__ in _HANDLE_WORDS and isinstance(x, HANDLES):
        return _HANDLE_WORDS[type(x).__name__]
    name = getattr(x, "__qualname__", None) or getattr(x, "__name__", None)
    if name and (callable(x) or isinstance(x, type)):
        return f"'{name}'"
    return f"a {type(x).__name__} object"


def assigned_names(fdef: ast.FunctionDef) -> set[str]:
    """Names bound anywhere in the body: Python makes them local to the whole function."""
    out: set[str] = set()
    for node in ast.walk(fdef):
        if node is fdef:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
    return out


def stored_roots(fdef: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """Names rebound (``s = ...``) and names modified in place (``s.x = 1``, ``a[i] += 2``).
    A rebound parameter needs a slot; so does one modified in place if it is held by
    value (a struct), but not an accessor or pointer, whose memory is what changes."""
    rebound: set[str] = set()
    in_place: set[str] = set()
    for node in ast.walk(fdef):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for t in targets:
            _target_roots(t, rebound, in_place)
    return rebound, in_place


def _target_roots(t, rebound: set, in_place: set) -> None:
    if isinstance(t, ast.Name):
        rebound.add(t.id)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _target_roots(e, rebound, in_place)
    elif isinstance(t, ast.Starred):
        _target_roots(t.value, rebound, in_place)
    else:
        while isinstance(t, (ast.Attribute, ast.Subscript)):
            t = t.value
        if isinstance(t, ast.Name):
            in_place.add(t.id)
