"""Which ops compute a value and nothing else, so passes and lowerings may move,
recompute or drop them.

>>> "add" in PURE and "wi.global_id" in PURE_PER_ITEM
True
"""
from __future__ import annotations

from .ops import MATH_FUNCTIONS, MATH_PAIRS
from .type_rules import BINARY, UNARY

#: Ops whose value depends only on their operands (the same in every work-item).
PURE = frozenset({"const", "spec.get", "dg.addr", "const.table", "acc.range", "acc.offset", "acc.base",
                  "ptr.extent", "cmp", "cast", "select",
                  "struct.get", "tuple.get", "array.get", "vec.get", *BINARY, *UNARY,
                  "math.ldexp", *(f"math.{n}" for n in (*MATH_FUNCTIONS, *MATH_PAIRS))})
#: Ops without side effects whose value differs from work-item to work-item.
PURE_PER_ITEM = frozenset({"acc.ptr", "ptr.offset", "ptr.elem", "ptr.field",
                           "wi.global_id", "wi.local_id", "wi.group_id", "wi.global_range",
                           "wi.local_range", "wi.group_range", "wi.global_offset",
                           "wi.global_linear_id", "wi.local_linear_id", "wi.group_linear_id",
                           "sg.local_id", "sg.local_range", "sg.group_id", "sg.group_range",
                           "sg.max_local_range"})
