"""``sycl.math``: the kernel math functions.

Each name is the IR op ``math.<name>``; single precision stays single precision. On the
host they compute with NumPy so ``@sycl.device`` helpers run in Python too.

>>> float(sqrt(np.float32(4)))
2.0
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import MATH_FUNCTIONS

__all__ = sorted(MATH_FUNCTIONS)

# NumPy spellings of the SYCL names that differ (used here and by frontend.builtins).
NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
               "pow": "power", "round": "round"}


def _host(name):
    if name == "rsqrt":
        return lambda x: 1 / np.sqrt(x)
    if name == "fma":
        return lambda a, b, c: a * b + c
    return getattr(np, NUMPY_NAMES.get(name, name))


for _name in MATH_FUNCTIONS:
    _f = _host(_name)

    def _make(f=_f, n=_name):
        def fn(*args):
            return f(*args)
        fn.__name__ = fn.__qualname__ = n
        fn.__doc__ = f"sycl.math.{n} (IR op math.{n})."
        return fn
    globals()[_name] = _make()
del _name, _f
