"""Backend interoperability (SYCL 2020 4.5.1): ``sycl.get_native`` and
``sycl.make_kernel_bundle``.

On the OpenCL backend a kernel bundle's native form is a list of ``pyopencl.Program``
(one per image and device, as SYCL's ``std::vector<cl_program>``), a kernel's a
``pyopencl.Kernel``, a context's its ``pyopencl.Context``, a device's its
``pyopencl.Device`` and a queue's its ``pyopencl.CommandQueue``.
``make_kernel_bundle(program, ctx)`` takes a built ``pyopencl.Program`` of the
context's OpenCL context back as an executable bundle.

>>> import pysycl as sycl                                                  # doctest: +SKIP
>>> programs = sycl.get_native(exe)                 # [pyopencl.Program, ...]    # doctest: +SKIP
>>> again = sycl.make_kernel_bundle(programs[0], ctx)                      # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any

from ..bundle import interop as bundle_interop
from ..bundle.device_image import bundle_state
from ..bundle.kernel_bundle import kernel_bundle, kernel_object
from ..errors import errc, exception
from .context import context
from .device import device
from .queue import queue


def _backend_of(obj):
    if isinstance(obj, device):
        return obj.backend
    get = getattr(obj, "get_backend", None)
    return get() if callable(get) else None


def _check_backend(obj, backend) -> None:
    """``errc.backend_mismatch`` when ``backend`` is given and ``obj`` is of another."""
    if backend is None:
        return
    mine = _backend_of(obj)
    if mine is not None and getattr(mine, "name", mine) != getattr(backend, "name", backend):
        raise exception(errc.backend_mismatch, f"{obj!r} belongs to the "
                        f"{getattr(mine, 'name', mine)} backend, not "
                        f"{getattr(backend, 'name', backend)}")


def get_native(obj, backend=None) -> Any:
    """The backend object behind ``obj`` (a kernel_bundle, kernel, context, device or
    queue); ``backend``, when given, must be ``obj``'s (else ``errc.backend_mismatch``)."""
    _check_backend(obj, backend)
    if isinstance(obj, kernel_bundle):
        return bundle_interop.native_programs(obj)
    if isinstance(obj, kernel_object):
        return bundle_interop.native_kernel(obj)
    if isinstance(obj, queue):
        return obj.get_native()
    if isinstance(obj, device):
        return obj._desc.handle
    if isinstance(obj, context):
        dev = obj.get_devices()[0]
        return dev.driver.native_context(dev._desc, obj.handle)
    raise exception(errc.invalid, f"get_native does not take a {type(obj).__name__}")


def make_kernel_bundle(native, ctx: context, state=bundle_state.executable,
                       backend=None) -> kernel_bundle:
    """An executable ``kernel_bundle`` of ``ctx`` around a native program built for its
    devices (OpenCL: a built ``pyopencl.Program`` of ``sycl.get_native(ctx)``)."""
    if not isinstance(ctx, context):
        raise exception(errc.invalid, f"make_kernel_bundle needs a sycl.context, not "
                        f"{type(ctx).__name__}")
    _check_backend(ctx, backend)
    return bundle_interop.adopt(native, ctx, state)
