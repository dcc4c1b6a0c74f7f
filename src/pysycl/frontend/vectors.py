"""``sycl.vec`` values in kernels beyond arithmetic (SYCL 2020 4.14.2): comparisons that
give a mask ``vec`` (-1 for true, 0 for false, in the signed integer of the element's
size), swizzles (``v.x``, ``v.zyx``, ``v.s3``, ``v.lo``/``hi``/``even``/``odd``,
``v.swizzle(2, 0)``), reinterpretation (``v.as_(vec_type)``), element conversion
(``v.convert(dtype)``) and ``size()``/``byte_size()``. Masks combine with ``&``, ``|``,
``^`` and ``~``, which on -1/0 elements are C++'s ``&&``, ``||`` and ``!``.

Multi-element swizzles are built from single elements (``vec.make`` of ``vec.get``);
LLVM turns them into one shuffle.
"""
from __future__ import annotations

import numpy as np

from ..ir import types as T
from ..ir.core import Value
from ..types import vec_size
from .lowering import fv_type_name
from .values import promo_type

_XYZW = {c: i for i, c in enumerate("xyzw")}
_RGBA = {c: i for i, c in enumerate("rgba")}
_HALVES = ("lo", "hi", "even", "odd")


def mask_type(vt: T.VecType) -> T.VecType:
    """The vec a comparison of ``vt`` values gives: the signed integer of the element's
    size, as SYCL's ``vec<fixed_width_signed<sizeof(T)>, N>``."""
    signed = {1: T.I8, 2: T.I16, 4: T.I32, 8: T.I64}[vt.elem.size]
    return T.VecType(signed, vt.n)


