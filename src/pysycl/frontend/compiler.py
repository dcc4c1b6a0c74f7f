"""Build one input image (an IR module) from a root function and everything it reaches.

A kernel image holds the kernel, the ``@sycl.device`` functions it calls (from any
Python module, kind ``"device"``), a ``declare`` for each ``@sycl.external`` callee (even
one defined in the same Python module: link resolves it, so images stay per kernel),
and the spec constants and device globals it uses. A library image holds one
``@sycl.external`` definition (kind ``"external"``) and its device functions.

Device functions with unannotated parameters are specialised per argument types; the
specialisation's name is ``"<module>.<qualname>[t1,t2]"`` (annotated ones keep the plain
name). Recursion, direct or mutual, is a compile error at the call that closes the cycle.
"""
from __future__ import annotations

import ast

import numpy as np

from .. import types as pt
from ..errors import exception
from ..ir import types as T
from ..ir.core import Function, Loc, Module, Op, Param, Region, SpecConstantDecl, DeviceGlobalDecl
from ..properties import to_meta
from .calls import CallRules
from .diagnostics import error_at
from .expressions import ExpressionRules
from .lowering import LoweringBase, stored_roots, type_name
from .memory import MemoryRules
from .complex_numbers import ComplexRules
from .vectors import VecRules
from .signature import (annotations_of, check_plain_params, check_reducers_bound,
                        defaults_of, ir_properties,
                        ir_type, is_dtype_like, kernel_signature, param_info, param_kind,
                        reducer_params)
from .statements import StatementRules
from .scope import classify_value
from .typing_rules import default_type
from .values import HANDLES, Lit, Obj, ReducerHandle, SpecPlaceholder, TupleVal


class FunctionLowerer(StatementRules, ExpressionRules, MemoryRules, CallRules, VecRules,
                      ComplexRules, LoweringBase):
    """Lowers one Python function body into ``func.body``."""

    def lower_into(self, func: Function, slot_params: list[Param]) -> None:
        # Reassigned parameters live in slots initialised from the parameter; the slots
        # exist before the body is lowered so every use goes through them.
        init = Region()
        for h in self.env.values():
            if isinstance(h, ReducerHandle):   # the accumulator (lower_reducers fills it)
                t = T.ArrayType(h.elem, h.extent) if h.extent else h.elem
                self.entry_ops.append(Op("var", [], T.VOID, {"name": h.acc, "type": t}, None,
                                         _loc(self.parsed)))
        with self.region(init):
            for p in slot_params:
                self.declare_slot(p.name, p.type, self.parsed.node)
                self.emit("var.store", [p.value], attrs={"name": p.name}, node=self.parsed.node)
        body = Region()
        with self.region(body):
            self.block(self.parsed.node.body)
        body.ops[0:0] = self.entry_ops + init.ops
        func.body = body

    def annotation_type(self, node) -> T.Type:
        fv = self.expr(node)
        obj = fv.value if isinstance(fv, Obj) else None
        if obj is None or not is_dtype_like(obj):
            self.error(node, "expected a scalar type or dtype (np.float32, a @sycl.struct class, ...)")
        return T.type_from_dtype(pt.as_dtype(obj))


def natural_type(fv) -> T.Type | None:
    """The type a value gets with nothing to narrow it (no code emitted)."""
    if isinstance(fv, Lit):
        return default_type(fv.value)
    if isinstance(fv, Obj) and isinstance(fv.value, np.generic):
        return T.number_from_dtype(fv.value.dtype)
    if isinstance(fv, TupleVal):
        items = [natural_type(x) for x in fv.items]
        return None if None in items else T.TupleType(tuple(items))
    return getattr(fv, "type", None)


