"""Facts about ``for`` loops that several passes and the lowering ask alike.

>>> FULL_UNROLL_TRIPS
32
"""
from __future__ import annotations

# Loops of at most this many iterations, known when the kernel is compiled, ask LLVM to
# unroll them fully (``llvm.loop.unroll.full``): the native CPU compiler turns LLVM's own
# unrolling heuristics off (they double code-generation time for little speed), and a
# small constant loop inside a work-item must still vanish so the work-item loop around
# it is the innermost, vectorised one. Up to FULL_UNROLL_TRIPS always; up to
# FULL_UNROLL_MAX_TRIPS while trips x IR ops of the body stay within FULL_UNROLL_BUDGET
# (FIR with 33 taps from a literal spec constant: 33 x 15 ops, unrolled and vectorised
# across work-items 2x faster than in strips, passes/strip_uniform_loops).
FULL_UNROLL_TRIPS = 32
FULL_UNROLL_MAX_TRIPS = 64
FULL_UNROLL_BUDGET = 1024


def full_unroll_wanted(loop) -> bool:
    """Whether the ``for`` op ``loop`` has a constant trip count small enough to unroll."""
    trips = static_trip_count(loop)
    if trips is None or trips <= 1:
        return False
    if trips <= FULL_UNROLL_TRIPS:
        return True
    return trips <= FULL_UNROLL_MAX_TRIPS and \
        trips * sum(1 for _ in loop.regions[0].walk()) <= FULL_UNROLL_BUDGET


def constant_int(v):
    """The Python int of a value made by a `const` op, else None."""
    owner = getattr(v, "owner", None)
    if owner is None or owner.name != "const":
        return None
    value = owner.attrs.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def static_trip_count(op) -> int | None:
    """len(range(lo, hi, step)) of a ``for`` whose bounds are constants, else None."""
    lo, hi, step = (constant_int(v) for v in op.operands)
    if lo is None or hi is None or not step:
        return None
    return len(range(lo, hi, step))
