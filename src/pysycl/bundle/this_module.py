"""``sycl.this_module`` (from the "SYCL Modules" proposal): the bundle of the calling Python module.

A Python module is the translation unit: ``this_module.get(ctx, state)`` holds the
kernels defined in the module that calls it, plus its ``@sycl.external`` library image;
in executable state its kernels are linked with the library images they import from
other modules (the default lookup), in input and object state they are not, so
``sycl.link`` of the module's object bundle alone reports such an import unresolved.

>>> import pysycl as sycl                                             # doctest: +SKIP
>>> kb = sycl.this_module.get(ctx, sycl.bundle_state.executable)           # doctest: +SKIP
"""
from __future__ import annotations

import sys

from . import free_functions as ff
from .device_image import bundle_state
from .kernel_bundle import kernel_bundle
from .kernel_id import get_kernel_id, kernel_function_module, registered_kernels
from .sources import input_images, library_image, library_modules


def _caller_module(depth: int = 2) -> str:
    return sys._getframe(depth).f_globals.get("__name__", "__main__")


def module_bundle(ctx, state, module_name: str, devices=None) -> kernel_bundle:
    """The bundle of Python module ``module_name`` (what ``get`` returns for it)."""
    state = ff._state(state)
    ctx_devices = list(ctx.get_devices())
    devs = ff._check_devices(ctx_devices if devices is None else devices, ctx_devices,
                             "the context")
    ff._check_online_tools(state, devs)
    images = [img for img in input_images(module_name=module_name)
              if any(img.compatible_with(d) for d in devs)]
    # Input and object state hold the module's own images only, so linking them alone
    # fails on an import another module defines (a link leaves no undefined reference,
    # SYCL 2020 4.11.11); executable state is the default lookup's, which links each
    # kernel with the libraries of every imported module.
    if state is bundle_state.object:
        images = ff._object_images(images, requested=False)
    elif state is bundle_state.executable:
        kids = [k for img in images for k in img.get_kernel_ids()]
        images = ff._executable_images(kids, devs, requested=False)
    return kernel_bundle(ctx, devs, state, images)


def module_bundles(ctx, state) -> list[kernel_bundle]:
    """The bundle of every Python module imported so far that defines kernels or
    ``@sycl.external`` functions, in ``state`` (the SYCL Modules proposal's
    ``context::get_modules``: one module per translation unit)."""
    names = {kernel_function_module(k) for k in registered_kernels()} | set(library_modules())
    bundles = [module_bundle(ctx, state, name) for name in sorted(n for n in names if n)]
    return [b for b in bundles if not b.empty()]


def get(ctx, state=bundle_state.executable) -> kernel_bundle:
    """The calling module's kernels in ``state`` for every device of ``ctx``."""
    return module_bundle(ctx, state, _caller_module())


def has_any_module(ctx) -> bool:
    """Whether the calling module defines any kernel or ``@sycl.external`` function."""
    name = _caller_module()
    return bool(registered_kernels(name)) or library_image(name) is not None


def has_module_in(ctx, state) -> bool:
    """Whether ``get(ctx, state)`` gives a non-empty bundle for the calling module."""
    name = _caller_module()
    if not (registered_kernels(name) or library_image(name) is not None):
        return False
    return not ff._lacks_online_tools(ff._state(state), list(ctx.get_devices()))


def get_kernel(ctx, kernel):
    """The ``sycl.kernel`` for ``kernel`` from the calling module's executable bundle."""
    kb = module_bundle(ctx, bundle_state.executable, _caller_module())
    return kb.get_kernel(get_kernel_id(kernel))
