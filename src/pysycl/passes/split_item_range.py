"""Index-set splitting of the work-item loop of the native CPU: an interior without guards.

The native backend runs a kernel without barriers as a loop over the work-items of each
row (the last dimension, SYCL's fastest-varying one), which LLVM vectorises. A stencil
guards its neighbours::

    for j in range(-1, 2):
        c = it.get_id(1) + j
        if c >= 0 and c < cols:
            acc += coeff[(i + 1) * 3 + j + 1] * inp[r, c]

The guard differs between the items of a row, so the vectoriser if-converts it: the
``inp`` load becomes a masked load and the ``coeff`` load, one address for every item,
a masked gather (LLVM may not load it unconditionally: nothing says it is
dereferenceable when no item takes the branch). Yet the guard is false only for the
item at either end of a row. The 3x3 convolution over 4096^2 floats ran 5.2x the memory
floor this way; Intel's OpenCL compiler, which vectorises the same SPIR-V without masks
in the interior, 1.5x.

What this pass proves: a comparison ``a < b`` (``<=``, ``>``, ``>=``) of i64 values where
``a - b = s * x + u``, with ``x`` the item's local id along the last dimension,
``s`` in {-1, 0, 1} and ``u`` the same for every item of a row (built by ``+``, ``-``,
unary ``-``, ``*`` by a constant, ``min``/``max`` from constants, kernel arguments,
ranges, offsets, ids of the other dimensions, accessor ranges, spec constants, and
locals holding such values, and narrower integers widened to i64), holds for *every*
possible ``u`` exactly on an interval of ``x``; ``a != b`` holds outside an interval,
and the interior keeps the larger side of it (chosen per row). Normalised to ``s * x + u < c`` (``c`` is 0 or 1; ``>``/``>=`` negate both sides)
it holds for all ``u`` when ``x < c - max u`` (``s = 1``), ``x > max u - c``
(``s = -1``), or everywhere or nowhere (``max u < c``, ``s = 0``). Locals are followed
when they have one store that dominates the read (``c = it.get_id(1) + j``); a loop
variable read inside its own loop (no other store to it, constant step, bounds of the
kind above) stands for any value of its range, so ``u`` is an interval ``[lo, hi]`` and
the claims hold for each iteration.

The rewrite, for a kernel with at least one such comparison on ``x`` (``s != 0``)::

    <ops computing lo and hi once per row>          # pure, from uniform values only
    wg.items(lo, hi) { <the kernel body> }          # attr wi_rows on the kernel

with ``interior = true`` or ``interior = false`` on every proven comparison. Which value
a comparison should have on the interior is read from how the kernel uses it
(``wanted_values``): the condition of an ``if`` that does the work should be true
(``if c >= 0 and c < w: acc += ...``), that of an early exit false (``if c < 0 or c >=
w: continue``, ``if r == 0 or ...: return``, ``if i + k >= n: break``), through
``not``, ``and``/``or`` chains and the bool locals the frontend makes of them; the
comparison is then proven in that sense (``a < b`` false is ``a >= b`` true). The native
backend (``lowering.py``)
calls such a *row kernel* once per row of a work-group and runs the row as two loops: one
over the items of ``[lo, hi)`` (clamped to the row) with every ``interior`` comparison
lowered as its constant, so the guarded code is unconditional and a uniform load is
one scalar load the vectoriser broadcasts; and one over the rest of the row, with the
kernel as written. Items of a kernel without barriers may run in any order (SYCL 2020
3.8.1), so splitting the row is invisible; rows where a uniform (``s = 0``) comparison
fails, or every row when the interval is empty, simply take the second loop.

Soundness: the claim "true on ``[lo, hi)``" reasons about exact integers, the kernel
computes in wrapping i64. ``+``, ``-`` and ``*`` wrap consistently (modulo 2**64), so the
kernel's value of a compared expression is the exact one when the exact one fits in i64.
Each value the bounds are built from is checked at run time to lie in
``[-2**60, 2**60]`` (constants at compile time), and so is the row length; a comparison
is taken only when ``sum(|coefficient| * bound)`` over its terms is at most ``6 * 2**60``
(``MAX_MAG``), which bounds every (sub-)expression, ``min``/``max`` operands included,
in the kernel and in the bounds ops alike. A failed check makes the interval empty (the
row runs as written). The bounds ops run once per row whether or not the kernel would
reach the expressions they copy, so they read nothing that could change or fault: no
memory (another item may write it), no calls, no element at a dynamic index, no float
to integer cast (poison when out of range).

An early ``return`` in the body ends the work-item, not the row: the native backend
lowers a ``return`` inside a loop over work-items as a jump to the next item.

Not taken: kernels with barriers or group operations (work-group fission owns those),
strip kernels (``strip_uniform_loops``), and kernels whose number of dimensions is
unknown.

>>> from pysycl.ir.core import Module
>>> split_item_range(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.core import Function, Module, Op, Region, Value
from pysycl.ir.types import BOOL, I64, IndexSpaceType, ScalarType

from .fission_values import PURE
from .unroll_static_range import const_int

#: Bound on the magnitude of every value the interval is computed from (checked per row).
LIMIT = 1 << 60
#: Largest bound on the magnitude of a compared expression and of its sub-expressions
#: (the sum of |coefficient| * bound over its terms): below 2**63 with room for the few
#: additions that turn it into the interval.
MAX_MAG = 6 * LIMIT
_BIG = 1 << 62
_PREDS = ("lt", "le", "gt", "ge")
# Work-item queries with one value for all items of a row (the row is along dim d;
# the ids of the other dimensions are those of the row).
_ROW_UNIFORM = frozenset({"wi.group_id", "wi.global_range", "wi.local_range",
                          "wi.group_range", "wi.global_offset", "wi.group_linear_id"})
# Queries that are x plus a row-uniform value (the last dimension has stride 1 in the
# linear ids).
_X_PLUS_UNIFORM = frozenset({"wi.global_id", "wi.global_linear_id", "wi.local_linear_id"})
# Recomputed ahead of the body, so they must be defined for any input, not only where the
# kernel reaches them: no element at a dynamic index (an out-of-range read), and no float
# to integer cast (poison out of range; _float_to_int).
_POINT_OPS = (PURE - {"spec.get", "array.get", "vec.get"}) | {"spec.load", "spec.native"}
_KERNEL_REJECT = frozenset({"barrier", "wg.items"})
_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
# Statements that end a branch early: the branch is the rare path of its condition.
_EXITS = frozenset({"continue", "break", "return"})


def split_item_range(m: Module, options=None) -> Module:
    """Rewrite every eligible kernel of ``m`` in place; return ``m``."""
    for f in m.kernels:
        if f.body is not None:
            split_kernel(f)
    return m


def kernel_rows_dim(f: Function) -> int | None:
    """The last dimension of ``f``'s index space when its number of dimensions is known."""
    if isinstance(f.attrs.get("dims"), int):
        return f.attrs["dims"] - 1
    for p in f.params:
        if isinstance(p.type, IndexSpaceType) and p.type.dims:
            return p.type.dims - 1
    return None


