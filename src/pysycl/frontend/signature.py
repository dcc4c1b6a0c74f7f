"""Kernel parameters: what the runtime must pack, and their IR types.

:func:`kernel_signature` reads only the annotations (no codegen, no body), so the runtime
can pack arguments of a kernel it has not compiled. IR parameter types per annotation:

==========================  ==================  ==========================================
annotation                  kind                IR parameter
==========================  ==================  ==========================================
``sycl.id/item/nd_item[D]`` index               ``id<D>`` / ``item<D>`` / ``nd_item<D>``
``sycl.kernel_handler``     kernel_handler      ``kernel_handler``
scalar dtype                scalar              the scalar type
struct / vec / array dtype  struct              struct / vec / array type (by value)
``accessor[T, D, mode, p]`` accessor            ``accessor<T,D,mode>`` + meta properties
``local_accessor[T, D]``    local_accessor      ``local_accessor<T,D>``
``global_ptr[T]``           global_ptr          ``ptr<global,T>``
``annotated_ptr[T, p]``     global_ptr          ``ptr<global,T>`` + meta properties + annotation
``spec_constant[T, S]``     spec_placeholder    none: ``p.get()`` is ``spec.get{id=<S's ID>}``
``reducer[T, n, op]``       reducer             ``ptr<global,T>`` (the result), ``T`` (the
                                                identity), ``ptr<global,T>`` +
                                                ``ptr<global,u32>`` (work-group results, or
                                                for the atomic strategy one accumulator, and
                                                a done counter) and, for the atomic
                                                strategy, ``u32`` (whether the result starts
                                                from the identity)
==========================  ==================  ==========================================

A reducer's operator comes from its annotation or, when the annotation has none, from the
kernel's augmented assignments to it (``r += x`` is ``sycl.plus``...; SYCL 2020 4.10.6.3
defines each only for its operator). The kernel's ``reducers`` attribute records each
reducer (name, operator, extent, strategy, accumulator variable) for the passes that
lower it and for :func:`signature_from_ir`.

>>> import numpy as np
>>> param_kind(np.float32)
'scalar'
"""
from __future__ import annotations

import ast
import inspect
from typing import Any

import numpy as np

from .. import types as pt
from .._records import FrozenValue
from ..functional import AUGMENTED, operand_problem, reduction_strategy
from ..ir import types as T
from ..properties import POINTER_ANNOTATION, annotation_string, properties_for, to_meta
from .diagnostics import error_at
from .source import ParsedFunction, closure_vars

INDEX_KINDS = ("id", "item", "nd_item")


_set = object.__setattr__


class ParamInfo(FrozenValue):
    """One kernel parameter as the runtime sees it. (Frozen value classes with dataclass
    semantics, _records.py.)"""

    __slots__ = _fields = ("name", "kind", "dtype", "dims", "mode", "properties",
                           "index_kind", "annotated", "spec_id", "op")
    name: str
    kind: str            # index, kernel_handler, scalar, struct, accessor, local_accessor,
                         # global_ptr, spec_placeholder
    dtype: np.dtype | None
    dims: int | None
    mode: str | None                  # accessor access mode ("read_only"...)
    properties: Any                   # sycl.properties or None
    index_kind: str | None            # for kind "index": id, item, nd_item
    annotated: bool                   # annotated_ptr: properties also annotate the pointer
    spec_id: Any                      # spec_placeholder: the specialization_id it reads
    op: str | None                    # reducer: the operator's IR name (dims: the extent)

    def __init__(self, name: str, kind: str, dtype: np.dtype | None = None,
                 dims: int | None = None, mode: str | None = None, properties: Any = None,
                 index_kind: str | None = None, annotated: bool = False, spec_id: Any = None,
                 op: str | None = None):
        _set(self, "name", name)
        _set(self, "kind", kind)
        _set(self, "dtype", dtype)
        _set(self, "dims", dims)
        _set(self, "mode", mode)
        _set(self, "properties", properties)
        _set(self, "index_kind", index_kind)
        _set(self, "annotated", annotated)
        _set(self, "spec_id", spec_id)
        _set(self, "op", op)

    @property
    def strategy(self) -> str | None:
        """A reducer's ``functional.reduction_strategy`` (None for other kinds)."""
        if self.kind != "reducer" or self.op is None:
            return None
        return reduction_strategy(self.op, self.dtype)