class ImageBuilder:
    """Collects the functions and declarations of one image."""

    def __init__(self, module_name: str, python_module: str):
        self.module = Module(module_name, attrs={"python_module": python_module})
        self.functions: dict[tuple, Function] = {}
        self.stack: list = []
        self.spec: dict[str, SpecConstantDecl] = {}
        self.dgs: dict[str, DeviceGlobalDecl] = {}
        self.decls: dict[str, Function] = {}

    def finish(self) -> Module:
        self.module.spec_constants = list(self.spec.values())
        self.module.device_globals = list(self.dgs.values())
        return self.module

    # Roots ---------------------------------------------------------------------------
    def add_kernel(self, kfn) -> Function:
        parsed = kfn.parsed()
        sig = kernel_signature(parsed, getattr(kfn, "reducer_ops", None))
        check_reducers_bound(parsed, sig)
        params, env = [], {}
        reducers = []
        for info in sig.params:
            if info.kind == "reducer":
                env[info.name] = self._reducer(info, params, reducers)
                continue
            ty = ir_type(info)
            if ty is None:  # spec_constant[T, S] placeholder: reads S through spec.get
                env[info.name] = SpecPlaceholder(info.name, T.type_from_dtype(info.dtype),
                                                 info.spec_id)
                continue
            p = Param(info.name, ty, ir_properties(info, kfn.name))
            params.append(p)
            env[info.name] = p.value
        func = Function(kfn.name, "kernel", params, T.VOID, None, _loc(parsed),
                        to_meta(kfn.properties.of_category("kernel")))
        if reducers:
            func.attrs["reducers"] = reducers
        self._lower(kfn, parsed, func, env, T.VOID, is_kernel=True)
        return func

    @staticmethod
    def _reducer(info, params: list, reducers: list) -> ReducerHandle:
        """The IR parameters of a reducer (``signature.reducer_params``) and its handle;
        the accumulator var is declared by the lowerer, initialised by the passes."""
        made = [Param(n, t) for n, t in reducer_params(info)]
        params.extend(made)
        elem = T.type_from_dtype(info.dtype)
        acc = f"{info.name}.acc"
        reducers.append({"name": info.name, "op": info.op, "extent": info.dims or 0,
                         "strategy": info.strategy, "acc": acc})
        return ReducerHandle(info.name, elem, info.dims or 0, info.op, acc, made[1].value)

    def add_external_definition(self, efn) -> Function:
        parsed = efn.parsed()
        params, ret = self._annotated_signature(efn, parsed)
        func = Function(efn.name, "external", params, ret or T.VOID, None, _loc(parsed))
        self._lower(efn, parsed, func, {p.name: p.value for p in params}, ret, is_kernel=False)
        return func

    def _lower(self, fobj, parsed, func, env, ret, is_kernel):
        self.module.functions.append(func)
        self.stack.append(fobj)
        try:
            rebound, in_place = stored_roots(parsed.node)
            by_value = (T.StructType, T.ArrayType, T.VecType, T.TupleType)
            slots = [p for p in func.params if (p.name in rebound
                     or p.name in in_place and isinstance(p.type, by_value))
                     and not isinstance(env.get(p.name), ReducerHandle)]
            # Weak locals that strong values are assigned to (``acc = 0.0`` then
            # ``acc += x_f32``) get their type from those assignments, which may come after
            # uses: lower again with the types found, until no new one appears (each pass
            # types at least one more local, so this ends). Most functions take one pass.
            hints: dict = {}
            state = self._snapshot()
            while True:
                lw = FunctionLowerer(self, parsed, env, ret, is_kernel, hints)
                lw.lower_into(func, slots)
                found = {k: v for k, v in lw.weak_local_types().items() if k not in hints}
                if not found:
                    break
                hints.update(found)
                self._restore(state)  # forget the callees the discarded pass specialised
            func.return_type = lw.return_type or T.VOID
        finally:
            self.stack.pop()

    def _snapshot(self):
        return (list(self.module.functions), dict(self.functions), dict(self.spec),
                dict(self.dgs), dict(self.decls))

    def _restore(self, state) -> None:
        self.module.functions[:] = state[0]
        for d, saved in zip((self.functions, self.spec, self.dgs, self.decls), state[1:]):
            d.clear()
            d.update(saved)

    # Calls ---------------------------------------------------------------------------
    def bind_call(self, fobj, args, kwargs, lw, node) -> list:
        """Arguments in parameter order (keywords and defaults applied)."""
        parsed = fobj.parsed()
        names = [a.arg for a in check_plain_params(parsed)]
        if len(args) > len(names):
            lw.error(node, f"{fobj.__name__}() takes {len(names)} argument(s), {len(args)} given")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in bound:
                lw.error(node, f"{fobj.__name__}() got an unexpected or repeated argument '{k}'")
            bound[k] = v
        defaults = defaults_of(fobj.py_function)
        for n in names:
            if n not in bound:
                if n not in defaults:
                    lw.error(node, f"{fobj.__name__}() is missing argument '{n}'")
                bound[n] = classify_value(defaults[n], lw.src, node, n)
        out = [bound[n] for n in names]
        for n, fv in zip(names, out):
            if isinstance(fv, HANDLES) or (isinstance(fv, Obj) and not isinstance(fv.value, np.generic)):
                lw.error(node, f"cannot pass this value as argument '{n}' of {fobj.__name__}()")
        return out

    def callee(self, fobj, bound, lw, node) -> Function:
        if fobj in self.stack:
            cycle = " -> ".join(f.__name__ for f in self.stack[self.stack.index(fobj):] + [fobj])
            lw.error(node, f"recursion is not supported in kernel code ({cycle})",
                     "rewrite the recursion as a loop")
        if fobj._pysycl_function_kind == "external":
            return self._declaration(fobj, lw, node)
        parsed = fobj.parsed()
        anns = annotations_of(parsed)
        arg_nodes = check_plain_params(parsed)
        types = []
        for a, fv in zip(arg_nodes, bound):
            ann = anns.get(a.arg)
            types.append(self._param_type(fobj, parsed, a, ann) if ann is not None else natural_type(fv))
        generic = any(anns.get(a.arg) is None for a in arg_nodes)
        key = (fobj, tuple(types))
        if key in self.functions:
            return self.functions[key]
        name = fobj.name + ("[" + ",".join(map(str, types)) + "]" if generic and types else "")
        params = [Param(a.arg, t) for a, t in zip(arg_nodes, types)]
        ret = self._return_annotation(fobj, parsed, anns)
        func = Function(name, "device", params, ret or T.VOID, None, _loc(parsed))
        self.functions[key] = func
        self._lower(fobj, parsed, func, {p.name: p.value for p in params}, ret, is_kernel=False)
        return func

    def _declaration(self, efn, lw, node) -> Function:
        parsed = efn.parsed()
        params, ret = self._annotated_signature(efn, parsed)
        decl = Function(efn.name, "declare", params, ret or T.VOID, None, _loc(parsed))
        seen = self.decls.get(efn.name)
        if seen is None:
            self.decls[efn.name] = decl
            self.module.functions.append(decl)
            return decl
        if [p.type for p in seen.params] != [p.type for p in decl.params] or \
                seen.return_type != decl.return_type:
            lw.error(node, f"external symbol '{efn.name}' is declared with two different signatures")
        return seen

    def _annotated_signature(self, efn, parsed):
        """Parameters and return type of an @external: its ABI, so all annotated."""
        anns = annotations_of(parsed)
        params = []
        for a in check_plain_params(parsed):
            if a.arg not in anns:
                error_at(parsed.source, a, f"parameter '{a.arg}' of @sycl.external function "
                         f"'{efn.__name__}' needs an annotation (it is part of the exported ABI)")
            params.append(Param(a.arg, self._param_type(efn, parsed, a, anns[a.arg])))
        return params, self._return_annotation(efn, parsed, anns)

    def _param_type(self, fobj, parsed, arg: ast.arg, ann) -> T.Type:
        kind = param_kind(ann)
        if kind is None or kind in ("spec_placeholder",):
            error_at(parsed.source, arg, f"annotation {ann!r} of parameter '{arg.arg}' is not "
                     "a device function parameter type")
        return ir_type(param_info(arg.arg, ann))

    def _return_annotation(self, fobj, parsed, anns):
        if "return" not in anns:
            return None
        ann = anns["return"]
        if ann is None or ann is type(None):
            return T.VOID
        if is_dtype_like(ann):
            return T.type_from_dtype(pt.as_dtype(ann))
        return None  # tuple[...] and the like: inferred from the returns

    # Host objects ----------------------------------------------------------------------
    def use_spec_constant(self, spec, src, node) -> SpecConstantDecl:
        uid = _unique_id(spec, src, node)
        if uid not in self.spec:
            self.spec[uid] = SpecConstantDecl(uid, T.type_from_dtype(spec.dtype), spec.default_bytes)
        return self.spec[uid]

    def use_device_global(self, dg, src, node) -> DeviceGlobalDecl:
        uid = _unique_id(dg, src, node)
        if uid not in self.dgs:
            initial = dg.initial_bytes if any(dg.initial_bytes) else b""
            self.dgs[uid] = DeviceGlobalDecl(uid, T.type_from_dtype(dg.dtype),
                                             to_meta(dg.properties), initial)
        return self.dgs[uid]


def _unique_id(obj, src, node) -> str:
    try:
        return obj.unique_id
    except exception as e:
        error_at(src, node, f"cannot find the unique ID of {obj!r}: {e}")


def _loc(parsed) -> Loc:
    return Loc(parsed.source.filename, parsed.node.lineno, parsed.node.col_offset)


def build_kernel_image(kfn) -> Module:
    """The input image of one ``@sycl.kernel`` function: the kernel and every device
    function it calls."""
    b = ImageBuilder(kfn.name, kfn.module_name)
    b.add_kernel(kfn)
    return b.finish()


def build_library_image(efn) -> Module:
    """The input image of one ``@sycl.external`` definition, exported for link."""
    b = ImageBuilder(efn.name, efn.module_name)
    b.add_external_definition(efn)
    return b.finish()


__all__ = ["build_kernel_image", "build_library_image", "type_name"]
