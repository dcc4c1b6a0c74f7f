"""Values and var slots across the regions that work-group fission made.

After ``work_group_fission`` has split a kernel into ``wg.items`` regions and group-level
control ops, an SSA value may be used outside the region that defines it:

- by another ``wg.items`` region: recomputed there when its definition is a small pure
  expression (constants, work-item queries, arithmetic, accessor pointers: recomputing is
  as cheap as reloading and keeps the LLVM vectoriser's view simple), else stored per item
  in a var ``wg.pN`` (``per_item = true``) and loaded at the start of the using region;
- by a group-level op (loop bounds, if conditions, a while's ``yield``): recomputed at
  group level when it is a pure expression without work-item queries, else stored into a
  group var ``wg.uN`` by every item and loaded before the op. Every item stores the same
  value because control flow around barriers is work-group uniform.

``wg.`` names cannot clash with Python locals (a dot is not allowed in identifiers).

>>> from pysycl.ir.core import Function, Region
>>> localise_values(Function("k", "kernel", [], body=Region()))
[]
"""
from __future__ import annotations

from pysycl._records import Record
from pysycl.errors import errc, exception
from pysycl.ir.clone import clone_op
from pysycl.ir.core import Function, Op, Region, Value
from pysycl.ir.effects import PURE, PURE_PER_ITEM
from pysycl.ir.verifier import describe_loc

MAX_RECOMPUTE = 24  # ops; longer expressions go through a var


class _Use(Record):
    _fields = ("op", "index", "ctx", "region")
    op: Op
    index: int
    ctx: Op | None          # the wg.items op around the use; None at group level
    region: Region          # the region holding ``op``

    def __init__(self, op, index, ctx, region):
        self.op = op
        self.index = index
        self.ctx = ctx
        self.region = region


class _Localiser:
    def __init__(self, f: Function):
        self.f = f
        self.defs: dict[Value, Op | None] = {}
        self.sites: dict[Value, tuple[Region, Op]] = {}
        self.uses: dict[Value, list[_Use]] = {}
        self.new_vars: list[Op] = []
        self.cursor: dict[int, int] = {}       # id(wg.items) -> ops inserted at its start
        self.loaded: dict[tuple, Value] = {}    # (value, id(ctx)) -> replacement there
        self.stored: dict[tuple, str] = {}      # (value, per_item) -> var name

    def collect(self, r: Region, ctx: Op | None) -> None:
        for op in r.ops:
            for i, v in enumerate(op.operands):
                d = self.defs.get(v)
                if v.owner is not None and d is not None and d is not ctx:
                    self.uses.setdefault(v, []).append(_Use(op, i, ctx, r))
            inner = op if op.name == "wg.items" else ctx
            for reg in op.regions:
                self.collect(reg, inner)
            if op.result is not None:
                self.defs[op.result] = ctx
                self.sites[op.result] = (r, op)

    def recompute_chain(self, v: Value, at_group: bool) -> list[Op] | None:
        """Ops (in order) that recompute ``v`` from values visible everywhere, or None."""
        allowed = PURE if at_group else PURE | PURE_PER_ITEM
        chain: list[Op] = []

        def visit(x: Value) -> bool:
            if x.owner is None or self.defs.get(x) is None or x.owner in chain:
                return True
            if x.owner.name not in allowed or len(chain) >= MAX_RECOMPUTE:
                return False
            if not all(visit(o) for o in x.owner.operands):
                return False
            chain.append(x.owner)
            return True

        return chain if visit(v) else None

    def fix(self, v: Value, uses: list[_Use]) -> None:
        for use in uses:
            at_group = use.ctx is None
            key = (v, id(use.ctx) if use.ctx is not None else id(use.op))
            if key not in self.loaded:
                self.loaded[key] = self.materialise(v, use, at_group)
            use.op.operands[use.index] = self.loaded[key]

    def materialise(self, v: Value, use: _Use, at_group: bool) -> Value:
        chain = self.recompute_chain(v, at_group)
        ops: list[Op]
        if chain is not None:
            value_map: dict[Value, Value] = {}
            ops = [clone_op(op, value_map) for op in chain]
            result = value_map[v]
        else:
            name = self.var_for(v, per_item=not at_group)
            ops = [Op("var.load", type=v.type, attrs={"name": name}, loc=v.owner.loc)]
            result = ops[0].result
        if at_group:
            i = use.region.ops.index(use.op)
            use.region.ops[i:i] = ops
        else:
            region, start = use.ctx.regions[0], self.cursor.get(id(use.ctx), 0)
            region.ops[start:start] = ops
            self.cursor[id(use.ctx)] = start + len(ops)
        return result

    def var_for(self, v: Value, per_item: bool) -> str:
        key = (v, per_item)
        if key not in self.stored:
            name = f"wg.{'p' if per_item else 'u'}{len(self.new_vars)}"
            self.stored[key] = name
            loc = v.owner.loc
            self.new_vars.append(Op("var", attrs={"name": name, "type": v.type,
                                                  "per_item": per_item}, loc=loc))
            region, op = self.sites[v]
            i = region.ops.index(op)
            region.ops.insert(i + 1, Op("var.store", [v], attrs={"name": name}, loc=loc))
        return self.stored[key]


