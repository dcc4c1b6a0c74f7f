"""A library module (translation unit): device functions exported with @sycl.external."""
import numpy as np

import pysycl as sycl


@sycl.device
def _sq(x: np.float32) -> np.float32:
    return x * x


@sycl.external
def norm2(x: np.float32, y: np.float32) -> np.float32:
    return _sq(x) + _sq(y)


@sycl.external
def mix(a: np.int64, b: np.int64, t: np.int64) -> np.int64:
    return a * (10 - t) + b * t


def module_bundle(ctx, state):
    """This module's bundle (its library image only), as ``sycl.this_module`` sees it."""
    return sycl.this_module.get(ctx, state)