class KernelSignature(FrozenValue):
    __slots__ = _fields = ("params", "index_kind", "dims")
    params: tuple[ParamInfo, ...]
    index_kind: str | None   # None for single_task kernels
    dims: int | None

    def __init__(self, params: tuple[ParamInfo, ...], index_kind: str | None,
                 dims: int | None):
        _set(self, "params", params)
        _set(self, "index_kind", index_kind)
        _set(self, "dims", dims)

    @property
    def runtime_args(self) -> tuple[ParamInfo, ...]:
        """The parameters the caller passes (not the index or the kernel_handler)."""
        return tuple(p for p in self.params if p.kind not in ("index", "kernel_handler"))


def annotations_of(parsed: ParsedFunction) -> dict[str, Any]:
    """Evaluated annotations; string ones (``from __future__ import annotations``) are
    evaluated in the function's globals and closure, as ``typing.get_type_hints`` would."""
    fn = parsed.fn
    out = {}
    for name, ann in getattr(fn, "__annotations__", {}).items():
        if isinstance(ann, str):
            try:
                ann = eval(ann, fn.__globals__, closure_vars(fn))  # noqa: S307 user's own code
            except Exception as e:
                node = _param_node(parsed, name) or parsed.node
                error_at(parsed.source, node, f"cannot evaluate annotation {ann!r}: {e}")
        out[name] = ann
    return out


def _param_node(parsed: ParsedFunction, name: str) -> ast.arg | None:
    for a in parsed.node.args.args:
        if a.arg == name:
            return a
    return None


def is_dtype_like(ann) -> bool:
    if ann in pt.SCALAR_ANNOTATIONS or isinstance(ann, np.dtype):
        return True
    if isinstance(ann, type) and (issubclass(ann, np.generic) or getattr(ann, "__pysycl_struct__", False)):
        return True
    return False


def param_kind(ann) -> str | None:
    """The kind of an annotation, or None if it is not a parameter annotation."""
    if isinstance(ann, pt.IndexAnnotation):
        return "index"
    if ann is pt.kernel_handler or isinstance(ann, pt.KernelHandlerAnnotation) or \
            (isinstance(ann, type) and issubclass(ann, pt.KernelHandlerAnnotation)):
        return "kernel_handler"
    if isinstance(ann, pt.AccessorAnnotation):
        return "accessor"
    if isinstance(ann, pt.LocalAccessorAnnotation):
        return "local_accessor"
    if isinstance(ann, pt.GlobalPtrAnnotation):
        return "global_ptr"
    if isinstance(ann, pt.SpecConstantAnnotation):
        return "spec_placeholder"
    if isinstance(ann, pt.ReducerAnnotation):
        return "reducer"
    if is_dtype_like(ann):
        dt = pt.as_dtype(ann)
        return "struct" if dt.fields is not None or dt.subdtype is not None else "scalar"
    return None


def param_info(name: str, ann) -> ParamInfo:
    kind = param_kind(ann)
    if kind == "index":
        return ParamInfo(name, kind, None, ann.dims, index_kind=ann.kind)
    if kind == "kernel_handler":
        return ParamInfo(name, kind)
    if kind == "accessor":
        return ParamInfo(name, kind, ann.dtype, ann.dims, ann.mode.value, ann.properties)
    if kind == "local_accessor":
        return ParamInfo(name, kind, ann.dtype, ann.dims)
    if kind == "global_ptr":
        return ParamInfo(name, kind, ann.dtype, properties=ann.properties,
                         annotated=getattr(ann, "annotated", False))
    if kind == "spec_placeholder":
        return ParamInfo(name, kind, ann.dtype, spec_id=ann.spec_id)
    if kind == "reducer":
        return ParamInfo(name, kind, ann.dtype, ann.extent, op=ann.op)
    return ParamInfo(name, kind, pt.as_dtype(ann))


def ir_type(info: ParamInfo) -> T.Type | None:
    """The IR parameter type; None for a parameter with no IR parameter."""
    k = info.kind
    if k == "index":
        return T.IndexSpaceType(info.index_kind, info.dims)
    if k == "kernel_handler":
        return T.IndexSpaceType("kernel_handler")
    if k == "accessor":
        return T.AccessorType(T.type_from_dtype(info.dtype), info.dims, info.mode)
    if k == "local_accessor":
        return T.LocalAccessorType(T.type_from_dtype(info.dtype), info.dims)
    if k == "global_ptr":
        return T.PointerType(T.type_from_dtype(info.dtype), "global")
    if k in ("spec_placeholder", "reducer"):
        return None
    return T.type_from_dtype(info.dtype)


