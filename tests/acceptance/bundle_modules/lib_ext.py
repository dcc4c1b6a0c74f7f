"""A Python module (translation unit) that exports a device function."""
import numpy as np

import pysycl as sycl


@sycl.external
def triple(x: np.int32) -> np.int32:
    return x * np.int32(3)
