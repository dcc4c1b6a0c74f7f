"""The benchmark workloads in OpenCL C, built by the same OpenCL driver through pyopencl.

Each kernel comes in two modes where the issue asks for them: values as kernel
arguments, and values as ``#define``d literals (what a specialization constant should
match)."""
from __future__ import annotations

import warnings

import numpy as np

CONV_SRC = r"""
#ifdef LITERAL
__constant float coeff_lit[9] = {COEFFS};
#endif
__kernel void conv3x3(__global const float *inp, __global float *out, int rows, int cols
#ifndef LITERAL
    , __global const float *coeff
#endif
) {
#ifdef LITERAL
    __constant const float *coeff = coeff_lit;
#endif
    int r = get_global_id(0), c = get_global_id(1);
    float acc = 0.0f;
    for (int i = -1; i <= 1; i++) {
        int rr = r + i;
        if (rr >= 0 && rr < rows)
            for (int j = -1; j <= 1; j++) {
                int cc = c + j;
                if (cc >= 0 && cc < cols) acc += coeff[(i + 1) * 3 + j + 1] * inp[rr * cols + cc];
            }
    }
    out[r * cols + c] = acc;
}
"""

FIR_SRC = r"""
__kernel void fir(__global const float *x, __global const float *taps, __global float *y
#ifndef NTAPS
    , int ntaps
#endif
) {
#ifdef NTAPS
    const int ntaps = NTAPS;
#endif
    int i = get_global_id(0);
    float acc = 0.0f;
    for (int k = 0; k < ntaps; k++) acc += taps[k] * x[i + k];
    y[i] = acc;
}
"""

SAXPY_SRC = r"""
__kernel void saxpy(float a, __global const float *x, __global float *y) {
    int i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
__kernel void empty(__global float *a, __global float *b) {}
"""


REDUCE_SRC = r"""
__kernel void reduce_sum(__global const float *x, __global float *total,
                         __local float *scratch) {
    size_t lid = get_local_id(0);
    scratch[lid] = x[get_global_id(0)];
    size_t stride = get_local_size(0) / 2;
    while (stride > 0) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < stride) scratch[lid] += scratch[lid + stride];
        stride /= 2;
    }
    if (lid == 0)
        atomic_fetch_add_explicit((volatile __global atomic_float *)total, scratch[0],
                                  memory_order_relaxed, memory_scope_device);
}
"""


def build(ctx, src: str, defines: dict | None = None):
    import pyopencl as cl

    opts = [f"-D{k}={v}" if v is not None else f"-D{k}" for k, v in (defines or {}).items()]
    if "atomic_float" in src:
        opts.append("-cl-std=CL3.0")   # C11 atomics on float
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Intel runtime reports vectorisation remarks
        return cl.Program(ctx, src).build(options=opts)


def coeff_literal(coeff: np.ndarray) -> str:
    return ",".join(f"{float(v)!r}f" for v in np.asarray(coeff, np.float32).ravel())
