"""Thread coarsening: each work-item of a launch does the work of ``K`` consecutive
work-items of the user's range along one dimension ``d``.

A one-output-per-work-item stencil reads each input row three times, once for each
output row it feeds. With four consecutive rows per work-item (unrolled copies of the
body) the copies read the same rows, which LLVM and ptxas keep in registers: the 3x3
convolution of ``benchmarks/gpu.py`` loads 18 values for 4 outputs instead of 36, and
runs as fast as Triton's, without the user writing the coarsened kernel by hand.

The launch covers ``ceil(G / K)`` work-items along ``d`` (``G`` the user's extent,
rounded up to a multiple of the work-group size of an nd_range), the runtime passes
``G`` as one more ``i64`` argument (the last parameter, ``coarsen.extent``) and the
kernel becomes::

    first = o + (wi.global_id(d) - o) * K           # o: the launch's offset along d
    if first + 0 - o < G: <body, as work-item first + 0>
    ...
    if first + K-1 - o < G: <body, as work-item first + K-1>

Each copy sees exactly what its work-item would have seen: ``global_id(d)`` is its own
id, ``global_range(d)`` is ``G``, ``global_linear_id`` is computed from those, offsets and
the other dimensions are the launch's (which are the user's). Copies 1..K-1 get their
own locals (``name@k``), so nothing flows from one copy to the next but memory. A
``return`` ends its copy only (returns become exits of a one-trip loop first,
``lower_reducers.structure_returns``). Items past ``G`` skip every copy, which is also
why a range not divisible by ``K`` needs nothing else. Which kernels qualify and which
``(d, K)`` a build uses: ``coarsen_candidates.py``; the plan reaches this pass in
``options.extra["coarsen"]`` (kernel name -> (d, K)), and the runtime learns it from
the executable image's ``PYSYCL/coarsening`` property set (``bundle/coarsening.py``).

A kernel with reducers (a ``range`` kernel) keeps one accumulator per reducer for all
its copies: each copy combines into it as its work-item would have into its own, and
``lower_reducers``, which runs after this pass, appends one work-group reduction and
one write per work-group after the copies. Its copies need no neighbour's data, so
they take work-items ``S = ceil(G / K)`` apart instead of consecutive ones (copy ``k``
is work-item ``wi.global_id(d) + k * S``): at each copy the work-items of a warp read
consecutive elements, as the uncoarsened kernel does.

>>> from pysycl.ir.core import Module
>>> coarsen_threads(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.builder import Builder
from pysycl.ir.clone import clone_region
from pysycl.ir.core import Function, Module, Op, Param, Region, Value
from pysycl.ir.types import BOOL, I64

from .coarsen_candidates import ATTR, index_dims
from .lower_reducers import structure_returns
# The interior prover of the row split: its forms, with x the coarsened id here.
from .split_item_range import LIMIT, _Affine, _Splitter

#: The name of the parameter that holds the user's extent along the coarsened dimension.
EXTENT_PARAM = "coarsen.extent"
#: The function attribute of a coarsened kernel: ``{dim, factor}`` (for dumps and tests).
DONE_ATTR = "coarsened"
_RENAMED = ("var", "var.load", "var.store", "var.addr")


def coarsen_threads(m: Module, options=None) -> Module:
    """Coarsen the kernels of ``m`` that ``options.extra["coarsen"]`` names (in place)."""
    plans = (options.extra.get("coarsen") if options is not None else None) or {}
    for fn in m.kernels:
        plan = plans.get(fn.name)
        if plan is not None and fn.body is not None:
            coarsen_kernel(fn, *plan)
    return m


def coarsen_kernel(fn: Function, dim: int, factor: int) -> None:
    """Make each work-item of ``fn`` run its body for ``factor`` consecutive work-items
    along ``dim`` (in place). The caller checked that ``fn`` is a candidate."""
    dims = index_dims(fn)
    if dims is None or not 0 <= dim < dims or factor < 2:
        raise ValueError(f"cannot coarsen kernel {fn.name} by {factor} along {dim}")
    structure_returns(fn)
    shared = frozenset(r["acc"] for r in fn.attrs.get("reducers") or ())
    prover = _BlockProver(fn, dim)
    proven = prover.collect()
    own = [op for op in fn.body.ops if op.name == "var"]
    body = Region([op for op in fn.body.ops if op.name != "var"])
    extent = Param(EXTENT_PARAM, I64)
    fn.params.append(extent)
    offset = prover.emit("wi.global_offset", dim=dim)
    launched = prover.emit("wi.global_id", dim=dim)
    if shared:    # work-items S = ceil(G / K) apart (the launch's extent along dim)
        first = launched
        stride = prover.emit("floordiv", prover.emit("add", extent.value,
                                                     prover.const(factor - 1)),
                             prover.const(factor))
        last = prover.emit("add", first, prover.emit("mul", stride,
                                                     prover.const(factor - 1)))
    else:         # consecutive work-items
        first = prover.emit("add", offset, prover.emit(
            "mul", prover.emit("sub", launched, offset), prover.const(factor)))
        stride = first   # (unused)
        last = prover.emit("add", first, prover.const(factor - 1))
    fast = prover.block_holds(first, last, offset, extent.value)
    head = _substituted(Region(prover.live_pre([first, stride, fast])),
                        {("wi.global_range", dim): extent.value})
    out = Builder(head, fn.loc)
    then, other = out.if_(fast)
    block = _Block(dims, dim, factor, first, stride, offset, extent.value, body, shared)
    block.emit(then, {op: value for op, _, value in proven})   # all inside, proven values
    block.emit(other, None)                                     # each copy checks
    fn.body.ops = own + [_renamed_decl(op, k) for k in range(1, factor) for op in own
                         if op.attrs["name"] not in shared] + head.ops
    fn.attrs.pop(ATTR, None)
    fn.attrs[DONE_ATTR] = {"dim": dim, "factor": factor}


class _BlockProver(_Splitter):
    """The interior prover of the native CPU's row split (``split_item_range``), with
    ``x`` the id along the coarsened dimension: a comparison proven there has its wanted
    value for every ``x`` of an interval, so for every copy of a block of work-items
    inside it. (Everything but ``x`` is the same in all copies of a thread.)"""

    def _affine_of(self, v: Value):
        op = v.owner
        if op is not None and op.name == "wi.global_id" and op.attrs["dim"] == self.d:
            zero = self.const(0)
            return _Affine(1, zero, zero, LIMIT, frozenset())
        if op is not None and op.name in _NOT_AFFINE:
            return None      # (the row split's local-id forms do not apply here)
        return super()._affine_of(v)

    def block_holds(self, first: Value, last: Value, offset: Value, extent: Value) -> Value:
        """Whether work-items ``first .. last`` (the copies' lowest and highest) all
        exist and lie where every proven comparison holds (and the values it was proven
        from within LIMIT): the comparisons hold on an interval, so on all of those."""
        conds = [self.emit("cmp", first, self.const(-LIMIT), type=BOOL, pred="ge"),
                 self.emit("cmp", last, self.const(LIMIT), type=BOOL, pred="le"),
                 self.emit("cmp", self.emit("sub", last, offset), extent, type=BOOL,
                           pred="lt")]
        conds += [self.emit("cmp", first, lo, type=BOOL, pred="ge") for lo in self.los]
        conds += [self.emit("cmp", last, hi, type=BOOL, pred="lt") for hi in self.his]
        for e, f in self.excluded:
            conds.append(self.emit("or", self.emit("cmp", last, e, type=BOOL, pred="lt"),
                                   self.emit("cmp", first, f, type=BOOL, pred="gt"),
                                   type=BOOL))
        conds += [*self.oks, *sorted(self.checks, key=self._order)]
        ok = conds[0]
        for c in conds[1:]:
            ok = self.emit("and", ok, c, type=BOOL)
        return ok


_NOT_AFFINE = frozenset({"wi.global_linear_id", "wi.local_linear_id", "wi.local_id"})


class _Block:
    """Emits the ``factor`` copies of a body, one per work-item of a block."""

    def __init__(self, dims: int, dim: int, factor: int, first: Value, stride: Value,
                 offset: Value, extent: Value, body: Region, shared: frozenset[str]):
        self.dims, self.dim, self.factor = dims, dim, factor
        self.first, self.stride, self.offset = first, stride, offset
        self.extent, self.body, self.shared = extent, body, shared
        self.linear = any(op.name == "wi.global_linear_id" for op in body.walk())

    def emit(self, b: Builder, known: dict[Op, bool] | None) -> None:
        """The copies into ``b``: with ``known`` (cmp op -> value), unguarded and with
        those comparisons constant; without, each guarded by its item's existence."""
        for k in range(self.factor):
            step = b.const(k, I64) if not self.shared else \
                b.op("mul", self.stride, b.const(k, I64), type=I64)
            item = self.first if k == 0 else b.op("add", self.first, step, type=I64)
            rewrite = {("wi.global_id", self.dim): item,
                       ("wi.global_range", self.dim): self.extent}
            if self.linear:
                rewrite[("wi.global_linear_id", None)] = _linear_id(
                    b, self.dims, self.dim, item, self.extent)
            where = b
            if known is None:
                inside = b.op("cmp", b.op("sub", item, self.offset, type=I64), self.extent,
                              type=BOOL, pred="lt")
                where, _ = b.if_(inside)
            copies: dict[Value, Value] = {}
            copy = clone_region(self.body, copies)
            for op, value in (known or {}).items():
                _make_constant(copies[op.result].owner, value)
            if k:
                _rename_vars(copy, k, self.shared)
            where.region.ops.extend(_substituted(copy, rewrite).ops)


def _make_constant(op: Op, value: bool) -> None:
    """Turn the comparison ``op`` into the constant ``value`` (its uses stay)."""
    op.name, op.operands, op.attrs = "const", [], {"value": bool(value)}


def _linear_id(b: Builder, dims: int, dim: int, item: Value, extent: Value) -> Value:
    """SYCL 2020 4.9.1.7: the id less the offset, linearised over the range (row-major),
    with ``item`` and ``extent`` standing for the coarsened dimension."""
    total = None
    for i in range(dims):
        gid = item if i == dim else b.op("wi.global_id", type=I64, dim=i)
        rel = b.op("sub", gid, b.op("wi.global_offset", type=I64, dim=i), type=I64)
        if total is None:
            total = rel
        else:
            size = extent if i == dim else b.op("wi.global_range", type=I64, dim=i)
            total = b.op("add", b.op("mul", total, size, type=I64), rel, type=I64)
    return total


def _renamed_decl(op: Op, k: int) -> Op:
    return Op("var", attrs={**op.attrs, "name": f"{op.attrs['name']}@{k}"}, loc=op.loc)


def _rename_vars(r: Region, k: int, shared: frozenset[str]) -> None:
    """Copy ``k`` of the body gets locals of its own (but the reducers' accumulators,
    ``shared``, which all copies combine into)."""
    for op in r.walk():
        if op.name in _RENAMED and op.attrs["name"] not in shared:
            op.attrs["name"] = f"{op.attrs['name']}@{k}"
        elif op.name == "for":
            op.attrs["var"] = f"{op.attrs['var']}@{k}"


def _substituted(r: Region, rewrite: dict) -> Region:
    """``r`` without its work-item queries that ``rewrite`` answers ((op name, dim) ->
    value); their uses read the answers instead."""
    subst: dict[Value, Value] = {}

    def strip(region: Region) -> None:
        kept = []
        for op in region.ops:
            new = rewrite.get((op.name, op.attrs.get("dim")))
            if new is not None and op.result is not None:
                subst[op.result] = new
                continue
            for sub in op.regions:
                strip(sub)
            kept.append(op)
        region.ops = kept
    strip(r)
    for op in r.walk():
        if any(v in subst for v in op.operands):
            op.operands = [subst.get(v, v) for v in op.operands]
    return r


__all__ = ["DONE_ATTR", "EXTENT_PARAM", "coarsen_kernel", "coarsen_threads"]
