"""Kernel bundles to and from native programs (SYCL 2020 4.5.1 ``get_native`` and
``make_kernel_bundle``; the OpenCL backend's ``cl_program`` as a ``pyopencl.Program``).

``native_programs(kb)`` loads every executable image of ``kb`` on each of its devices
and gives the driver's native program objects; a program obtained so remembers the
image it came from, so ``adopt(program, ctx)`` gives back a bundle whose kernels launch
like the original ones (same arguments, spec-constant values as loaded). A program
built elsewhere (OpenCL C source, another compiler's SPIR-V) becomes a bundle whose
kernel ids are its kernel names: they can be listed and taken as ``sycl.kernel``
objects (``get_native`` of which gives the native kernel), but pysycl does not know
their parameters, so launching one through a handler is ``errc.kernel_not_supported``.

>>> interop_state(bundle_state.executable) is bundle_state.executable
True
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from ..errors import errc, exception
from . import toolchain
from .device_image import bundle_state, device_image
from .kernel_bundle import kernel_bundle
from .kernel_id import kernel_id_by_name

_lock = threading.Lock()
# native program handle -> (image it was loaded from, spec-constant values it was loaded with)
_origins: dict[int, tuple[Any, dict]] = {}


def interop_state(state) -> bundle_state:
    """Only executable bundles come from native programs here: an OpenCL program built
    from source is executable once built, and pysycl links only its own IR."""
    if state is not bundle_state.executable:
        raise exception(errc.feature_not_supported,
                        f"make_kernel_bundle makes executable kernel bundles only, not "
                        f"{getattr(state, 'name', state)}")
    return state


class interop_image(device_image):
    """An executable image around native programs loaded elsewhere, one per device."""

    def __init__(self, programs: dict, kernel_ids, origin: device_image | None):
        src = origin
        super().__init__(bundle_state.executable, src.module if src else None, kernel_ids,
                         target=src.target if src else "native",
                         format=src.format if src else "native", devices=list(programs),
                         binary=src.binary if src else None,
                         registry=src._registry if src else None,
                         spec_ids=src.spec_ids if src else None,
                         lowering=src.spec_constant_lowering if src else None,
                         target_obj=src._target_obj if src else None)
        self._adopted = programs

    def program(self, device, native_values=None, ctx_handle=None, holder=None):
        """The adopted program of ``device`` (its spec constants are what it was built
        with); held by this image, never evicted from the loaded programs (they are the
        user's)."""
        prog = self._adopted.get(device)
        if prog is None:
            raise exception(errc.kernel_not_supported,
                            f"the native program was not built for {getattr(device, 'name', device)!r}")
        return prog

    def kernel_function(self, kid):
        fn = super().kernel_function(kid) if self.module is not None else None
        if fn is None and kid in self._kernel_ids:
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} comes from a native program pysycl did "
                            "not compile: its parameters are unknown, so it cannot be "
                            "launched through a handler; launch it with the backend's API "
                            "(sycl.get_native(kernel))")
        return fn


def _native_key(driver, native) -> int:
    prg = getattr(native, "_prg", native)
    return int(getattr(prg, "int_ptr", id(prg)))


def native_programs(kb: kernel_bundle) -> list:
    """The native program of every image of executable bundle ``kb`` on each of its
    devices (loaded now if they were not)."""
    if kb.state is not bundle_state.executable:
        raise exception(errc.invalid, "get_native takes an executable kernel_bundle here, "
                        f"this one is in {kb.state.name} state")
    ctx = kb.get_context()
    ctx_handle = getattr(ctx, "handle", None)
    values = kb.spec_values
    out = []
    for img in kb:
        for dev in img.get_devices():
            if dev not in kb.get_devices():
                continue
            driver = toolchain.driver_for(dev)
            ids = img.spec_ids
            native_values = (ids.native_values(values) if ids is not None and
                             img.spec_constant_lowering == "native" else None)
            native = driver.native_program(img.program(dev, native_values, ctx_handle))
            with _lock:
                _origins[_native_key(driver, native)] = (weakref.ref(img), values)
            out.append(native)
    return out


def native_kernel(kernel) -> Any:
    """The native kernel object of a ``sycl.kernel`` on its bundle's first device."""
    kb = kernel.get_kernel_bundle()
    kid = kernel.get_kernel_id()
    for img in kb.images_for(kid):
        for dev in img.get_devices():
            if dev in kb.get_devices():
                prog = img.program(dev, None, getattr(kb.get_context(), "handle", None)) \
                    if isinstance(img, interop_image) else _loaded(img, dev, kb)
                return toolchain.driver_for(dev).native_kernel(prog, _symbol(img, kid))
    raise exception(errc.invalid, f"kernel {kid.get_name()} has no image on the bundle's devices")


def _loaded(img: device_image, dev, kb: kernel_bundle):
    ids = img.spec_ids
    native_values = (ids.native_values(kb.spec_values) if ids is not None and
                     img.spec_constant_lowering == "native" else None)
    return img.program(dev, native_values, getattr(kb.get_context(), "handle", None))


def _symbol(img: device_image, kid) -> str:
    if img.module is None:
        return kid.get_name()
    fn = device_image.kernel_function(img, kid)
    return fn.name if fn is not None else kid.get_name()


def adopt(native, ctx, state=bundle_state.executable) -> kernel_bundle:
    """An executable bundle of ``ctx`` around native program ``native`` (built for
    some or all of the context's devices)."""
    interop_state(state)
    programs = {}
    for dev in ctx.get_devices():
        driver = toolchain.driver_for(dev)
        desc = toolchain.device_description(dev)
        try:
            programs[dev] = driver.adopt_program(desc, native, getattr(ctx, "handle", None))
        except exception as e:
            if e.code() is not errc.invalid or "not built for" not in str(e):
                raise
    if not programs:
        raise exception(errc.invalid, "the native program is built for none of the "
                        "context's devices")
    driver = toolchain.driver_for(next(iter(programs)))
    with _lock:
        origin = _origins.get(_native_key(driver, native))
    img = origin[0]() if origin is not None else None
    if img is not None:
        kids = img.get_kernel_ids()
        values = origin[1]
    else:
        names = next(iter(programs.values())).kernel_names
        kids = [kernel_id_by_name(n) for n in names]
        values = {}
    image = interop_image(programs, kids, img)
    return kernel_bundle(ctx, list(programs), bundle_state.executable, [image], values)
