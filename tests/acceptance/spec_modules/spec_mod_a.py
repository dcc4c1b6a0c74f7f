"""Separately compiled module A: its own spec constants (an int8, then a float64)."""
import numpy as np

import pysycl as sycl

small = sycl.specialization_id(np.int8, -3)
big = sycl.specialization_id(np.float64, 0.25)


@sycl.kernel
def read_a(h: sycl.kernel_handler, out: sycl.global_ptr[np.float64]):
    out[0] = np.float64(h.get_specialization_constant(small))
    out[1] = h.get_specialization_constant(big)
