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
==========================  ==================  ==========================================

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
                           "index_kind", "annotated", "spec_id")
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

    def __init__(self, name: str, kind: str, dtype: np.dtype | None = None,
                 dims: int | None = None, mode: str | None = None, properties: Any = None,
                 index_kind: str | None = None, annotated: bool = False, spec_id: Any = None):
        _set(self, "name", name)
        _set(self, "kind", kind)
        _set(self, "dtype", dtype)
        _set(self, "dims", dims)
        _set(self, "mode", mode)
        _set(self, "properties", properties)
        _set(self, "index_kind", index_kind)
        _set(self, "annotated", annotated)
        _set(self, "spec_id", spec_id)


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
    if k == "spec_placeholder":
        return None
    return T.type_from_dtype(info.dtype)


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


def kernel_signature(parsed: ParsedFunction) -> KernelSignature:
    """Parameters of a kernel, checked: all annotated, the index first."""
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
        if info.kind == "index" and i != 0:
            error_at(parsed.source, arg, f"the index parameter '{arg.arg}' must come first")
        if info.kind == "index" and info.index_kind not in INDEX_KINDS:
            error_at(parsed.source, arg, f"a kernel index must be sycl.id, sycl.item or sycl.nd_item, "
                     f"not {info.index_kind}")
        infos.append(info)
    first = infos[0] if infos and infos[0].kind == "index" else None
    return KernelSignature(tuple(infos), first.index_kind if first else None,
                           first.dims if first else None)


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
    for p in fn.params:
        t = p.type
        if isinstance(t, T.IndexSpaceType) and t.kind == "kernel_handler":
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
