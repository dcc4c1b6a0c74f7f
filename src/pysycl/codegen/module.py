"""IR Module -> llvmlite Module: signatures (the kernel argument ABI of
``backends/base.py``), properties as attributes (sycl_ext_oneapi_properties), bodies through the rule table.

Every function gets the implicit spec-constant buffer (``global i8*``) after its own
parameters, so kernel signatures are the same on every target and device
functions can read emulated spec constants too; the target's hidden parameters (native
CPU: work-item coordinates) come after it.

>>> llmod = lower_module(module, NativeCpuLowering(NATIVE_CPU))   # doctest: +SKIP
"""
from __future__ import annotations

from llvmlite import ir as ll

from ..detail.symbols import llvm_name
from ..ir.core import Function, Module, Param
from ..properties import POINTER_ANNOTATION
from ..ir.types import (AccessorType, LocalAccessorType, PointerType, ScalarType, Type)
from . import debug_checks
# Imported to register their rules:
from . import (rules_complex, rules_complex_trig, rules_control,  # noqa: F401
               rules_math_pairs, rules_memory, rules_scalar)
from . import types as lt
from .context import AccessorValue, LoweringContext
from .target_lowering import TargetLowering

SPEC_BUFFER_PARAM = "__spec_buffer"


def lower_module(module: Module, lowering: TargetLowering) -> ll.Module:
    """Lower every function of ``module``; kernels are wrapped by ``lowering.wrap_kernel``."""
    llmodule = ll.Module(name=module.name)
    lowering.prepare_module(llmodule)
    debug_checks.start_module(llmodule, lowering)
    functions = {f.name: _declare(llmodule, f, lowering) for f in module.functions}
    probe = None
    for decl in module.device_globals:
        probe = probe or _GlobalsContext(lowering, module, llmodule)
        g = rules_memory.device_global(probe, decl.unique_id, decl.type, decl.initial)
        _global_attributes(g, decl.unique_id, decl.type.size, decl.properties)
    for f in module.functions:
        if f.is_declaration:
            continue
        ctx = LoweringContext(lowering, module, llmodule, f, functions[f.name], functions)
        _bind_params(ctx, f)
        ctx.lower_region(f.body)
        _close_function(ctx, f)
        if f.kind == "kernel":
            lowering.wrap_kernel(ctx, f, functions[f.name])
    debug_checks.finish_module(llmodule)
    return llmodule


class _GlobalsContext:
    """The few context fields module-level helpers (device globals) need."""

    def __init__(self, lowering, module, llmodule):
        self.lowering, self.module, self.llmodule = lowering, module, llmodule

    def mtype(self, t: Type) -> ll.Type:
        return lt.memory_type(t, self.lowering.addrspaces)


# Signatures --------------------------------------------------------------------------------
def param_types(p: Param, kernel: bool, lowering: TargetLowering) -> list[ll.Type]:
    """LLVM parameters of one IR parameter, in the ABI table's order."""
    spaces, t = lowering.addrspaces, p.type
    if isinstance(t, AccessorType):
        return [lt.pointer("global", spaces)] + [lt.I64] * (3 * t.dims + 1)
    if isinstance(t, LocalAccessorType):
        return [lt.pointer("local", spaces)] + [lt.I64] * t.dims
    if not lt.has_storage(t):
        return []
    if isinstance(t, PointerType) and t.space == "global" and \
            debug_checks.bounds_build(lowering):
        return [lt.pointer("global", spaces), lt.I64]   # + its memory's size in bytes
    if kernel and lt.is_aggregate(t):
        return [lt.pointer("private", spaces)]   # pointer to the bytes (byval on SPIR-V)
    if kernel:
        return [lt.memory_type(t, spaces)]        # bool arrives as a byte
    return [lt.value_type(t, spaces)]


def _declare(llmodule: ll.Module, f: Function, lowering: TargetLowering) -> ll.Function:
    kernel = f.kind == "kernel"
    params = [ty for p in f.params for ty in param_types(p, kernel, lowering)]
    params.append(lt.pointer("global", lowering.addrspaces))
    params += [ty for _, ty in lowering.hidden_params(f)]
    ret = lt.VOID if kernel else lt.value_type(f.return_type, lowering.addrspaces)
    fn = ll.Function(llmodule, ll.FunctionType(ret, params), f.name)
    if f.kind == "device":
        fn.linkage = "internal"
    _param_attributes(fn, f, lowering)
    _function_attributes(fn, f.properties)
    (lowering.kernel_attributes if kernel else lowering.device_function_attributes)(f, fn)
    return fn


