"""A second Python module whose kernel imports ``triple`` from lib_ext."""
import numpy as np

import pysycl as sycl

scale_id = sycl.specialization_id(np.int32, 1)


@sycl.external
def triple(x: np.int32) -> np.int32:
    ...


@sycl.kernel
def apply(it: sycl.id[1], h: sycl.kernel_handler, out: sycl.global_ptr[np.int32]):
    out[it[0]] = triple(np.int32(it[0])) * h.get_specialization_constant(scale_id)