REDUCER_PARTS = ("identity", "partials", "count", "init")


def reducer_params(info: ParamInfo) -> list[tuple[str, T.Type]]:
    """The IR parameters of a reducer, in ABI order (see the module table)."""
    t = T.type_from_dtype(info.dtype)
    out = [(info.name, T.PointerType(t, "global")), (f"{info.name}.identity", t)]
    # bool results are kept as 0/1 bytes (passes/lower_reducers.py says why)
    part = T.U8 if t == T.BOOL else t
    out += [(f"{info.name}.partials", T.PointerType(part, "global")),
            (f"{info.name}.count", T.PointerType(T.U32, "global"))]
    if info.strategy == "atomic":
        out.append((f"{info.name}.init", T.U32))
    return out


def ir_properties(info: ParamInfo, kernel_name: str = "") -> dict[str, str]:
    """Meta name -> value of the parameter's compile-time properties
    (sycl_ext_oneapi_properties); a property of another kind of object (a kernel's, a
    device_global's) is ``errc.invalid`` naming it and the parameter."""
    if info.properties is None:
        return {}
    categories = ("kernel_arg",) if info.kind == "accessor" else ("kernel_arg", "pointer")
    props = properties_for(info.properties, categories,
                           f"parameter {info.name} of kernel {kernel_name}".rstrip())
    meta = to_meta(props)
    if info.annotated and meta:   # the codegen emits llvm.ptr.annotation with this string
        meta[POINTER_ANNOTATION] = annotation_string(props)
    return meta


def check_plain_params(parsed: ParsedFunction) -> list[ast.arg]:
    """The positional parameters; star-args and keyword-only parameters are errors."""
    a = parsed.node.args
    for bad in (a.vararg, a.kwarg):
        if bad is not None:
            error_at(parsed.source, bad, "star-args (*args/**kwargs) are not supported in kernel code")
    if a.kwonlyargs:
        error_at(parsed.source, a.kwonlyargs[0], "keyword-only parameters are not supported in kernel code")
    return list(a.posonlyargs) + list(a.args)


def kernel_signature(parsed: ParsedFunction, reducer_ops: dict | None = None) -> KernelSignature:
    """Parameters of a kernel, checked: all annotated, the index first. ``reducer_ops``:
    the operators of reducers the kernel does not name (from the launch's reductions);
    without one such a reducer's ``op`` is None."""
    anns = annotations_of(parsed)
    infos = []
    for i, arg in enumerate(check_plain_params(parsed)):
        if arg.arg not in anns:
            error_at(parsed.source, arg, f"kernel parameter '{arg.arg}' needs an annotation",
                     "e.g. sycl.accessor[np.float32, 1, sycl.read_only], np.int32, sycl.item[1]")
        info = param_info(arg.arg, anns[arg.arg])
        if info.kind is None:
            error_at(parsed.source, arg, f"annotation {anns[arg.arg]!r} of parameter "
                     f"'{arg.arg}' is not a kernel argument type")
        if info.kind == "spec_placeholder" and info.spec_id is None:
            # Without the ID the kernel could only read a per-parameter constant that no
            # bundle query (has_specialization_constant) or SpecId would know.
            error_at(parsed.source, arg, f"placeholder parameter '{arg.arg}' must name the "
                     "specialization_id it reads", f"annotate it sycl.spec_constant["
                     f"np.{info.dtype}, my_id] (or sycl.spec_constant[my_id]), as "
                     "spec_constant<T, ID> in C++")
        if info.kind == "reducer":
            info = _reducer_info(parsed, arg, info, (reducer_ops or {}).get(info.name))
        if info.kind == "index" and i != 0:
            error_at(parsed.source, arg, f"the index parameter '{arg.arg}' must come first")
        if info.kind == "index" and info.index_kind not in INDEX_KINDS:
            error_at(parsed.source, arg, f"a kernel index must be sycl.id, sycl.item or sycl.nd_item, "
                     f"not {info.index_kind}")
        infos.append(info)
    first = infos[0] if infos and infos[0].kind == "index" else None
    return KernelSignature(tuple(infos), first.index_kind if first else None,
                           first.dims if first else None)


_AUG_NAMES = {ast.Add: "add", ast.Mult: "mul", ast.BitAnd: "and", ast.BitOr: "or",
              ast.BitXor: "xor"}


