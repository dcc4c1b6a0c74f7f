"""Rules for structured control flow, calls, work-item queries, barriers and groups.

Loops push a :class:`~.context.LoopTarget` so ``break``/``continue`` find their blocks;
``while``'s cond region ends with ``yield``, which branches to the body or the exit.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ..ir.loops import constant_int, full_unroll_wanted
from ..ir.types import PointerType, ScalarType
from . import types as lt
from . import debug_checks
from .context import AccessorValue, LoopTarget, rule
from .rules_memory import declare_var, index64, var_address


@rule("if")
def lower_if(ctx, op):
    then_r, else_r = op.regions
    then_bb, else_bb, merge = ctx.block("if.then"), ctx.block("if.else"), ctx.block("if.end")
    ctx.builder.cbranch(ctx.get(op.operands[0]), then_bb, else_bb)
    for bb, region in ((then_bb, then_r), (else_bb, else_r)):
        ctx.builder.position_at_end(bb)
        ctx.lower_region(region)
        ctx.branch_if_open(merge)
    ctx.builder.position_at_end(merge)


def trip_count(ctx, lo, hi, step):
    """len(range(lo, hi, step)) in i64, computed once (0 for step == 0, where Python
    raises ValueError)."""
    bld, zero, one = ctx.builder, ll.Constant(lt.I64, 0), ll.Constant(lt.I64, 1)
    pos = bld.icmp_signed(">", step, zero)
    neg = bld.icmp_signed("<", step, zero)
    span = bld.select(pos, bld.sub(hi, lo), bld.sub(lo, hi))
    den = bld.select(pos, step, bld.select(neg, bld.sub(zero, step), one))
    n = bld.add(bld.udiv(bld.sub(span, one), den), one)
    has = bld.and_(bld.icmp_signed(">", span, zero), bld.or_(pos, neg))
    return bld.select(has, n, zero)


class LoopID(ll.values.MDValue):
    """``distinct !{!self, ops...}``: an LLVM loop ID (its first operand is itself)."""

    def __init__(self, module: ll.Module, ops: list):
        super().__init__(module, ops, name=str(len(module.metadata)))

    def descr(self, buf):
        refs = ", ".join([self.get_reference()] + [o.get_reference() for o in self.operands])
        buf += (f"distinct !{{ {refs} }}", "\n")

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def full_unroll_md(module: ll.Module) -> LoopID:
    return LoopID(module, [module.add_metadata([ll.MetaDataString(module,
                                                                  "llvm.loop.unroll.full")])])


@rule("for")
def lower_for(ctx, op):
    lo_v, hi_v, step_v = op.operands
    t: ScalarType = lo_v.type
    lo, hi, step = (index64(ctx, v) for v in op.operands)
    if constant_int(step_v) == 1:
        # ``k < hi - lo`` runs len(range(lo, hi)) times (none when hi <= lo) without the
        # smax(hi - lo, 0) of the general count: a backend that sees ``hi`` only late
        # (a SPIR-V spec constant set at clBuildProgram) folds a plain compare, not an
        # OpenCL.std s_max, so the loop unrolls as from a #define (FIR: 4x faster).
        n = ctx.builder.sub(hi, lo)
    else:
        n = trip_count(ctx, lo, hi, step)
    name = op.attrs["var"]
    if name not in ctx.vars:
        declare_var(ctx, name, t)
    bld = ctx.builder
    pre = bld.block
    header, body, latch, done = (ctx.block(f"for.{s}") for s in ("cond", "body", "inc", "end"))
    bld.branch(header)
    bld.position_at_end(header)
    k = bld.phi(lt.I64, name="k")
    k.add_incoming(ll.Constant(lt.I64, 0), pre)
    bld.cbranch(bld.icmp_signed("<", k, n), body, done)
    bld.position_at_end(body)
    i = bld.add(lo, bld.mul(k, step))
    ptr, vt = var_address(ctx, name, op)
    ctx.store(bld.trunc(i, ctx.vtype(vt)) if vt.bits < 64 else i, ptr, vt)
    ctx.loops.append(LoopTarget(latch, done))
    ctx.lower_region(op.regions[0])
    ctx.loops.pop()
    ctx.branch_if_open(latch)
    bld.position_at_end(latch)
    k.add_incoming(bld.add(k, ll.Constant(lt.I64, 1)), latch)
    br = bld.branch(header)
    if getattr(ctx.lowering, "full_unroll_small_loops", False) and full_unroll_wanted(op):
        br.set_metadata("llvm.loop", full_unroll_md(ctx.llmodule))
    elif op.attrs.get("vectorize") is False:
        br.set_metadata("llvm.loop", no_vectorize_md(ctx.llmodule))
    bld.position_at_end(done)


def no_vectorize_md(module: ll.Module) -> LoopID:
    """``llvm.loop.vectorize.enable false``: a serial loop of one work-item (a
    reduction's last work-group combining the others' results) gains nothing from
    vectors, and LLVM 22's SPIR-V backend aborts on the ``bitcast <N x i1>`` of a
    vectorised boolean and/or-reduction."""
    md = module.add_metadata([ll.MetaDataString(module, "llvm.loop.vectorize.enable"),
                              ll.Constant(lt.I1, 0)])
    return LoopID(module, [md])


@rule("while")
def lower_while(ctx, op):
    cond_r, body_r = op.regions
    cond_bb, body_bb, done = ctx.block("while.cond"), ctx.block("while.body"), ctx.block("while.end")
    ctx.builder.branch(cond_bb)
    ctx.builder.position_at_end(cond_bb)
    ctx.loops.append(LoopTarget(cond_bb, done))
    ctx.yield_targets.append((body_bb, done))
    ctx.lower_region(cond_r)
    ctx.yield_targets.pop()
    if not ctx.terminated():
        raise ctx.error(op, "a while condition region must end with yield")
    ctx.builder.position_at_end(body_bb)
    ctx.lower_region(body_r)
    ctx.loops.pop()
    ctx.branch_if_open(cond_bb)
    ctx.builder.position_at_end(done)


@rule("yield")
def lower_yield(ctx, op):
    if not ctx.yield_targets:
        raise ctx.error(op, "yield outside a while condition")
    body_bb, done = ctx.yield_targets[-1]
    ctx.builder.cbranch(ctx.get(op.operands[0]), body_bb, done)


@rule("break", "continue")
def lower_break_continue(ctx, op):
    if not ctx.loops:
        raise ctx.error(op, f"{op.name} outside a loop")
    loop = ctx.loops[-1]
    ctx.builder.branch(loop.break_block if op.name == "break" else loop.continue_block)


@rule("return")
def lower_return(ctx, op):
    if op.operands and lt.has_storage(op.operands[0].type) and ctx.llfn.return_value.type != lt.VOID:
        ctx.builder.ret(ctx.get(op.operands[0]))
    else:
        ctx.builder.ret_void()


@rule("assert")
def lower_assert(ctx, op):
    """Removed unless debug; checked in debug builds
    (``PYSYCL_DEBUG``, see :mod:`.debug_checks`)."""
    if not debug_checks.enabled(ctx, "assert"):
        return
    debug_checks.check(ctx, op, ctx.get(op.operands[0]), "assert",
                       f"assertion failed: {op.attrs.get('msg') or 'assert'}")


@rule("check")
def lower_check(ctx, op):
    """A bounds check of a checked build (``passes/bounds_checks``)."""
    ok, index, extent = ctx.operands(op)
    debug_checks.check(ctx, op, ok, "bounds", op.attrs["what"], index, extent)


def call_args(ctx, values) -> list:
    """IR call operands -> LLVM arguments (the same expansion as parameters)."""
    out = []
    for v in values:
        if not lt.has_storage(v.type):
            continue
        x = ctx.get(v)
        if isinstance(x, AccessorValue):
            if not lt.is_expanded(v.type):
                out.append(x.ptr)
            elif x.access is None:       # local accessor
                out += [x.ptr, *x.ranges]
            else:
                out += [x.ptr, *x.access, *x.ranges, *x.offsets, x.offset]
        else:
            out.append(x)
            if isinstance(v.type, PointerType) and v.type.space == "global" and \
                    debug_checks.bounds_build(ctx.lowering):
                out.append(debug_checks.bytes_after(ctx, v, x))   # a checked build
    return out


@rule("call")
def lower_call(ctx, op):
    callee = op.attrs["callee"]
    fn = ctx.functions.get(callee)
    if fn is None:
        raise ctx.error(op, f"call to unknown function {callee!r}")
    args = call_args(ctx, op.operands) + [ctx.spec_buffer] + ctx.lowering.hidden_args(ctx)
    result = ctx.builder.call(fn, args)
    return result if op.result is not None and lt.has_storage(op.type) else None


# Work-items, groups, barriers ----------------------------------------------------------
def _wi_rule(query: str):
    def lower_work_item(ctx, op):
        dim = op.attrs.get("dim")
        return ctx.lowering.work_item(ctx, query, None if dim is None else int(dim))
    lower_work_item.__name__ = f"lower_wi_{query}"
    return lower_work_item


for _q in ("global_id", "local_id", "group_id", "global_range", "local_range", "group_range",
           "global_offset", "global_linear_id", "local_linear_id", "group_linear_id"):
    rule(f"wi.{_q}")(_wi_rule(_q))
for _q in ("local_id", "local_range", "group_id", "group_range", "max_local_range"):
    rule(f"sg.{_q}")(lambda ctx, op, _q=_q: ctx.lowering.sub_group(ctx, _q))


@rule("barrier")
def lower_barrier(ctx, op):
    ctx.lowering.barrier(ctx, op)


@rule("group.scan", "group.broadcast", "group.shuffle")
def lower_group_op_by_pass(ctx, op):
    """Targets without these group primitives lower them in a pass first (native CPU:
    passes/lower_group_reduce.py); devices override the rule."""
    raise ctx.error(op, f"{op.name} {{scope = {op.attrs['scope']}}} reached code generation "
                        "for a target that lowers it in a pass")


@rule("group.reduce")
def lower_group_reduce(ctx, op):
    if op.attrs["scope"] == "work_group":
        raise ctx.error(op, "reduce_over_group at work_group scope must be lowered by a pass "
                            "before code generation")
    return ctx.lowering.sub_group_reduce(ctx, op, ctx.get(op.operands[0]))


@rule("wg.items")
def lower_wg_items(ctx, op):
    ctx.lowering.work_group_items(ctx, op)


__all__ = ["call_args", "trip_count"]