def localise_values(f: Function) -> list[Op]:
    """Rewrite cross-region SSA uses of ``f``; return the var decls it needs at the top."""
    loc = _Localiser(f)
    loc.collect(f.body, None)
    for v, uses in loc.uses.items():
        loc.fix(v, uses)
    return loc.new_vars


class _Access(Record):
    _fields = ("ctx", "in_group_loop", "kind")
    ctx: Op | None
    in_group_loop: bool
    kind: str

    def __init__(self, ctx, in_group_loop, kind):
        self.ctx = ctx
        self.in_group_loop = in_group_loop
        self.kind = kind


def place_vars(f: Function, hoisted: list[Op], fission_vars: list[Op]) -> None:
    """Declare the var slots taken out of group-level regions where fission needs them."""
    accesses: dict[str, list[_Access]] = {}
    _collect_accesses(f.body, None, False, accesses)
    top: list[Op] = []
    for decl in _unique_decls(hoisted):
        name = decl.attrs["name"]
        acc = accesses.get(name, [])
        ctxs = {id(a.ctx) for a in acc}
        if "per_item" in decl.attrs or not acc:
            top.append(decl)
        elif any(a.ctx is None for a in acc):
            bad = next((a for a in acc if a.ctx is not None and a.kind != "var.load"), None)
            if bad is not None:
                raise exception(errc.build, f"{describe_loc(decl.loc)}: the variable {name!r} "
                                "of a loop that contains group_barrier is assigned in the loop "
                                "body; the native CPU device does not support that")
            top.append(decl)
        elif len(ctxs) == 1 and not acc[0].in_group_loop:
            acc[0].ctx.regions[0].ops.insert(0, decl)
        else:
            decl.attrs["per_item"] = True
            top.append(decl)
    f.body.ops[0:0] = top + fission_vars


def _unique_decls(decls: list[Op]) -> list[Op]:
    seen: dict[str, Op] = {}
    for d in decls:
        other = seen.get(d.attrs["name"])
        if other is None:
            seen[d.attrs["name"]] = d
        elif other.attrs["type"] != d.attrs["type"]:
            raise exception(errc.build, f"{describe_loc(d.loc)}: the variable "
                            f"{d.attrs['name']!r} is declared with types {other.attrs['type']} "
                            f"and {d.attrs['type']}; work-group fission needs one type")
    return list(seen.values())


def _collect_accesses(r: Region, ctx: Op | None, in_loop: bool,
                      out: dict[str, list[_Access]]) -> None:
    for op in r.ops:
        if op.name in ("var.load", "var.store", "var.addr"):
            out.setdefault(op.attrs["name"], []).append(_Access(ctx, in_loop, op.name))
        elif op.name == "for":
            out.setdefault(op.attrs["var"], []).append(_Access(ctx, in_loop, "for"))
        inner_loop = in_loop or (ctx is None and op.name in ("for", "while"))
        inner = op if op.name == "wg.items" else ctx
        for reg in op.regions:
            _collect_accesses(reg, inner, inner_loop, out)


def drop_dead_code(f: Function) -> None:
    """Remove pure ops whose results fission left unused (the originals of recomputed
    values), then ``wg.items`` regions left empty: fewer items loops to run."""
    while True:
        used = {v for op in f.walk() for v in op.operands}
        if not _drop(f.body, used):
            return


def _drop(r: Region, used: set) -> bool:
    before = len(r.ops)
    r.ops = [op for op in r.ops if not (
        (op.result is not None and op.result not in used and op.name in PURE | PURE_PER_ITEM)
        or (op.name == "wg.items" and not op.regions[0].ops))]
    changed = len(r.ops) != before
    for op in r.ops:
        for reg in op.regions:
            changed |= _drop(reg, used)
    return changed
