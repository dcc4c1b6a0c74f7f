"""Per-target hooks. ``backends/<name>/lowering.py`` subclasses :class:`TargetLowering`
and overrides only what differs: work-item builtins, barriers, math,
atomics' memory scopes, address-space numbers, hidden parameters, and how a kernel is
wrapped into the symbol the driver calls.

>>> class MyLowering(TargetLowering):
...     name = "mine"
...     def work_item(self, ctx, query, dim): return ctx.builder.call(...)
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as ll

from .._records import Record
from ..ir.core import Function, Op
from ..ir.types import IndexSpaceType
from . import types as lt
from .context import RULES, LoweringContext, Rule
from .rules_scalar import declare_overloaded

# SYCL memory_order -> LLVM atomic ordering (SYCL 2020 3.8.3.1).
ORDERINGS = {"relaxed": "monotonic", "acquire": "acquire", "release": "release",
             "acq_rel": "acq_rel", "seq_cst": "seq_cst"}
# cmpxchg's failure ordering may not release (LangRef "cmpxchg").
FAILURE_ORDERINGS = {"monotonic": "monotonic", "acquire": "acquire", "release": "monotonic",
                     "acq_rel": "acquire", "seq_cst": "seq_cst"}


class TargetLowering:
    """Default hooks; a target must at least provide ``work_item`` and ``wrap_kernel``."""

    name = "generic"
    #: IR address space name -> LLVM address space number.
    addrspaces: dict[str, int] = {"private": 0, "global": 0, "local": 0, "constant": 0,
                                  "generic": 0}
    #: Ops this target cannot lower by design, with the reason (listed by the rule-coverage test).
    unsupported: dict[str, str] = {}
    #: LLVM fast-math flags of float ``add``/``sub``/``mul``. Empty (default): each operation
    #: rounded on its own, as IEEE 754 and NumPy. ``("contract",)`` lets the backend fuse
    #: a multiply and an add into one FMA (one rounding instead of two).
    float_flags: tuple[str, ...] = ()
    #: Flags added to a float ``add``/``mul`` with attr ``reassoc`` (a reducer's private
    #: accumulation, whose order SYCL leaves open, 4.10.6): ``("reassoc",)`` lets the loop
    #: vectoriser keep several partial sums. Empty: such chains stay in source order.
    reassoc_flags: tuple[str, ...] = ()
    #: Whether codegen contracts a float multiply feeding an add or a subtraction in one
    #: expression (``a * b + c``) into :meth:`mul_add`: OpenCL C's default contraction
    #: (``FP_CONTRACT ON``), by an operation the target may fuse or not (``mad`` on
    #: SPIR-V, whose LLVM backend drops ``contract``; ``llvm.fmuladd`` by default). A
    #: product kept in a variable is not contracted, nor is anything when False (default).
    contract_expressions: bool = False
    #: Calling convention of the internal helper functions codegen adds (the failure
    #: path of checked builds); "" is LLVM's default.
    helper_calling_convention = ""

    def __init__(self, target: Any = None, debug: bool = False):
        self.target = target
        self.debug = debug
        #: Per-target rule overrides, consulted before the shared ``RULES``.
        self.rules: dict[str, Rule] = {}

    def rule_for(self, op_name: str) -> Rule | None:
        if op_name in self.unsupported:
            reason = self.unsupported[op_name]
            return lambda ctx, op: _unsupported(ctx, op, reason)
        return self.rules.get(op_name) or RULES.get(op_name)

    # Module-level ------------------------------------------------------------------
    def prepare_module(self, llmodule: ll.Module) -> None:
        """Set triple and data layout."""
        if self.target is not None:
            llmodule.triple = self.target.triple
            llmodule.data_layout = self.target.data_layout

    def hidden_params(self, fn: Function) -> list[tuple[str, ll.Type]]:
        """Extra trailing LLVM parameters of every function (after the spec buffer), e.g.
        the native CPU's work-item coordinates. Default: none (builtins instead)."""
        return []

    def bind_hidden(self, ctx: LoweringContext, args: list) -> None:
        """Remember the hidden parameters' values in ``ctx.wi``."""
        ctx.wi = None

    def hidden_args(self, ctx: LoweringContext) -> list:
        """The hidden arguments to pass on a call from ``ctx``'s function."""
        return []

    def kernel_attributes(self, fn: Function, llfn: ll.Function) -> None:
        """Target attributes of the lowered kernel function (calling convention ...)."""

    def device_function_attributes(self, fn: Function, llfn: ll.Function) -> None:
        """Target attributes of a lowered device function."""

    def wrap_kernel(self, ctx: LoweringContext, fn: Function, llfn: ll.Function) -> None:
        """Make what the driver calls for kernel ``fn`` (native: an entry loop nest)."""

    def device_global_linkage(self) -> str:
        return ""  # external: the driver finds device globals by symbol

    #: Address space of the annotation strings (``section "llvm.metadata"`` globals).
    annotation_addrspace = 0

    def annotate_pointer(self, ctx: LoweringContext, ptr: ll.Value, text: str) -> ll.Value:
        """An ``annotated_ptr`` kernel parameter at kernel entry (sycl_ext_oneapi_properties): returns
        ``llvm.ptr.annotation(ptr, "sycl-properties:...", file, line, null)``, which the
        body then uses in place of ``ptr`` (the SPIR-V backend turns it into
        ``OpDecorate ... UserSemantic``). A target may return ``ptr`` unchanged to drop it."""
        return emit_ptr_annotation(ctx, ptr, text, self.annotation_addrspace)

    # Ops -------------------------------------------------------------------------------
    def work_item(self, ctx: LoweringContext, query: str, dim: int | None) -> ll.Value:
        """``wi.<query>`` as i64 (``dim`` None for the linear ids)."""
        raise ctx.error(None, f"target {self.name} has no work-item model")

    def per_item_count(self, ctx: LoweringContext) -> ll.Value:
        """Number of work-items of the group (i64, computable in the entry block), for
        per-item slots of work-group fission."""
        raise ctx.error(None, f"target {self.name} has no per-item variables")

    def sub_group(self, ctx: LoweringContext, query: str) -> ll.Value:
        raise ctx.error(None, f"target {self.name} has no sub-group model")

    def barrier(self, ctx: LoweringContext, op: Op) -> None:
        raise ctx.error(op, f"target {self.name} cannot lower group_barrier")

    def sub_group_reduce(self, ctx: LoweringContext, op: Op, value: ll.Value) -> ll.Value:
        raise ctx.error(op, f"target {self.name} cannot lower sub-group reductions")

    def work_group_items(self, ctx: LoweringContext, op: Op) -> None:
        raise ctx.error(op, f"wg.items (work-group fission) is not used on target {self.name}")

    def spec_native(self, ctx: LoweringContext, op: Op) -> ll.Value:
        raise ctx.error(op, f"target {self.name} has no native specialization constants; "
                            "use the emulated or literal mode")

    def math(self, ctx: LoweringContext, name: str, args: list, result_type) -> ll.Value | None:
        """Override to call target math functions; None means use LLVM intrinsics."""
        return None

    def mul_add(self, ctx: LoweringContext, a: ll.Value, b: ll.Value, c: ll.Value) -> ll.Value:
        """``a * b + c`` as one operation that may be fused (one rounding) or not
        (``llvm.fmuladd``); used where ``contract_expressions`` is set."""
        fn = declare_overloaded(ctx, "llvm.fmuladd", [a.type], ll.FunctionType(a.type, [a.type] * 3))
        return ctx.builder.call(fn, [a, b, c])

    def atomic_scope(self, scope: str) -> str:
        """LLVM ``syncscope`` for a SYCL memory_scope ("" = system)."""
        return ""

    def rmw_fences(self, order: str) -> tuple[str | None, str | None] | None:
        """Fences (before, after) around a relaxed read-modify-write that carry its
        memory ``order`` on a target whose backend drops an ``atomicrmw``'s ordering;
        None: the ``atomicrmw`` carries it."""
        return None


