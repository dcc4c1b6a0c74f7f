"""A ``sycl.kernel_bundle`` pickles as the bytes of its SYCLBIN file.

The receiving process loads them for the default context of its default device (what
``sycl.queue()`` uses), so the bundle runs on a plain queue there, with the
specialization-constant values and states it had. For another context, send the bytes
of ``sycl.save_kernel_bundle``'s file and ``sycl.load_kernel_bundle`` them. (Registered
with ``copyreg``: the bundle layer below knows no contexts.)
"""
from __future__ import annotations

import copyreg

from ..bundle import files
from ..bundle.kernel_bundle import kernel_bundle
from .context import context
from .device import device


def _reduce_bundle(kb: kernel_bundle):
    return (_bundle_from_syclbin, (files.syclbin_bytes(kb),))


def _bundle_from_syclbin(data: bytes) -> kernel_bundle:
    return files.kernel_bundle_from_bytes(context._default_for(device()), data)


copyreg.pickle(kernel_bundle, _reduce_bundle)
