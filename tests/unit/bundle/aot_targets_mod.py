"""Kernels for the ahead-of-time target tests: one that fits every target, one that
requires a sub-group size of 16 (no native CPU or CUDA device has it), one that reads
a specialization constant."""
import numpy as np

import pysycl as sycl

offset_id = sycl.specialization_id(np.int32, 5)


@sycl.kernel(name="aot_targets.plain")
def plain(it: sycl.item[1], x: sycl.global_ptr[np.int32]):
    x[it.get_id(0)] = x[it.get_id(0)] * 2


@sycl.kernel(name="aot_targets.sg16", properties=sycl.properties(sycl.sub_group_size(16)))
def sg16(it: sycl.nd_item[1], x: sycl.global_ptr[np.int32]):
    x[it.get_global_id(0)] = x[it.get_global_id(0)] + 1


@sycl.kernel(name="aot_targets.offset")
def offset(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.int32]):
    x[it.get_id(0)] = x[it.get_id(0)] + h.get_specialization_constant(offset_id)