def _metadata_string(ctx: LoweringContext, text: str, addrspace: int) -> ll.Value:
    """A private NUL-terminated string in ``section "llvm.metadata"`` (one per text)."""
    cache = ctx.llmodule.__dict__.setdefault("_pysycl_annotation_strings", {})
    g = cache.get((text, addrspace))
    if g is None:
        data = bytearray(text.encode("utf-8") + b"\0")
        ty = ll.ArrayType(lt.I8, len(data))
        g = ll.GlobalVariable(ctx.llmodule, ty, ctx.llmodule.get_unique_name(".str.annotation"),
                              addrspace=addrspace)
        g.initializer = ll.Constant(ty, data)
        g.global_constant = True
        g.linkage = "private"
        g.unnamed_addr = True
        g.section = "llvm.metadata"
        cache[(text, addrspace)] = g
    return g


def emit_ptr_annotation(ctx: LoweringContext, ptr: ll.Value, text: str,
                        addrspace: int = 0) -> ll.Value:
    """``call @llvm.ptr.annotation.p<N>.p<M>(ptr, text, file, line, null)`` in the entry
    block, as clang emits for an annotated member (sycl_ext_oneapi_properties)."""
    sptr = ll.PointerType(addrspace=addrspace)
    space = getattr(ptr.type, "addrspace", 0)
    name = f"llvm.ptr.annotation.p{space}.p{addrspace}"
    fn = ctx.llmodule.globals.get(name)
    if fn is None:
        fnty = ll.FunctionType(ptr.type, [ptr.type, sptr, sptr, lt.I32, sptr])
        fn = ll.Function(ctx.llmodule, fnty, name)
    loc = ctx.function.loc
    args = [ptr, _metadata_string(ctx, text, addrspace),
            _metadata_string(ctx, loc.file or "<unknown>", addrspace),
            ll.Constant(lt.I32, loc.line), ll.Constant(sptr, None)]
    return ctx.entry_builder().call(fn, args)