def _param_attributes(fn: ll.Function, f: Function, lowering: TargetLowering) -> None:
    """``sycl-restrict`` -> noalias, ``sycl-alignment`` -> align N on the pointer; every
    property also stays as a string attribute (sycl_ext_oneapi_properties)."""
    i = 0
    for p in f.params:
        n = len(param_types(p, f.kind == "kernel", lowering))
        if n and p.properties:
            arg = fn.args[i]
            if isinstance(arg.type, ll.PointerType):
                if "sycl-restrict" in p.properties:
                    arg.add_attribute("noalias")
                if p.properties.get("sycl-alignment", "").isdigit():
                    arg.attributes.align = int(p.properties["sycl-alignment"])
            for k, v in p.properties.items():
                if k != POINTER_ANNOTATION:   # annotates the pointer value (_bind_params)
                    set.add(arg.attributes, _string_attribute(k, v))
        i += n
    names = [p.name for p in f.params for _ in param_types(p, f.kind == "kernel", lowering)]
    for arg, name in zip(fn.args, names + [SPEC_BUFFER_PARAM] + [n for n, _ in lowering.hidden_params(f)]):
        arg.name = llvm_name(name)


def _function_attributes(fn: ll.Function, properties: dict[str, str]) -> None:
    # llvmlite only knows enum attributes; a quoted "key"="value" prints as is.
    for k, v in properties.items():
        set.add(fn.attributes, _string_attribute(k, v))


def _string_attribute(key: str, value) -> str:
    esc = lambda s: str(s).replace("\\", "\\5C").replace('"', "\\22")  # noqa: E731
    return f'"{esc(key)}"="{esc(value)}"' if value not in (None, "") else f'"{esc(key)}"'


def _global_attributes(g: ll.GlobalVariable, unique_id: str, size: int,
                       properties: dict[str, str]) -> None:
    """A device global's LLVM attributes as DPC++ gives them: ``sycl-unique-id``,
    ``sycl-device-global-size`` and its compile-time properties (sycl_ext_oneapi_properties,
    "add_ir_global_variable_attributes"). The properties are also kept as the named
    metadata tuple ``!pysycl.global.properties`` of (symbol, key, value) strings, which
    tools read without parsing attribute groups."""
    attrs = {"sycl-unique-id": unique_id, "sycl-device-global-size": str(size),
             **{str(k): str(v) for k, v in properties.items()}}
    if isinstance(g, lt.AttributedGlobal):
        g.group = lt.AttributedGlobal.FIRST_GROUP + sum(
            isinstance(v, lt.AttributedGlobal) and bool(v.attributes_text)
            for v in g.parent.global_values)
        g.attributes_text = " ".join(_string_attribute(k, v) for k, v in sorted(attrs.items()))
    if not properties:
        return
    mod = g.parent
    md = mod.add_named_metadata("pysycl.global.properties")
    for k, v in sorted(properties.items()):
        md.add(mod.add_metadata([g.name, str(k), str(v)]))


# Bodies --------------------------------------------------------------------------------------
def _bind_params(ctx: LoweringContext, f: Function) -> None:
    args = list(ctx.llfn.args)
    kernel = f.kind == "kernel"
    for p in f.params:
        n = len(param_types(p, kernel, ctx.lowering))
        mine, args = args[:n], args[n:]
        ctx.values[p.value] = _param_value(ctx, p, mine, kernel)
        if len(mine) == 2 and isinstance(p.type, PointerType):   # checked build
            ctx.extents[p.value] = mine[1]
        text = p.properties.get(POINTER_ANNOTATION) if kernel else None
        if text and mine and isinstance(p.type, PointerType):
            # annotated_ptr (sycl_ext_oneapi_properties): the body uses the annotated pointer.
            ctx.values[p.value] = ctx.lowering.annotate_pointer(ctx, mine[0], text)
    ctx.spec_buffer = args[0]
    ctx.lowering.bind_hidden(ctx, args[1:])


def _param_value(ctx: LoweringContext, p: Param, args: list, kernel: bool):
    t = p.type
    if isinstance(t, AccessorType):
        d = t.dims
        return AccessorValue(args[0], args[1 + d:1 + 2 * d], args[1 + 3 * d], t.elem,
                             access=args[1:1 + d], offsets=args[1 + 2 * d:1 + 3 * d])
    if isinstance(t, LocalAccessorType):
        return AccessorValue(args[0], args[1:], ll.Constant(lt.I64, 0), t.elem)
    if not args:
        return None  # index-space objects: queries go through wi.* ops
    if kernel and lt.is_aggregate(t):
        return ctx.alloca_builder.load(args[0], typ=ctx.mtype(t), align=t.align)
    if kernel and isinstance(t, ScalarType) and t.is_bool:
        return ctx.alloca_builder.icmp_unsigned("!=", args[0], ll.Constant(lt.I8, 0))
    return args[0]


def _close_function(ctx: LoweringContext, f: Function) -> None:
    if not ctx.terminated():
        if ctx.llfn.return_value.type == lt.VOID:
            ctx.builder.ret_void()
        else:
            ctx.builder.unreachable()  # the frontend guarantees a return on every path
    ctx.finish_entry()


__all__ = ["lower_module", "param_types", "SPEC_BUFFER_PARAM", "PointerType"]