def split_kernel(f: Function) -> bool:
    """Make ``f`` a row kernel with an interior interval (in place); True when it did."""
    d = kernel_rows_dim(f)
    if d is None or f.attrs.get("wi_strip") or f.attrs.get("wi_rows"):
        return False
    if any(op.name in _KERNEL_REJECT or op.name.startswith("group.") for op in f.walk()):
        return False
    ops = f.body.ops
    tail = [ops[-1]] if ops and ops[-1].name == "return" and not ops[-1].operands else []
    body = ops[:len(ops) - len(tail)]
    s = _Splitter(f, d)
    proven = s.collect()
    if not any(sign for _, sign, _ in proven):
        return False
    lo, hi = s.interval()
    for op, _, value in proven:
        op.attrs["interior"] = value
    items = Op("wg.items", [lo, hi], regions=[Region(body)], loc=f.loc)
    f.body.ops = s.live_pre([lo, hi]) + [items] + tail
    f.attrs["wi_rows"] = True
    return True


def wanted_values(f: Function) -> dict[Op, bool]:
    """The value each comparison of ``f`` should have on a row's interior, read from how
    the kernel uses it (a wish: the interval is what makes it hold). The condition of an
    ``if`` whose then-branch ends in ``continue``, ``break`` or ``return`` (an early exit,
    the rare path) should be false, that of any other ``if`` true, and so should the
    condition of a checked build's ``check`` and of an ``assert``; ``not`` passes the
    opposite wish on, ``and`` wished true and ``or`` wished false pass it to both sides,
    and a bool local passes it to every value stored in it (the frontend's ``a or b``,
    ``a and b`` are such locals). A comparison wished both ways, or none, is left out.

    >>> wanted_values(Function("k", "kernel", [], body=Region()))
    {}
    """
    stores: dict[str, list[Value]] = {}
    addressed: set[str] = set()
    work: list[tuple[Value, bool]] = []
    for op, skipped in _ops_and_what_follows(f.body):
        if op.name == "var.store":
            stores.setdefault(op.attrs["name"], []).append(op.operands[0])
        elif op.name == "var.addr":
            addressed.add(op.attrs["name"])
        elif op.name in ("check", "assert"):    # a checked build's checks pass
            work.append((op.operands[0], True))
        elif op.name == "if":
            # An exit that skips nothing (the region ends after the if) is no exit.
            exits = [skipped and bool(r.ops) and r.ops[-1].name in _EXITS
                     for r in op.regions]
            if not all(exits) or len(exits) == 1:
                work.append((op.operands[0], not exits[0]))
    seen: set[tuple[Value, bool]] = set()
    wishes: dict[Op, set[bool]] = {}
    while work:
        v, want = work.pop()
        if (v, want) in seen or v.type != BOOL:
            continue
        seen.add((v, want))
        op = v.owner
        if op is None:
            continue
        if op.name == "cmp" and op.attrs.get("pred") in _NEGATED:
            wishes.setdefault(op, set()).add(want)
        elif op.name == "not":
            work.append((op.operands[0], not want))
        elif (op.name, want) in (("and", True), ("or", False)):
            work.extend((x, want) for x in op.operands)
        elif op.name == "var.load" and op.attrs["name"] not in addressed:
            work.extend((x, want) for x in stores.get(op.attrs["name"], ()))
    return {op: next(iter(wishes[op])) for op in f.walk()
            if len(wishes.get(op, ())) == 1}