def _unsupported(ctx: LoweringContext, op: Op, reason: str):
    raise ctx.error(op, f"op {op.name!r} is not supported on target {ctx.lowering.name}: {reason}")


def missing_rules(lowering: TargetLowering) -> list[str]:
    """Catalogue ops with no rule for ``lowering`` (documented ``unsupported`` ones excluded)."""
    from ..ir.ops import CATALOGUE
    return sorted(n for n in CATALOGUE
                  if n not in lowering.unsupported and lowering.rule_for(n) is None)


__all__ = ["TargetLowering", "emit_ptr_annotation", "missing_rules", "ORDERINGS", "FAILURE_ORDERINGS", "lt"]


def with_syncscope(shared_rule: Rule) -> Rule:
    """``shared_rule`` (an atomic rule) with the target's ``syncscope`` written on the
    atomic instructions it emits; GPU targets scope atomics below the system default."""
    def lower(ctx: LoweringContext, op: Op):
        block = ctx.builder.block
        before = len(block.instructions)
        result = shared_rule(ctx, op)
        scope = ctx.lowering.atomic_scope(op.attrs["scope"])
        if scope:
            for inst in block.instructions[before:]:
                if hasattr(inst, "ordering") and "syncscope" not in inst.ordering:
                    inst.ordering = f'syncscope("{scope}") {inst.ordering}'
        return result
    lower.__name__ = f"{shared_rule.__name__}_scoped"
    return lower


def kernel_dims(fn: Function) -> int:
    """The number of dimensions of the range a kernel is launched over: its ``dims``
    attribute, else its index-space parameter, else the highest dimension it queries
    (a ``single_task`` queries none and runs as a 1-d range of one)."""
    if isinstance(fn.attrs.get("dims"), int):
        return fn.attrs["dims"]
    for p in fn.params:
        if isinstance(p.type, IndexSpaceType) and p.type.dims:
            return p.type.dims
    used = [int(op.attrs["dim"]) for op in fn.walk()
            if op.name.startswith("wi.") and op.attrs.get("dim") is not None]
    return max(used, default=0) + 1


class WorkItemDims(Record):
    """``dims``: a Python int in kernels, the hidden i32 parameter in device functions."""

    _fields = ("dims",)
    dims: int | ll.Value

    def __init__(self, dims):
        self.dims = dims


class DeviceDimsLowering(TargetLowering):
    """Hooks for targets whose work-item builtins are per dimension and reversed
    (SYCL's dimension d of a D-dimensional range is the device's axis D-1-d: SPIR-V,
    PTX). A kernel knows D; a device function does not, so it takes D as a hidden i32
    parameter that folds away once the function is inlined."""

    def hidden_params(self, fn: Function) -> list[tuple[str, ll.Type]]:
        return [] if fn.kind == "kernel" else [("__sycl_dims", lt.I32)]

    def bind_hidden(self, ctx: LoweringContext, args: list) -> None:
        ctx.wi = WorkItemDims(kernel_dims(ctx.function) if ctx.function.kind == "kernel"
                              else args[0])

    def hidden_args(self, ctx: LoweringContext) -> list:
        dims = ctx.wi.dims
        return [ll.Constant(lt.I32, dims) if isinstance(dims, int) else dims]
