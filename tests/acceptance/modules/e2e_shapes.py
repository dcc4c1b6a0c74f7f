"""A second module: its kernels call the library's functions through import declarations
(bodies of only ``...``) resolved when the bundles are linked."""
import numpy as np

import pysycl as sycl


@sycl.external
def norm2(x: np.float32, y: np.float32) -> np.float32:
    ...


@sycl.external
def mix(a: np.int64, b: np.int64, t: np.int64) -> np.int64:
    ...


@sycl.kernel
def norms(it: sycl.item[1], xs: sycl.global_ptr[np.float32], ys: sycl.global_ptr[np.float32],
          out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    out[i] = norm2(xs[i], ys[i])


@sycl.kernel
def mixes(it: sycl.item[1], a: sycl.global_ptr[np.int64], b: sycl.global_ptr[np.int64],
          out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    out[i] = mix(a[i], b[i], np.int64(i % 11))


def module_bundle(ctx, state):
    """This module's bundle, as ``sycl.this_module`` sees it from here."""
    return sycl.this_module.get(ctx, state)


def module_flags(ctx):
    return (sycl.this_module.has_any_module(ctx),
            sycl.this_module.has_module_in(ctx, sycl.bundle_state.executable))
