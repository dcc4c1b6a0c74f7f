"""Argument checks shared by the property catalogue (one place for the messages)."""
from __future__ import annotations

import numbers

from ..errors import errc, exception


def positive_int(prop: str, value, what: str = "value") -> int:
    """An ``int`` > 0 (NumPy integers accepted); ``errc.invalid`` naming ``prop`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) <= 0:
        raise exception(errc.invalid, f"{prop}: {what} must be a positive integer, got {value!r}")
    return int(value)


def dims(prop: str, values: tuple, max_dims: int = 3) -> tuple[int, ...]:
    """1 to 3 positive sizes in SYCL order (DPC++ static_asserts the same)."""
    if not 1 <= len(values) <= max_dims:
        raise exception(errc.invalid,
                        f"{prop} takes 1 to {max_dims} sizes, got {len(values)}")
    return tuple(positive_int(prop, v, f"size {i}") for i, v in enumerate(values))


def parse_ints(prop: str, text: str) -> tuple[int, ...]:
    """Read back a comma-joined ``meta_value`` such as ``"8,4"``."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise exception(errc.invalid, f"{prop}: bad IR value {text!r}") from None