def _reducer_info(parsed: ParsedFunction, arg: ast.arg, info: ParamInfo,
                  bound: str | None) -> ParamInfo:
    """``info`` with its operator: the annotation's, checked against the augmented
    assignments to the reducer, or the one they imply, else ``bound`` (the launch's)."""
    name, found = info.name, None
    for node in ast.walk(parsed.node):
        if not isinstance(node, ast.AugAssign):
            continue
        t = node.target.value if isinstance(node.target, ast.Subscript) else node.target
        if not (isinstance(t, ast.Name) and t.id == name):
            continue
        op = AUGMENTED.get(_AUG_NAMES.get(type(node.op), ""))
        if op is None:
            error_at(parsed.source, node, f"reducer '{name}' takes +=, *=, &=, |=, ^= or "
                     "combine(x)", "min and max: annotate sycl.reducer[T, sycl.minimum] "
                     "and call combine(x)")
        want = info.op or found
        if want is not None and op != want:
            error_at(parsed.source, node, f"this augmented assignment means sycl.{op}(), "
                     f"but reducer '{name}' combines with sycl.{want}()",
                     "use combine(x) for any operator")
        found = op
    op = info.op or found or bound
    if op is None:
        return info
    problem = operand_problem(op, info.dtype)
    if problem is not None:
        error_at(parsed.source, arg, f"reducer '{name}': {problem}")
    return ParamInfo(name, "reducer", info.dtype, info.dims, op=op)


def check_reducers_bound(parsed: ParsedFunction, sig: KernelSignature) -> None:
    """A compile error for a reducer whose operator is still unknown: the kernel is
    compiled apart from a launch (a kernel bundle, ahead of time) and uses it only
    through combine()."""
    for info in sig.params:
        if info.kind == "reducer" and info.op is None:
            error_at(parsed.source, _param_node(parsed, info.name) or parsed.node,
                     f"the operator of reducer '{info.name}' comes from the sycl.reduction "
                     "it is launched with, so this kernel compiles only for a launch",
                     f"to compile it on its own, annotate the operator: sycl.reducer["
                     f"np.{info.dtype}, sycl.plus] (C++'s reducer type carries it)")


def defaults_of(fn) -> dict[str, Any]:
    """Parameter defaults of a device function (frozen like globals)."""
    sig = inspect.signature(fn)
    return {n: p.default for n, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}


def signature_from_ir(fn) -> KernelSignature:
    """The signature of an IR kernel whose Python definition is not at hand (a kernel
    loaded from a bundle file in a process that never imported its module): the
    inverse of :func:`ir_type`. ``spec_constant[T]`` placeholders have no IR
    parameter, so such kernels need their Python definition."""
    infos = []
    reducers = {r["name"]: r for r in fn.attrs.get("reducers", ())}
    for p in fn.params:
        t = p.type
        r = reducers.get(p.name)
        if r is not None:
            infos.append(ParamInfo(p.name, "reducer", T.dtype_of(t.pointee), int(r["extent"]),
                                   op=r["op"]))
        elif p.name.rpartition(".")[0] in reducers and \
                p.name.rpartition(".")[2] in REDUCER_PARTS:
            continue    # the reducer's other parameters
        elif isinstance(t, T.IndexSpaceType) and t.kind == "kernel_handler":
            infos.append(ParamInfo(p.name, "kernel_handler"))
        elif isinstance(t, T.IndexSpaceType):
            infos.append(ParamInfo(p.name, "index", None, t.dims, index_kind=t.kind))
        elif isinstance(t, T.AccessorType):
            infos.append(ParamInfo(p.name, "accessor", T.dtype_of(t.elem), t.dims, t.mode))
        elif isinstance(t, T.LocalAccessorType):
            infos.append(ParamInfo(p.name, "local_accessor", T.dtype_of(t.elem), t.dims))
        elif isinstance(t, T.PointerType):
            infos.append(ParamInfo(p.name, "global_ptr", T.dtype_of(t.pointee)))
        else:
            dt = T.dtype_of(t)
            kind = "struct" if dt.fields is not None or dt.subdtype is not None else "scalar"
            infos.append(ParamInfo(p.name, kind, dt))
    first = infos[0] if infos and infos[0].kind == "index" else None
    return KernelSignature(tuple(infos), first.index_kind if first else None,
                           first.dims if first else None)
