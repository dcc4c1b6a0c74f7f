"""Kernels and device functions at module level, as pickling by reference needs them."""
import numpy as np

import pysycl as sycl


@sycl.device
def twice(x):
    return x * 2


@sycl.kernel
def scale(it: sycl.item[1], src: sycl.global_ptr[np.float32], dst: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    dst[i] = twice(src[i]) + np.float32(1)


class Holder:
    @sycl.kernel
    def nested(it: sycl.item[1], dst: sycl.global_ptr[np.float32]):
        dst[it.get_id(0)] = np.float32(3)