def _ops_and_what_follows(r: Region):
    """Every op under ``r`` with whether other statements follow it in its region."""
    for i, op in enumerate(r.ops):
        yield op, any(o.name not in ("var", "return") for o in r.ops[i + 1:])
        for sub in op.regions:
            yield from _ops_and_what_follows(sub)


def _const_value(v: Value) -> int | None:
    return const_int(v) if v.owner is not None and v.owner.name == "const" else None


def _bound(v: Value) -> int:
    """A bound on ``|v|`` for a value of the bounds ops (LIMIT once checked)."""
    c = _const_value(v)
    return LIMIT if c is None else abs(c)


def _order_kept(t) -> bool:
    """An integer type whose values keep their order when cast to i64."""
    return t == I64 or (isinstance(t, ScalarType) and t.is_int and t.bits < 64)


def _widening(op: Op) -> bool:
    """A cast to i64 from an integer type it holds every value of, in order."""
    return op.name == "cast" and op.result.type == I64 and \
        _order_kept(op.operands[0].type) and op.operands[0].type != I64


def _float_to_int(op: Op) -> bool:
    src = op.operands[0].type if op.name == "cast" else None
    return src is not None and not (isinstance(src, ScalarType) and (src.is_int or src.is_bool))


class _Affine:
    """``s * x + u`` with ``u`` in ``[lo, hi]`` (values computed by the bounds ops);
    ``mag``: a bound on the magnitude of the expression and of its sub-expressions (the
    sum over its terms, ``x`` included, of |coefficient| * the term's bound), which holds
    when ``checks`` (bool values of the bounds ops) do."""

    __slots__ = ("s", "lo", "hi", "mag", "checks")

    def __init__(self, s: int, lo: Value, hi: Value, mag: int, checks: frozenset):
        self.s, self.lo, self.hi, self.mag, self.checks = s, lo, hi, mag, checks


