"""A 3x3 convolution with its coefficients as a specialization constant.

This is the example of the DPC++ "Specialization constants" design: the
coefficients are set on the command group, so the online compiler sees them as literals
and the inner loops fold to nine multiply-adds.
"""
from __future__ import annotations

import numpy as np

import pysycl as sycl

coeff_t = np.dtype((np.float32, (3, 3)))
coeff_id = sycl.specialization_id(coeff_t)


@sycl.kernel
def convolution(it: sycl.item[2], h: sycl.kernel_handler,
                inp: sycl.accessor[np.float32, 2, sycl.read_only],
                out: sycl.accessor[np.float32, 2, sycl.write_only]):
    coeff = h.get_specialization_constant(coeff_id)
    rows = inp.get_range(0)
    cols = inp.get_range(1)
    acc = np.float32(0)
    for i in range(-1, 2):
        r = it.get_id(0) + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = it.get_id(1) + j
                if c >= 0 and c < cols:
                    acc += coeff[i + 1][j + 1] * inp[r, c]
    out[it] = acc


def do_conv(q, image: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """Convolve ``image`` with ``coefficients`` on ``q``'s device; returns a new array."""
    result = np.empty_like(image)
    with sycl.buffer(image) as inp, sycl.buffer(result) as out:
        submit_conv(q, inp, out, coefficients).wait()
    return result


def submit_conv(q, inp, out, coefficients: np.ndarray):
    """Submit the convolution of buffer ``inp`` into buffer ``out``; returns its event."""
    def cgf(cgh):
        in_acc = sycl.accessor(inp, cgh, sycl.read_only)
        out_acc = sycl.accessor(out, cgh, sycl.write_only, sycl.no_init)
        cgh.set_specialization_constant(coeff_id, coefficients)
        cgh.parallel_for(sycl.range(*inp.get_range()), convolution, in_acc, out_acc)
    return q.submit(cgf)


def reference(image: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """The same convolution in NumPy (zero padding), accumulated in float32."""
    padded = np.pad(image, 1)
    rows, cols = image.shape
    out = np.zeros_like(image)
    for i in range(3):
        for j in range(3):
            out += coefficients[i, j] * padded[i:i + rows, j:j + cols]
    return out
