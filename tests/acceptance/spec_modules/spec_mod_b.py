"""Separately compiled module B: same Python names as module A, different constants."""
import numpy as np

import pysycl as sycl

pair_t = np.dtype([("i", np.int16), ("f", np.float32)], align=True)
small = sycl.specialization_id(pair_t, (7, 1.5))
big = sycl.specialization_id(np.int32, 1000)


@sycl.kernel
def read_b(h: sycl.kernel_handler, out: sycl.global_ptr[np.float64]):
    p = h.get_specialization_constant(small)
    out[0] = np.float64(p.i)
    out[1] = np.float64(p.f)
    out[2] = np.float64(h.get_specialization_constant(big))
