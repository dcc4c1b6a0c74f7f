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


offset = sycl.specialization_id(np.float32, 1.0)
counter = sycl.device_global(np.int32)


@sycl.kernel
def shifted(it: sycl.item[1], h: sycl.kernel_handler, src: sycl.global_ptr[np.float32],
            dst: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    dst[i] = src[i] + h.get_specialization_constant(offset)


class Settings:
    gain = sycl.specialization_id(np.int32, 3)