class _Splitter:
    def __init__(self, f: Function, d: int):
        self.f, self.d = f, d
        self.pos: dict[int, tuple] = {}          # id(op) -> (parent op, region, index)
        self.stores: dict[str, list[Op]] = {}
        self.loops: dict[str, list[Op]] = {}
        self.addressed: set[str] = set()
        self._index(f.body, None)
        self.pre: list[Op] = []                  # the bounds ops, in order
        self._points: dict[Value, Value | None] = {}
        self._affine: dict[Value, _Affine | None] = {}
        self._consts: dict[int, Value] = {}
        self.los: list[Value] = []
        self.his: list[Value] = []
        self.oks: list[Value] = []
        self.excluded: list[tuple[Value, Value]] = []   # [e, f]: x must avoid it
        self.checks: set[Value] = set()

    def _index(self, r: Region, parent: Op | None) -> None:
        for i, op in enumerate(r.ops):
            self.pos[id(op)] = (parent, r, i)
            if op.name == "var.store":
                self.stores.setdefault(op.attrs["name"], []).append(op)
            elif op.name == "var.addr":
                self.addressed.add(op.attrs["name"])
            elif op.name == "for":
                self.loops.setdefault(op.attrs["var"], []).append(op)
            for sub in op.regions:
                self._index(sub, op)

    # Building the bounds ops ------------------------------------------------------------
    def emit(self, op_name: str, *operands: Value, type=I64, attrs=None, **more) -> Value:
        op = Op(op_name, operands, type, {**(attrs or {}), **more}, loc=self.f.loc)
        self.pre.append(op)
        return op.result

    def const(self, value: int) -> Value:
        if value not in self._consts:
            self._consts[value] = self.emit("const", value=value)
        return self._consts[value]

    def in_range(self, v: Value) -> Value:
        """``-LIMIT <= v <= LIMIT``."""
        return self.emit("and", self.emit("cmp", v, self.const(-LIMIT), type=BOOL, pred="ge"),
                         self.emit("cmp", v, self.const(LIMIT), type=BOOL, pred="le"),
                         type=BOOL)

    def range_checks(self, v: Value) -> frozenset | None:
        """The checks that keep ``v`` within LIMIT: none for a constant within it; None
        (not usable) for a constant beyond it."""
        c = _const_value(v)
        if c is not None:
            return frozenset() if abs(c) <= LIMIT else None
        return frozenset({self.in_range(v)})

    def leaf(self, v: Value) -> _Affine | None:
        checks = self.range_checks(v)
        return None if checks is None else _Affine(0, v, v, _bound(v), checks)

    # Values that are the same for every item of a row, recomputed exactly ---------------
    def point(self, v: Value) -> Value | None:
        if v in self._points:
            return self._points[v]
        self._points[v] = None            # cycles (none expected) read as "unknown"
        op, out = v.owner, None
        if op is None:
            out = v                        # a kernel parameter
        elif op.name == "var.load":
            src = self._stored_value(op)
            out = self.point(src) if src is not None else None
        elif op.name in _ROW_UNIFORM or (op.name == "wi.local_id" and op.attrs["dim"] != self.d) \
                or (op.name == "wi.global_id" and op.attrs["dim"] != self.d):
            out = self.emit(op.name, type=op.type, attrs=op.attrs)
        elif op.name == "const" and v.type == I64 and const_int(v) is not None:
            out = self.const(const_int(v))
        elif op.name in _POINT_OPS and not op.regions and not _float_to_int(op):
            args = [self.point(x) for x in op.operands]
            if all(a is not None for a in args):
                out = self.emit(op.name, *args, type=op.type, attrs=op.attrs)
        self._points[v] = out
        return out

    # s * x + [lo, hi] forms --------------------------------------------------------------
    def affine(self, v: Value) -> _Affine | None:
        if v.type != I64:
            return None
        if v in self._affine:
            return self._affine[v]
        self._affine[v] = None
        out = self._affine_of(v)
        self._affine[v] = out
        return out

    def _affine_of(self, v: Value) -> _Affine | None:
        op = v.owner
        if op is None:
            return self.leaf(v)
        name = op.name
        if name == "wi.local_id" and op.attrs["dim"] == self.d:
            z = self.const(0)
            return _Affine(1, z, z, LIMIT, frozenset())
        if name in _X_PLUS_UNIFORM and op.attrs.get("dim", self.d) == self.d:
            # query(x) = query(row start) + (x - row start): row start is the local id
            # the row kernel is called with.
            here = self.emit(name, type=I64, attrs=op.attrs)
            start = self.emit("wi.local_id", dim=self.d)
            base = self.emit("sub", here, start)
            return _Affine(1, base, base, 2 * LIMIT, self.range_checks(base))
        if name == "cast" and _widening(op):
            # A narrower loop variable widened (``for k in range(ntaps)`` with an int32
            # ``ntaps``): it still takes the values of its range, and the cast keeps them.
            src = op.operands[0].owner
            loop = self._loop_range(src) if src is not None and src.name == "var.load" \
                else None
            if loop is not None:
                return loop
        if name == "var.load":
            loop = self._loop_range(op)
            if loop is not None:
                return loop
            src = self._stored_value(op)
            return self.affine(src) if src is not None else None
        if name in ("add", "sub"):
            a, b = (self.affine(x) for x in op.operands)
            if a is None or b is None:
                return None
            if a.mag + b.mag > MAX_MAG:
                return None
            if name == "add":
                lo, hi = self.emit("add", a.lo, b.lo), self.emit("add", a.hi, b.hi)
                return _Affine(a.s + b.s, lo, hi, a.mag + b.mag, a.checks | b.checks)
            lo, hi = self.emit("sub", a.lo, b.hi), self.emit("sub", a.hi, b.lo)
            return _Affine(a.s - b.s, lo, hi, a.mag + b.mag, a.checks | b.checks)
        if name == "neg":
            a = self.affine(op.operands[0])
            if a is None:
                return None
            z = self.const(0)
            return _Affine(-a.s, self.emit("sub", z, a.hi), self.emit("sub", z, a.lo), a.mag,
                           a.checks)
        if name == "mul":
            x, y = op.operands
            c, other = const_int(y), x
            if c is None:
                c, other = const_int(x), y
            a = self.affine(other) if c is not None else None
            if a is None or a.mag * abs(c) > MAX_MAG:
                p = self.point(v)
                return self.leaf(p) if p is not None else None
            k = self.const(c)
            lo, hi = self.emit("mul", a.lo, k), self.emit("mul", a.hi, k)
            return _Affine(a.s * c, *((lo, hi) if c >= 0 else (hi, lo)), a.mag * abs(c),
                           a.checks)
        if name in ("min", "max"):
            a, b = (self.affine(x) for x in op.operands)
            if a is None or b is None or a.s or b.s:
                p = self.point(v)
                return self.leaf(p) if p is not None else None
            return _Affine(0, self.emit(name, a.lo, b.lo), self.emit(name, a.hi, b.hi),
                           max(a.mag, b.mag), a.checks | b.checks)
        p = self.point(v)
        return self.leaf(p) if p is not None else None

    # Locals ------------------------------------------------------------------------------
    def _ancestors(self, op: Op):
        parent = self.pos[id(op)][0]
        while parent is not None:
            yield parent
            parent = self.pos[id(parent)][0]

    def _inside(self, op: Op, outer: Op) -> bool:
        return any(a is outer for a in self._ancestors(op))

    def _loop_range(self, load: Op) -> _Affine | None:
        """The range of a loop variable read in its own loop's body, when nothing else
        writes it there; None when ``load`` is not such a read."""
        name = load.attrs["name"]
        loop = next((a for a in self._ancestors(load)
                     if a.name == "for" and a.attrs["var"] == name), None)
        if loop is None or name in self.addressed:
            return None
        if any(self._inside(s, loop) for s in self.stores.get(name, ())) or \
                any(other is not loop and self._inside(other, loop) for other in self.loops[name]):
            return None
        lo_v, hi_v, step_v = loop.operands
        step = const_int(step_v)
        if not step or not (_order_kept(lo_v.type) and _order_kept(hi_v.type)):
            return None
        lo, hi = self.point(lo_v), self.point(hi_v)
        if lo is None or hi is None:
            return None
        lo, hi = (x if x.type == I64 else self.emit("cast", x) for x in (lo, hi))
        lo_checks, hi_checks = self.range_checks(lo), self.range_checks(hi)
        if lo_checks is None or hi_checks is None:
            return None
        checks = lo_checks | hi_checks
        mag = max(_bound(lo), _bound(hi) + 1)
        one = self.const(1)
        if step > 0:       # lo, lo + step, ... < hi
            return _Affine(0, lo, self.emit("sub", hi, one), mag, checks)
        return _Affine(0, self.emit("add", hi, one), lo, mag, checks)

    def _stored_value(self, load: Op) -> Value | None:
        """What ``load`` reads when its var has one store, dominating the read (the same
        region, earlier, or an enclosing one); None otherwise."""
        name = load.attrs["name"]
        stores = self.stores.get(name, ())
        if name in self.addressed or name in self.loops or len(stores) != 1:
            return None
        store = stores[0]
        _, region, index = self.pos[id(store)]
        cur: Op | None = load
        while cur is not None:
            parent, r, i = self.pos[id(cur)]
            if r is region:
                return store.operands[0] if i > index else None
            cur = parent
        return None

    # The comparisons and the interval -----------------------------------------------------
    def collect(self) -> list[tuple[Op, int, bool]]:
        """The comparisons proven to take their wanted value (``wanted_values``) on an
        interval of x: (op, sign of x in it, the value)."""
        proven = []
        for op, value in wanted_values(self.f).items():
            pred = op.attrs["pred"] if value else _NEGATED[op.attrs["pred"]]
            if pred == "eq":
                continue     # true for one item of a row at most
            a, b = (self.affine(x) for x in op.operands)
            if a is None or b is None:
                continue
            s = a.s - b.s
            if abs(s) > 1 or a.mag + b.mag > MAX_MAG:
                continue
            if pred == "ne":
                self._exclude(s, self.emit("sub", a.lo, b.hi), self.emit("sub", a.hi, b.lo))
            else:
                self._half_line(pred, s, a, b)
            self.checks |= a.checks | b.checks
            proven.append((op, s, value))
        return proven

    def _half_line(self, pred: str, s: int, a: _Affine, b: _Affine) -> None:
        """Where ``a pred b`` holds for every u: a half-line of x (or all or nothing)."""
        # a - b = s*x + u, u in [a.lo - b.hi, a.hi - b.lo]. Normalised to
        # s'*x + u' < c for every u' (so for u' = max u'), c in {0, 1}.
        if pred in ("lt", "le"):
            m = self.emit("sub", a.hi, b.lo)
        else:
            s = -s
            m = self.emit("sub", b.hi, a.lo)
        c = 0 if pred in ("lt", "gt") else 1
        if s == 1:        # x < c - m
            self.his.append(self.emit("sub", self.const(c), m))
        elif s == -1:     # x > m - c
            self.los.append(self.emit("add", m, self.const(1 - c)))
        else:
            self.oks.append(self.emit("cmp", m, self.const(c), type=BOOL, pred="lt"))

    def _exclude(self, s: int, ulo: Value, uhi: Value) -> None:
        """Where ``s*x + u != 0`` for every u in [ulo, uhi]: x outside an interval (the
        interior keeps the larger side of it, ``interval``), or all or nothing."""
        zero = self.const(0)
        if s == 0:
            self.oks.append(self.emit("or", self.emit("cmp", ulo, zero, type=BOOL, pred="gt"),
                                      self.emit("cmp", uhi, zero, type=BOOL, pred="lt"),
                                      type=BOOL))
        elif s == 1:      # x not in [-uhi, -ulo]
            self.excluded.append((self.emit("sub", zero, uhi), self.emit("sub", zero, ulo)))
        else:             # -x + u != 0: x not in [ulo, uhi]
            self.excluded.append((ulo, uhi))

    def interval(self) -> tuple[Value, Value]:
        """(lo, hi): local ids of the last dimension where every proven comparison holds;
        hi <= lo (empty) when a check fails."""
        lo = self._fold("max", self.los, -_BIG)
        hi = self._fold("min", self.his, _BIG)
        rng = self.emit("wi.local_range", dim=self.d)
        if self.excluded:
            lo, hi = self._outside(lo, hi, rng)
        ok = self.emit("cmp", rng, self.const(LIMIT), type=BOOL, pred="le")
        for c in [*self.oks, *sorted(self.checks, key=self._order)]:
            ok = self.emit("and", ok, c, type=BOOL)
        return lo, self.emit("select", ok, hi, lo)

    def _outside(self, lo: Value, hi: Value, rng: Value) -> tuple[Value, Value]:
        """``[lo, hi)`` within the row ``[0, rng)``, then for each excluded interval
        ``[e, f]`` the larger of the parts below and above it. Magnitudes: the row within
        LIMIT (checked), ``e``, ``f`` within MAX_MAG, so every difference fits in i64."""
        lo = self.emit("max", lo, self.const(0))
        hi = self.emit("min", hi, rng)
        for e, f in self.excluded:
            below_end = self.emit("min", hi, e)
            above_start = self.emit("max", lo, self.emit("add", f, self.const(1)))
            below = self.emit("cmp", self.emit("sub", below_end, lo),
                              self.emit("sub", hi, above_start), type=BOOL, pred="ge")
            lo, hi = (self.emit("select", below, lo, above_start),
                      self.emit("select", below, below_end, hi))
        return lo, hi

    def _order(self, v: Value) -> int:
        return next(i for i, op in enumerate(self.pre) if op.result is v)

    def _fold(self, name: str, values: list[Value], empty: int) -> Value:
        if not values:
            return self.const(empty)
        out = values[0]
        for v in values[1:]:
            out = self.emit(name, out, v)
        return out

    def live_pre(self, roots: list[Value]) -> list[Op]:
        """The bounds ops ``roots`` need (comparisons not taken leave dead ones)."""
        live = set(roots)
        keep = []
        for op in reversed(self.pre):
            if op.result in live:
                keep.append(op)
                live.update(op.operands)
        return keep[::-1]


__all__ = ["LIMIT", "MAX_MAG", "kernel_rows_dim", "split_item_range", "split_kernel"]
