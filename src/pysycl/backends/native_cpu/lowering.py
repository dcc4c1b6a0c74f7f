"""The native CPU work-item model.

Work-item coordinates are plain i64 parameters of every function (18 hidden parameters:
global range, local range, group range, global offset, group id and local id, three
dimensions each), so after inlining they are loop induction variables and LLVM sees
``acc[gid]`` as a unit-stride access it can vectorise.

Each kernel gets an exported entry (``target.entry_symbol``)::

    void entry(void **args, const int64_t *launch, int64_t group_begin,
               int64_t group_end, char *local_mem)

It loads the ABI parameters from ``args`` and the launch description once, then for each
work-group in ``[group_begin, group_end)``:

* kernels without barriers: a loop nest over the group's work-items, innermost over the
  last dimension (SYCL linearisation: the rightmost index varies fastest), with the
  kernel ``alwaysinline``d into it. Loop bounds are clamped to the global range so the
  executor may pick any group shape for ``parallel_for(range)``. A 1-D range kernel that
  asks only global questions (ids, range, offset) runs the items of all its groups as
  one loop instead.
* row kernels (``passes/split_item_range``: the body is one ``wg.items(lo, hi)``): one
  call per row of the group's last dimension; the row runs as a loop over the items of
  the interior ``[lo, hi)``, where the comparisons the pass proved are the constant true,
  and one over the rest of the row.
* kernels with barriers (already split by ``passes/work_group_fission`` into ``wg.items``
  regions): one call of the (``noinline``) kernel per group; each ``wg.items`` is a loop
  nest over the group's local ids. Per-item slots are allocas of the group's size in the
  kernel's entry block: stack storage that is fresh for each group call and freed on
  return (a 1024-item group of doubles takes 8 KiB of the worker's stack).

The entry is generated once per possible number of dimensions (known from the kernel's
``dims`` attribute or index-space parameters, otherwise every count from the highest
``dim`` the kernel queries up to 3) so unused dimensions fold to constants.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ..._records import Record
from ...codegen import LoweringContext, TargetLowering, param_types
from ...codegen.rules_control import LoopID, lower_return
from ...codegen.rules_scalar import intrinsic, libm_call, lower_cmp
from ...codegen import types as lt
from ...ir.core import Function, Module, Op
from ...ir.types import IndexSpaceType, ScalarType
from ...ir.effects import PURE, PURE_PER_ITEM
from .target import (LAUNCH_DIMS, LAUNCH_GLOBAL, LAUNCH_GROUPS, LAUNCH_LOCAL, LAUNCH_OFFSET,
                     entry_symbol)

_FIELDS = ("global_range", "local_range", "group_range", "global_offset", "group_id", "local_id")
_ONE, _ZERO = ll.Constant(lt.I64, 1), ll.Constant(lt.I64, 0)


class WorkItemState(Record):
    """The hidden coordinates as LLVM i64 values, three per field. (A record with the
    semantics of ``@dataclass``, _records.py.)"""

    _fields = _FIELDS
    global_range: list
    local_range: list
    group_range: list
    global_offset: list
    group_id: list
    local_id: list

    def __init__(self, global_range: list, local_range: list, group_range: list,
                 global_offset: list, group_id: list, local_id: list):
        self.global_range = global_range
        self.local_range = local_range
        self.group_range = group_range
        self.global_offset = global_offset
        self.group_id = group_id
        self.local_id = local_id

    def flat(self) -> list:
        return [v for f in _FIELDS for v in getattr(self, f)]


class NativeCpuLowering(TargetLowering):
    name = "native_cpu"
    # codegen/rules_control: constant loops of a few iterations carry llvm.loop.unroll.full
    # (the native compiler leaves LLVM's unrolling heuristics off).
    full_unroll_small_loops = True
    # codegen/rules_memory: atomics on local memory are plain read-modify-writes (one
    # thread runs a whole work-group here).
    work_group_on_one_thread = True
    # A reducer's accumulation in a work-item loop vectorises with several partial sums
    # (16M float32 sum: memory bound instead of one add per 4 cycles).
    reassoc_flags = ("reassoc",)
    # Float ``a * b + c`` keeps two roundings here, as NumPy (``contract_expressions``
    # off), although OpenCL C and the OpenCL backend may fuse it. Measured with the shared
    # contraction rule on (llvm.fmuladd, one vfmadd per tap): the FIR of benchmarks/ with
    # 33 taps ran 5-8% slower on AMD Zen 5 (16 taps: even; 7 taps: 2-4% faster). Its
    # accumulator is a chain of dependent operations, and a fused multiply-add there
    # takes 4 cycles where an add takes 2 while the multiplies run off the chain; GCC's
    # tuning for Zen declines to contract such chains for the same reason.
    contract_expressions = False
    addrspaces = {"private": 0, "global": 0, "local": 0, "constant": 0, "generic": 0}

    def __init__(self, target=None, debug: bool = False):
        super().__init__(target, debug)
        self.rules["cmp"] = _lower_cmp
        self.rules["return"] = _lower_return

    # Hidden parameters ------------------------------------------------------------------
    def hidden_params(self, fn: Function):
        # A strip kernel (passes/strip_uniform_loops) is called once per strip of
        # work-items along its last dimension, a row kernel (passes/split_item_range) once
        # per row: local_id there is the strip's first item and ``strip_end`` one past its
        # last.
        extra = [("strip_end", lt.I64)] if _strip_kind(fn) else []
        return [(f"{f}{d}", lt.I64) for f in _FIELDS for d in range(3)] + extra

    def bind_hidden(self, ctx: LoweringContext, args: list) -> None:
        ctx.wi = WorkItemState(*(list(args[3 * i:3 * i + 3]) for i in range(len(_FIELDS))))
        n = 3 * len(_FIELDS)
        ctx.strip = (list(ctx.wi.local_id), args[n]) if len(args) > n else None
        ctx.interior = False   # lowering the interior loop of a row kernel

    def hidden_args(self, ctx: LoweringContext) -> list:
        return ctx.wi.flat()

    def kernel_attributes(self, fn: Function, llfn: ll.Function) -> None:
        llfn.linkage = "internal"
        # Barrier kernels with per-item vars keep their own frame so the per-item allocas
        # (sized by the group) are freed per group; without any (fission_uniform often
        # removes them all) the kernel inlines into the group loop like any other.
        # Strip kernels' per-item slots have a constant size (STRIP items): they inline.
        llfn.attributes.add("noinline" if uses_fission(fn) and _has_per_item_vars(fn)
                            and not fn.attrs.get("wi_strip") else "alwaysinline")

    # Work-item queries ---------------------------------------------------------------------
    def work_item(self, ctx: LoweringContext, query: str, dim: int | None) -> ll.Value:
        wi, b = ctx.wi, ctx.builder
        if dim is not None and not 0 <= dim < 3:
            raise ctx.error(None, f"work-item dimension {dim} is out of range 0..2")
        if query == "global_id":
            return b.add(b.add(b.mul(wi.group_id[dim], wi.local_range[dim]), wi.local_id[dim]),
                         wi.global_offset[dim])
        if query in _FIELDS[:4] + ("group_id", "local_id"):
            return getattr(wi, query)[dim]
        if query == "local_linear_id":
            return _linear(b, wi.local_id, wi.local_range)
        if query == "group_linear_id":
            return _linear(b, wi.group_id, wi.group_range)
        if query == "global_linear_id":  # SYCL 2020 4.9.1.7: offset subtracted
            ids = [b.add(b.mul(g, l), i) for g, l, i in
                   zip(wi.group_id, wi.local_range, wi.local_id)]
            return _linear(b, ids, wi.global_range)
        raise ctx.error(None, f"unknown work-item query {query!r}")

    def sub_group(self, ctx: LoweringContext, query: str) -> ll.Value:
        # One work-item per sub-group on the CPU (DeviceDescription.sub_group_sizes == (1,)).
        if query == "local_id":
            return _ZERO
        if query in ("local_range", "max_local_range"):
            return _ONE
        if query == "group_id":
            return self.work_item(ctx, "local_linear_id", None)
        return _product(ctx.builder, ctx.wi.local_range)

    def sub_group_reduce(self, ctx, op, value):
        return value  # a reduction over one work-item

    def barrier(self, ctx: LoweringContext, op: Op) -> None:
        if op.attrs["scope"] == "sub_group":
            return  # sub-groups of one work-item are always in step
        raise ctx.error(op, "group_barrier at work_group scope reached native CPU code "
                            "generation; passes/work_group_fission.py must split the kernel first")

    # Work-group fission ----------------------------------------------------------------------
    def per_item_count(self, ctx: LoweringContext) -> ll.Value:
        if getattr(ctx, "strip", None) is not None:
            return ll.Constant(lt.I64, int(ctx.function.attrs["wi_strip"]))
        return _product(ctx.entry_builder(), ctx.wi.local_range)

    def per_item_index(self, ctx: LoweringContext) -> ll.Value:
        """This work-item's element of a per-item slot: its local linear id, or in a
        strip kernel its place in the strip."""
        if getattr(ctx, "strip", None) is not None:
            d = kernel_dims(ctx.function)[0] - 1
            return ctx.builder.sub(ctx.wi.local_id[d], ctx.strip[0][d])
        return self.work_item(ctx, "local_linear_id", None)

    def work_group_items(self, ctx: LoweringContext, op: Op) -> None:
        # Loop only over the kernel's own dimensions (the others have one item): the
        # last real dimension is then the innermost loop, the one LLVM vectorises. Looping
        # over all three would leave an inner loop of unknown trip count 1 there.
        group_level = ctx.wi.local_id
        if getattr(ctx, "strip", None) is not None:
            # One loop over the strip [first, end) of the last dimension; the other
            # local ids are the strip's own.
            d = kernel_dims(ctx.function)[0] - 1
            first, end = ctx.strip[0][d], ctx.strip[1]
            group = _DistinctMD(ctx.llmodule, [])
            fn = ctx.builder.block.function
            start = len(fn.blocks)

            def item(i):
                ctx.wi.local_id = [i if k == d else v for k, v in enumerate(ctx.strip[0])]
                _item_body(ctx, lambda: ctx.lower_region(op.regions[0]))
            if op.operands:
                _split_row(ctx, op, first, end, item, group)
            else:
                counted_loop(ctx.builder, first, end, "wg.strip", item,
                             loop_md=_parallel_loop_id(ctx.llmodule, group))
            ctx.wi.local_id = group_level
            _mark_parallel_accesses(fn.blocks[start:], group)
            return
        ids: list = []
        dims = kernel_dims(ctx.function)
        ndims = dims[0] if len(dims) == 1 else 3

        # ``if lid < bound: ...`` as the whole region of a 1-D kernel (a tree reduction's
        # step): loop over [0, min(bound, local range)) instead of testing every item.
        bounded = _bounded_if(op.regions[0].ops, lambda n: n in ctx.vars and
                              not ctx.vars[n].per_item) if ndims == 1 else None
        # The items of the group inside the global range: a range launch's last group
        # may be partial (a kernel with reducers runs range launches through fission).
        wi, b0 = ctx.wi, ctx.builder
        limit = [_smin(b0, wi.local_range[d], b0.sub(wi.global_range[d],
                                                     b0.mul(wi.group_id[d], wi.local_range[d])))
                 if _is_range_kernel(ctx.function) else wi.local_range[d] for d in range(3)]
        lo0, hi0 = _ZERO, limit[0]
        if bounded is not None:
            pre, then_ops, chain, rhs, pred = bounded
            for c in chain:
                ctx.lower_op(c)
            bound = ctx.get(rhs)
            b = ctx.builder
            if pred == "lt":      # [0, bound)
                hi0 = _smin(b, bound, hi0)
            elif pred == "le":    # [0, bound]
                hi0 = _smin(b, b.add(bound, _ONE), hi0)
            else:                 # "eq": [bound, bound + 1) (``if lid == 0``)
                lo0 = b.select(b.icmp_signed("<", bound, _ZERO), _ZERO, bound)
                hi0 = _smin(b, b.add(bound, _ONE), hi0)

        def nest(d: int):
            if d == 3:
                ctx.wi.local_id = list(ids)
                if bounded is None:
                    _item_body(ctx, lambda: ctx.lower_region(op.regions[0]))
                else:
                    _item_body(ctx, lambda: [ctx.lower_op(o) for o in bounded[0] + bounded[1]])
                return
            if d >= ndims:
                ids.append(_ZERO)
                nest(d + 1)
                ids.pop()
                return
            def body(i):
                ids.append(i)
                nest(d + 1)
                ids.pop()
            loops.append(_parallel_loop_id(ctx.llmodule, group))
            counted_loop(ctx.builder, lo0 if d == 0 else _ZERO,
                         hi0 if d == 0 else limit[d],
                         f"wg.items{d}", body, loop_md=loops[-1])
        fn = ctx.builder.block.function
        first = len(fn.blocks)
        group = _DistinctMD(ctx.llmodule, [])
        loops: list = []
        nest(0)
        ctx.wi.local_id = group_level
        _mark_parallel_accesses(fn.blocks[first:], group)

    def math(self, ctx: LoweringContext, name: str, args: list, result_type):
        if name == "cbrt" and _element(args[0].type) == ll.DoubleType():
            return _refined_cbrt(ctx, libm_call(ctx, "cbrt", args), args[0])
        return None

    def annotate_pointer(self, ctx: LoweringContext, ptr: ll.Value, text: str) -> ll.Value:
        """``annotated_ptr`` properties are dropped here: native code has no consumer for
        ``llvm.ptr.annotation``, and alias analysis cannot see through the call, so the
        annotated pointer would lose the parameter's ``noalias`` (``sycl.restrict``) and
        the loops it enables would stay scalar. The parameter attributes remain."""
        return ptr

    # The entry ------------------------------------------------------------------------------
    def wrap_kernel(self, ctx: LoweringContext, fn: Function, llfn: ll.Function) -> None:
        build_entry(self, ctx.llmodule, fn, llfn, ctx.module)


def _item_body(ctx: LoweringContext, lower) -> None:
    """Lower one work-item of a ``wg.items`` loop with ``lower()``; a failed check of a
    checked build (``codegen.debug_checks``) ends the item by branching to its end, so
    the loop goes on with the next item (a return would end the row or the group)."""
    end = ctx.block("item.end")
    outer, ctx.item_exit = getattr(ctx, "item_exit", None), end
    lower()
    ctx.item_exit = outer
    ctx.branch_if_open(end)
    ctx.builder.position_at_end(end)


def _lower_return(ctx: LoweringContext, op: Op):
    """``return``; inside a loop over work-items (a row kernel's early exit) it ends the
    work-item, and the loop goes on with the next one."""
    item_exit = getattr(ctx, "item_exit", None)
    if item_exit is not None and not op.operands:
        ctx.builder.branch(item_exit)
        return None
    return lower_return(ctx, op)


def _lower_cmp(ctx: LoweringContext, op: Op):
    """``cmp``; a constant for a comparison ``passes/split_item_range`` proved constant
    on the interior of a row (its ``interior`` attribute), while lowering the interior
    loop."""
    if getattr(ctx, "interior", False) and "interior" in op.attrs:
        return ll.Constant(lt.I1, int(bool(op.attrs["interior"])))
    return lower_cmp(ctx, op)


def _split_row(ctx: LoweringContext, op: Op, first, end, item, group) -> None:
    """The row ``[first, end)`` of a row kernel as two loops (index-set splitting): the
    interior ``[lo, hi)`` (the ``wg.items`` operands, clamped to the row) with the
    ``interior`` comparisons true, then the items before and after it, one body for both
    (a loop over the two pieces around the item loop: the body is compiled twice, not
    three times). Items of a kernel without barriers may run in any order."""
    b = ctx.builder
    lo, hi = (ctx.get(v) for v in op.operands)
    lo = _smin(b, _smax(b, lo, first), end)
    hi = _smax(b, _smin(b, hi, end), lo)
    ctx.interior = True
    counted_loop(b, lo, hi, "wg.interior", item, loop_md=_parallel_loop_id(ctx.llmodule, group))
    ctx.interior = False

    def piece(p):
        tail = b.icmp_signed("!=", p, _ZERO)
        counted_loop(b, b.select(tail, hi, first), b.select(tail, end, lo), "wg.edge", item,
                     loop_md=_parallel_loop_id(ctx.llmodule, group))
    counted_loop(b, _ZERO, ll.Constant(lt.I64, 2), "wg.edges", piece)


def _strip_kind(fn: Function):
    """``wi_strip`` (items per call) of a strip kernel, ``"rows"`` for a row kernel,
    else None."""
    return fn.attrs.get("wi_strip") or ("rows" if fn.attrs.get("wi_rows") else None)


_ITEM_QUERIES = frozenset({"wi.local_id", "wi.global_id", "wi.local_linear_id",
                           "wi.global_linear_id"})
_SIDE_EFFECT_FREE = PURE | PURE_PER_ITEM | {"var.load"}


def _bounded_if(ops: list, group_var):
    """``(pre, then, chain, bound, pred)`` when a 1-D items region is side-effect-free
    ops, then ``if local_id < bound`` (or ``<=``, ``==``) with no else (then dead pure
    ops): ``bound`` is computed by ``chain`` from no work-item query (so it can run
    before the loop, which then covers only the items that take the branch)."""
    k = len(ops) - 1
    while k >= 0 and ops[k].name in _SIDE_EFFECT_FREE and not ops[k].regions:
        k -= 1
    if k < 0 or ops[k].name != "if" or ops[k].regions[1].ops:
        return None
    iff, pre, tail = ops[k], ops[:k], ops[k + 1:]
    used = {id(v) for o in ops for v in o.operands} | \
        {id(v) for o in iff.regions[0].walk() for v in o.operands}
    if any(o.result is not None and id(o.result) in used for o in tail):
        return None
    if any(o.name not in _SIDE_EFFECT_FREE or o.regions for o in pre):
        return None
    cmp = iff.operands[0].owner
    if cmp is None or cmp.name != "cmp" or cmp.attrs.get("pred") not in ("lt", "le", "eq"):
        return None
    lhs, rhs = cmp.operands
    if lhs.owner is None or lhs.owner.name not in ("wi.local_id", "wi.local_linear_id") \
            or lhs.owner.attrs.get("dim", 0) != 0 or rhs.type != lhs.type:
        return None
    chain: list = []
    seen: set = set()

    def visit(v) -> bool:
        o = v.owner
        if o is None or id(o) in seen:
            return True
        if o.regions or o.name in _ITEM_QUERIES or o.name not in _SIDE_EFFECT_FREE \
                or o.name.startswith(("ptr.", "acc.")) \
                or (o.name == "var.load" and not group_var(o.attrs["name"])):
            return False
        seen.add(id(o))
        if not all(visit(x) for x in o.operands):
            return False
        chain.append(o)
        return True
    if not visit(rhs):
        return None
    return pre, list(iff.regions[0].ops), chain, rhs, cmp.attrs["pred"]


def _has_per_item_vars(fn: Function) -> bool:
    return any(op.name == "var" and op.attrs.get("per_item") for op in fn.walk())


def _is_range_kernel(fn: Function) -> bool:
    """A kernel launched over a range (its groups are the executor's choice and the last
    one may be partial): an ``id``/``item`` index parameter."""
    return any(isinstance(p.type, IndexSpaceType) and p.type.kind in ("id", "item")
               for p in fn.params)


def uses_fission(fn: Function) -> bool:
    return any(op.name in ("wg.items", "barrier") for op in fn.walk())


def _linear(b: ll.IRBuilder, ids: list, ranges: list) -> ll.Value:
    lin = ids[0]
    for d in (1, 2):
        lin = b.add(b.mul(lin, ranges[d]), ids[d])
    return lin


def _product(b: ll.IRBuilder, values: list) -> ll.Value:
    return b.mul(b.mul(values[0], values[1]), values[2])


def _element(t: ll.Type) -> ll.Type:
    return t.element if isinstance(t, ll.VectorType) else t


def _splat(t: ll.Type, value: float) -> ll.Constant:
    if isinstance(t, ll.VectorType):
        return ll.Constant(t, [ll.Constant(t.element, value)] * t.count)
    return ll.Constant(t, value)


def _refined_cbrt(ctx, y, x):
    """glibc's double ``cbrt`` is up to 3 ULP off (SYCL 2020 allows 2): one Newton step
    ``y - (y**3 - x) / (3 * y**2)`` with the residual computed through fma (``y*y`` split
    exactly into ``y2 + lo``) brings it within about half an ULP. Tiny values are scaled
    by exact powers of two first (the residual of a y**3 near the subnormals would lose
    its precision); zero, infinite and NaN ``y`` stay as they are."""
    b, t = ctx.builder, y.type
    size = intrinsic(ctx, "fabs", [y])
    small = b.fcmp_ordered("<", size, _splat(t, 2.0 ** -300))
    ys = b.select(small, b.fmul(y, _splat(t, 2.0 ** 200)), y)
    xs = b.select(small, b.fmul(x, _splat(t, 2.0 ** 600)), x)
    y2 = b.fmul(ys, ys)
    lo = intrinsic(ctx, "fma", [ys, ys, b.fneg(y2)])
    residual = b.fadd(intrinsic(ctx, "fma", [y2, ys, b.fneg(xs)]), b.fmul(lo, ys))
    better = b.fsub(ys, b.fdiv(residual, b.fmul(_splat(t, 3.0), y2)))
    better = b.select(small, b.fmul(better, _splat(t, 2.0 ** -200)), better)
    normal = b.and_(b.fcmp_ordered(">", size, _splat(t, 0.0)),
                    b.fcmp_ordered("<", size, _splat(t, float("inf"))))
    return b.select(normal, better, y)


class _DistinctMD(ll.values.MDValue):
    """``distinct !{...}``: an access group (llvmlite only makes uniqued nodes)."""

    def __init__(self, module: ll.Module, ops: list):
        super().__init__(module, ops, name=str(len(module.metadata)))

    def descr(self, buf):
        buf += ("distinct ",)
        super().descr(buf)

    # Distinct nodes are equal only to themselves (MDValue compares operands, which
    # would make llvmlite's metadata cache merge every empty group into one).
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def _parallel_loop_id(module: ll.Module, group) -> ll.values.MDValue:
    return LoopID(module, [module.add_metadata([ll.MetaDataString(module,
                                                 "llvm.loop.parallel_accesses"), group])])


def _mark_parallel_accesses(blocks, group) -> None:
    """Put the loads and stores of a work-item loop in ``group`` (``llvm.access.group``):
    work-items between two barriers may run in any order and may not race (SYCL 2020
    3.8.1), so the loop carries no memory dependence and LLVM vectorises it without
    runtime alias checks (``if lid < stride: s[lid] += s[lid + stride]``). Accesses to
    a scalar alloca (an item-local var shared by the items in turn) stay out, and
    so do atomics, including local ones lowered to plain read-modify-writes: a loop with
    an unmarked access is not treated as parallel."""
    for blk in blocks:
        for inst in blk.instructions:
            if isinstance(inst, (ll.LoadInstr, ll.StoreInstr)) and \
                    not getattr(inst, "pysycl_atomic", False):
                base = inst.operands[0] if isinstance(inst, ll.LoadInstr) else inst.operands[1]
                while isinstance(base, ll.GEPInstr):
                    base = base.pointer
                if isinstance(base, ll.AllocaInstr) and not base.operands:
                    continue
                inst.set_metadata("llvm.access.group", group)


def counted_loop(b: ll.IRBuilder, lo, hi, name: str, body, loop_md=None, step=None) -> None:
    """``for i in range(lo, hi, step): body(i)`` (step 1 by default) with an i64 induction
    variable, the canonical form LLVM's loop vectoriser wants; ``body`` emits at the
    builder's position."""
    fn = b.block.function
    pre = b.block
    header, blk, done = (fn.append_basic_block(f"{name}.{s}") for s in ("cond", "body", "end"))
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(lt.I64, name=name)
    i.add_incoming(lo, pre)
    b.cbranch(b.icmp_signed("<", i, hi), blk, done)
    b.position_at_end(blk)
    body(i)
    if not b.block.is_terminated:
        i.add_incoming(b.add(i, _ONE if step is None else step), b.block)
        br = b.branch(header)
        if loop_md is not None:
            br.set_metadata("llvm.loop", loop_md)
    b.position_at_end(done)


def kernel_dims(fn: Function) -> tuple[int, ...]:
    """The dimension counts the entry must handle."""
    if isinstance(fn.attrs.get("dims"), int):
        return (fn.attrs["dims"],)
    for p in fn.params:
        if isinstance(p.type, IndexSpaceType) and p.type.dims:
            return (p.type.dims,)
    used = [int(op.attrs["dim"]) for op in fn.walk()
            if op.name.startswith("wi.") and op.attrs.get("dim") is not None]
    return tuple(range(max(used, default=0) + 1, 4))


def build_entry(lowering: NativeCpuLowering, llmodule: ll.Module, fn: Function,
                kernel: ll.Function, module: Module | None = None) -> ll.Function:
    """The exported entry of ``kernel`` (see the module doc); ``module``: the IR module
    ``fn`` is in (a 1-D range kernel whose code asks nothing of work-groups loops over
    its items as one run, ``_asks_global_only``)."""
    ptr = ll.PointerType()
    ety = ll.FunctionType(lt.VOID, [ptr, ptr, lt.I64, lt.I64, ptr])
    entry = ll.Function(llmodule, ety, entry_symbol(fn.name))
    argv, launch, gbegin, gend, local_mem = entry.args
    for a, n in zip(entry.args, ("args", "launch", "group_begin", "group_end", "local_mem")):
        a.name = n
    for a in (argv, launch, local_mem):
        a.add_attribute("noalias")
    if fn.attrs.get("wi_strip"):
        _prefer_wide_vectors(entry)
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    params = _load_params(b, fn, lowering, argv, local_mem)
    if any("noalias" in a.attributes for a in kernel.args):
        # ``sycl.restrict`` holds for the whole launch, but the kernel's ``noalias``
        # becomes a per-call scope once it is inlined into the work-item loop, which
        # says nothing across iterations, so the loop vectoriser still needs overlap
        # checks (or gives up for indirect accesses). Run the group loop in a
        # noinline function whose pointer parameters repeat the kernel's noalias/align:
        # real noalias arguments hold for every work-item of the call. (Not
        # alwaysinline: inlined before the kernel is inlined into it, its scopes would
        # not reach the kernel's accesses.) One extra call per executor chunk.
        b, params, launch, gbegin, gend = _restrict_scope(b, llmodule, fn, kernel, params,
                                                           launch, gbegin, gend)

    def word(i):
        p = b.gep(launch, [ll.Constant(lt.I64, i)], inbounds=True, source_etype=lt.I64)
        return b.load(p, typ=lt.I64, align=8)
    desc = {"global_range": LAUNCH_GLOBAL, "local_range": LAUNCH_LOCAL,
            "group_range": LAUNCH_GROUPS, "global_offset": LAUNCH_OFFSET}
    variants = kernel_dims(fn)
    # Only the dimensions some variant reads (a 1-D kernel: 4 loads, not 12): fewer
    # instructions to print and for LLVM to parse and delete.
    used = max(variants)
    launch_vals = {k: [word(v + d) if d < used else None for d in range(3)]
                   for k, v in desc.items()}
    dims = word(LAUNCH_DIMS)
    fission, strip = uses_fission(fn), _strip_kind(fn)
    flat = module is not None and not fission and not strip and _asks_global_only(module, fn)
    exit_bb = b.function.append_basic_block("exit")
    switch = b.switch(dims, exit_bb)
    for d in variants:
        bb = b.function.append_basic_block(f"dims{d}")
        switch.add_case(ll.Constant(lt.I64, d), bb)
        b.position_at_end(bb)
        if flat and d == 1:
            _flat_item_loop(b, launch_vals, gbegin, gend, params, kernel)
        else:
            _group_loop(b, d, launch_vals, gbegin, gend, params, kernel, fission, strip)
        b.branch(exit_bb)
    b.position_at_end(exit_bb)
    b.ret_void()
    return entry


def _prefer_wide_vectors(fn: ll.Function) -> None:
    """Let the vectoriser use the host's widest vectors in a strip kernel's entry (where
    its strip loops end up): x86 CPUs with AVX-512 otherwise prefer 256 bits. FIR with
    runtime taps, 4M outputs on 2 threads (Rocket Lake): 7/16/33 taps 4.8/8.4/14.7 ->
    3.5/6.4/10.1 ms. Not for other kernels: the fully unrolled literal FIR gained little
    at 7 and 16 taps and lost at 33. A no-op where vectors are narrower."""
    set.add(fn.attributes, '"prefer-vector-width"="512"')


def _restrict_scope(b, llmodule, fn: Function, kernel: ll.Function, params, launch, gbegin,
                    gend):
    """Call ``<entry>.groups(params..., launch, group_begin, group_end)`` from ``b`` and
    return a builder in its body and its arguments; the caller's block returns."""
    ptr = ll.PointerType()
    types = [v.type for v in params] + [ptr, lt.I64, lt.I64]
    inner = ll.Function(llmodule, ll.FunctionType(lt.VOID, types), entry_symbol(fn.name) + ".groups")
    inner.linkage = "internal"
    inner.attributes.add("noinline")
    if fn.attrs.get("wi_strip"):
        _prefer_wide_vectors(inner)
    for src, dst in zip(kernel.args, inner.args[:len(params)]):
        if isinstance(dst.type, ll.PointerType):
            if "noalias" in src.attributes:
                dst.add_attribute("noalias")
            if src.attributes.align:
                dst.attributes.align = src.attributes.align
    inner.args[len(params)].add_attribute("noalias")
    b.call(inner, list(params) + [launch, gbegin, gend])
    b.ret_void()
    ib = ll.IRBuilder(inner.append_basic_block("entry"))
    *iparams, ilaunch, ibegin, iend = inner.args
    return ib, list(iparams), ilaunch, ibegin, iend


def _load_params(b, fn: Function, lowering, argv, local_mem) -> list:
    """One LLVM value per kernel LLVM parameter (ABI table), then the spec buffer."""
    values, j = [], 0

    def slot(k):
        p = b.gep(argv, [ll.Constant(lt.I64, k)], inbounds=True, source_etype=ll.PointerType())
        return b.load(p, typ=ll.PointerType(), align=8)
    for p in fn.params:
        types = param_types(p, True, lowering)
        local = type(p.type).__name__ == "LocalAccessorType"
        for k, ty in enumerate(types):
            addr = slot(j)
            j += 1
            if lt.is_aggregate(p.type):
                values.append(addr)                       # the kernel takes a pointer to the bytes
            elif local and k == 0:                        # int64 byte offset into the arena
                off = b.load(addr, typ=lt.I64, align=1)
                values.append(b.gep(local_mem, [off], inbounds=True, source_etype=lt.I8))
            else:
                values.append(b.load(addr, typ=ty, align=1))
    values.append(b.load(slot(j), typ=ll.PointerType(), align=1))   # spec-constant buffer
    return values


def _group_loop(b, dims, launch_vals, gbegin, gend, params, kernel, fission,
                strip=None) -> None:
    wi = {k: [v[d] if d < dims else (_ZERO if k == "global_offset" else _ONE)
              for d in range(3)] for k, v in launch_vals.items()}

    def per_group(g):
        grp, rem = [_ZERO] * 3, g
        for d in reversed(range(dims)):  # dimension 0 varies slowest
            grp[d] = rem if d == 0 else b.urem(rem, wi["group_range"][d])
            rem = b.udiv(rem, wi["group_range"][d]) if d else rem
        if fission and not strip:
            b.call(kernel, params + _hidden(wi, grp, [_ZERO] * 3))
            return
        base = [b.mul(grp[d], wi["local_range"][d]) for d in range(dims)]
        hi = [_smin(b, wi["local_range"][d], b.sub(wi["global_range"][d], base[d]))
              for d in range(dims)]
        lid = [_ZERO] * 3

        def nest(d):
            if d == dims:
                b.call(kernel, params + _hidden(wi, grp, lid))
                return
            def body(i):
                lid[d] = i
                nest(d + 1)
            if strip == "rows" and d == dims - 1:
                # Row kernel: one call for the whole row.
                lid[d] = _ZERO
                b.call(kernel, params + _hidden(wi, grp, lid) + [hi[d]])
                return
            if strip and d == dims - 1:
                # Strip kernel: one call per ``strip`` items of the last dimension.
                w = ll.Constant(lt.I64, int(strip))

                def per_strip(s):
                    lid[d] = s
                    b.call(kernel, params + _hidden(wi, grp, lid) +
                           [_smin(b, b.add(s, w), hi[d])])
                counted_loop(b, _ZERO, hi[d], f"strip{d}", per_strip, step=w)
                return
            counted_loop(b, _ZERO, hi[d], f"item{d}", body)
        nest(0)
    counted_loop(b, gbegin, gend, "group", per_group)


#: Work-item queries whose answer does not depend on how the index space is cut into
#: work-groups.
_GLOBAL_QUERIES = frozenset({"wi.global_id", "wi.global_range", "wi.global_offset",
                             "wi.global_linear_id"})


def _asks_global_only(module: Module, fn: Function) -> bool:
    """A range kernel (its work-groups are the executor's choice; the caller has ruled
    out barriers and strips) whose code, the functions it calls included, asks only
    ``_GLOBAL_QUERIES`` (no local or group ids, no sub-groups, no per-item slots): its
    entry need not make groups."""
    if not _is_range_kernel(fn):
        return False
    functions = {f.name: f for f in module.functions}
    todo, seen = [fn], {fn.name}
    while todo:
        for op in todo.pop().walk():
            name = op.name
            if name.startswith(("wi.", "sg.")) and name not in _GLOBAL_QUERIES:
                return False
            if name in ("barrier", "wg.items") or (name == "var" and op.attrs.get("per_item")):
                return False   # (a callee's barrier: the kernel's own were ruled out)
            callee = functions.get(op.attrs.get("callee")) if name == "call" else None
            if callee is not None and callee.name not in seen:
                seen.add(callee.name)
                todo.append(callee)
    return True


def _flat_item_loop(b, launch_vals, gbegin, gend, params, kernel) -> None:
    """Groups ``[gbegin, gend)`` of a 1-D range launch as one loop over their items
    ``[gbegin * local, min(gend * local, global))``, each called as local id ``i`` of
    group 0 (global id ``i + offset``: all such a kernel asks, ``_asks_global_only``).
    One loop instead of a loop nest: LLVM vectorises it once per call rather than once
    per group, and optimising and emitting it took a quarter less time (a multiply-add
    with a branch: 17.6 -> 13.0 ms)."""
    local = launch_vals["local_range"][0]
    wi = {k: [v[0], _ONE, _ONE] if k != "global_offset" else [v[0], _ZERO, _ZERO]
          for k, v in launch_vals.items()}
    lo = b.mul(gbegin, local)
    hi = _smin(b, b.mul(gend, local), wi["global_range"][0])
    counted_loop(b, lo, hi, "item0", lambda i: b.call(
        kernel, params + _hidden(wi, [_ZERO] * 3, [i, _ZERO, _ZERO])))


def _hidden(wi: dict, grp: list, lid: list) -> list:
    return (wi["global_range"] + wi["local_range"] + wi["group_range"] + wi["global_offset"]
            + list(grp) + list(lid))


def _smin(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _smax(b, x, y):
    return b.select(b.icmp_signed(">", x, y), x, y)


__all__ = ["NativeCpuLowering", "WorkItemState", "build_entry", "counted_loop", "kernel_dims",
           "ScalarType"]
