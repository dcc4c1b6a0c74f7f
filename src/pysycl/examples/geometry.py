"""A library of device functions: other modules' kernels call them through
``@sycl.external`` declarations (bodies of ``...``) resolved when bundles are linked,
as C++ calls a ``SYCL_EXTERNAL`` function defined in another translation unit.

>>> from pysycl.examples import geometry
>>> geometry.norm2.py_function(3.0, 4.0)
25.0
"""
import numpy as np

import pysycl as sycl


@sycl.device
def _square(x: np.float32) -> np.float32:
    return x * x


@sycl.external
def norm2(x: np.float32, y: np.float32) -> np.float32:
    """x² + y², exported under the symbol ``norm2``."""
    return _square(x) + _square(y)


@sycl.external
def lerp(a: np.float32, b: np.float32, t: np.float32) -> np.float32:
    """The point ``t`` of the way from ``a`` to ``b``."""
    return a + (b - a) * t