def swizzle_indices(name: str, n: int) -> list[int] | None:
    """Element indices of swizzle ``name`` on an ``n``-vector, or None if it is not one:
    ``xyzw``/``rgba`` letters (n <= 4), ``s0``..``sF`` (``s`` then hex digits), or
    ``lo``/``hi``/``even``/``odd``."""
    if name in _HALVES:
        # A 3-vector's halves are 2-vectors whose fourth slot (padding, unspecified in
        # SYCL) reads element 2 here.
        size = 4 if n == 3 else n
        idx = {"lo": list(range(size // 2)), "hi": list(range(size // 2, size)),
               "even": list(range(0, size, 2)), "odd": list(range(1, size, 2))}[name]
        return [min(i, n - 1) for i in idx]
    if name.startswith("s") and len(name) > 1 and all(c in "0123456789abcdefABCDEF"
                                                       for c in name[1:]):
        idx = [int(c, 16) for c in name[1:]]
    elif n <= 4 and all(c in _XYZW for c in name):
        idx = [_XYZW[c] for c in name]
    elif n <= 4 and all(c in _RGBA for c in name):
        idx = [_RGBA[c] for c in name]
    else:
        return None
    return idx if all(i < n for i in idx) else None


class VecRules:
    """Mixin of the function lowerer: what vec values offer besides arithmetic."""

    def vec_compare(self, pred: str, a, b, node):
        """``a < b`` with a vec side: the mask vec."""
        vt = next(x.type for x in (a, b) if isinstance(x, Value) and isinstance(x.type, T.VecType))
        for x in (a, b):
            if isinstance(x, Value) and isinstance(x.type, T.VecType) and x.type != vt:
                self.error(node, f"cannot compare {x.type} with {vt}")
        va, vb = self.coerce(a, vt, node), self.coerce(b, vt, node)
        truth = self.value("cmp", [va, vb], T.VecType(T.BOOL, vt.n), {"pred": pred}, node)
        return self.vec_mask(truth, vt, node)

    def vec_mask(self, truth: Value, vt: T.VecType, node):
        """A vec of bools as SYCL's relational results on ``vt`` values: -1/0 in the
        signed integer of ``vt``'s element size."""
        mt = mask_type(vt)
        ones = self.value("cast", [truth], mt, node=node)
        return self.value("neg", [ones], mt, node=node)

    def vec_math_type(self, name: str, args: list, node, scalar_at=()) -> T.VecType | None:
        """The vec type math function ``name`` computes in, element by element, when a
        vec is among ``args`` (None when none is): SYCL 2020 4.17.5 defines the math
        functions on ``vec<float, N>`` and ``vec<double, N>`` (also half). Every vec
        argument must be that vec; a scalar (converted to the element type and
        splatted) only at the positions ``scalar_at``, where SYCL takes one (``fmin``,
        ``fmax``: ``sgenfloat y``)."""
        vecs = [(i, a.type) for i, a in enumerate(args)
                if isinstance(a, Value) and isinstance(a.type, T.VecType)]
        if not vecs:
            return None
        first, vt = vecs[0]
        where = node.args if len(node.args) == len(args) else [node] * len(args)
        for i, t in vecs[1:]:
            if t.n != vt.n:
                self.error(where[i], f"{name}(): vec arguments of different lengths, "
                           f"{vt} and {t}")
            if t != vt:
                self.error(where[i], f"{name}(): vec arguments of different element types, "
                           f"{vt} and {t}", "convert one of them: v.convert(np.float32)")
        if not vt.elem.is_float:
            self.error(where[first], f"{name}() takes float vecs, not {vt}",
                       f"convert it first: v.convert(np.float32) or v.convert(np.float64)")
        for i, a in enumerate(args):
            if isinstance(a, Value) and isinstance(a.type, T.VecType):
                continue
            if i not in scalar_at:
                self.error(where[i], f"{name}() of a {vt} takes a {vt} here, not a scalar",
                           "SYCL mixes a vec with a scalar only in fmin(v, s), fmax(v, s) "
                           "and ldexp(v, k); make a vec of the scalar")
            self._check_splat(name, vt, a, where[i])
        return vt

    def _check_splat(self, name: str, vt: T.VecType, scalar, node) -> None:
        """A scalar beside a ``vt`` vec converts to its element type only where NumPy's
        promotion keeps that type (as in vec arithmetic)."""
        if isinstance(scalar, Value) and not isinstance(scalar.type, T.ScalarType):
            self.error(node, f"{name}() takes a scalar or a {vt} here, not {scalar.type}")
        elem = self.promote("add", vt.elem, promo_type(scalar), node)
        if elem != vt.elem:
            self.error(node, f"{name}(): a {fv_type_name(scalar)} scalar with a {vt} would "
                       "change the element type; convert the scalar first")

    def vec_attribute(self, v: Value, attr: str, node):
        idx = swizzle_indices(attr, v.type.n)
        if idx is None:
            self.error(node, f"'{attr}' is not a swizzle of a {v.type} value",
                       "use x/y/z/w, r/g/b/a (up to 4 elements), s0..sF, lo, hi, even, odd")
        return self._gather(v, idx, node)

    def _gather(self, v: Value, idx: list[int], node):
        elem = v.type.elem
        items = [self.value("vec.get", [v, self.const(i, T.I64, node)], elem, node=node)
                 for i in idx]
        if len(items) == 1:
            return items[0]
        if len(items) not in (2, 3, 4, 8, 16):
            self.error(node, f"a swizzle of {len(items)} elements is not a vec size")
        return self.value("vec.make", items, T.VecType(elem, len(items)), node=node)

    def vec_method(self, v: Value, name: str, node):
        vt = v.type
        args = node.args
        if node.keywords:
            self.error(node, f"vec.{name}() takes positional arguments only")
        if name in ("size", "byte_size") and not args:
            return self.const(vt.n if name == "size" else vt.size, T.I64, node)
        if (name in _HALVES or swizzle_indices(name, vt.n) is not None) and not args:
            # C++ spells element access and swizzles as calls: v.x(), v.wzyx()
            return self.vec_attribute(v, name, node)
        if name == "swizzle" and args:
            idx = [self.compile_time_value(a) for a in args]
            if not all(isinstance(i, (int, np.integer)) and 0 <= i < vt.n for i in idx):
                self.error(node, f"swizzle indices must be constants in 0..{vt.n - 1}")
            return self._gather(v, [int(i) for i in idx], node)
        if name == "convert" and len(args) == 1:
            return self.value("cast", [v], T.VecType(self._element_type(args[0], node), vt.n),
                              node=node)
        if name == "as_" and len(args) == 1:
            return self._reinterpret(v, args[0], node)
        self.error(node.func, f"'{name}' is not a method of a {vt} value",
                   "vec methods: size(), byte_size(), lo(), hi(), even(), odd(), x() and "
                   "the other swizzles, swizzle(i, ...), convert(dtype), as_(vec_type)")

    def _element_type(self, arg, node) -> T.ScalarType:
        value = self.compile_time_value(arg)
        try:
            t = T.type_from_dtype(np.dtype(value))
        except TypeError:
            t = None
        if not isinstance(t, T.ScalarType):
            self.error(arg, f"{value!r} is not a scalar element type")
        return t

    def _reinterpret(self, v: Value, arg, node):
        """SYCL's ``as<vec<U, M>>()``: the same bytes as another vec type."""
        value = self.compile_time_value(arg)
        dt = np.dtype(value) if not isinstance(value, np.dtype) else value
        n = vec_size(dt)
        if n is None:
            self.error(arg, "as_() takes a sycl.vec type, e.g. sycl.vec(np.int32, 4)")
        target = T.VecType(T.type_from_dtype(dt.base), n)
        if target.elem.size * target.n != v.type.elem.size * v.type.n:
            self.error(node, f"as_(): {v.type} and {target} differ in size")
        return self.value("bitcast", [v], target, node=node)
