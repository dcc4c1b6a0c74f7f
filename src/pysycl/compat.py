"""``sycl.compat``: the SYCL 1.2.1 ``program`` class of DPC++'s first
specialization-constant extension, over kernel bundles.

A ``program`` is an input kernel bundle plus the executable bundle built from it:
``set_spec_constant`` sets a value on the input bundle (and returns the
extension's ``spec_constant`` placeholder), ``build_with_kernel_type(kernel)`` builds the bundle of
that kernel with the values set so far, ``get_kernel(kernel)`` returns the
``sycl.kernel`` to launch (it carries its bundle, so the values travel with it).

>>> import pysycl as sycl                                             # doctest: +SKIP
>>> p = sycl.compat.program(q.get_context())                          # doctest: +SKIP
>>> i32 = p.set_spec_constant(int_id, 42)                             # doctest: +SKIP
>>> p.build_with_kernel_type(my_kernel)                               # doctest: +SKIP
>>> q.submit(lambda cgh: cgh.single_task(p.get_kernel(my_kernel), out))  # doctest: +SKIP
"""
from __future__ import annotations

import enum

from .bundle import free_functions as ff
from .bundle.device_image import bundle_state
from .errors import errc, exception
from .runtime.handler import spec_constant
from .spec_values import spec_value_bytes

__all__ = ["program", "program_state"]


class program_state(enum.Enum):
    """SYCL 1.2.1 ``program_state``."""

    none = 0
    compiled = 1
    linked = 2


class program:
    """SYCL 1.2.1 ``cl::sycl::program`` restricted to what that extension uses."""

    def __init__(self, context, devices=None):
        self._context = context
        self._devices = list(devices) if devices is not None else list(context.get_devices())
        self._values: dict = {}             # spec_id -> value, in set order
        self._exe = None
        self._kernels: list = []

    def get_context(self):
        return self._context

    def get_devices(self) -> list:
        return list(self._devices)

    def get_state(self) -> program_state:
        return program_state.linked if self._exe is not None else program_state.none

    # -- specialization constants (SYCL 1.2.1 program interface) --
    def set_spec_constant(self, spec_id, value):
        """Set ``spec_id``'s value for the next build; returns a ``sycl.spec_constant``."""
        if self._exe is not None:
            raise exception(errc.invalid, "set_spec_constant after the program was built "
                                          "(SYCL 1.2.1 program: values are fixed at build)")
        spec_value_bytes(spec_id, value)    # errc.invalid now if it does not convert
        self._values[spec_id] = value
        return spec_constant(spec_id, value)

    def has_spec_constant(self, spec_id) -> bool:
        return self._exe is not None and self._exe.has_specialization_constant(spec_id)

    # -- build --
    def build_with_kernel_type(self, kernel, build_options: str = "", properties=None) -> None:
        """Build ``kernel`` (a ``@sycl.kernel`` function or kernel_id) with the values set
        so far; ``errc.invalid`` if the program was already built."""
        if self._exe is not None:
            raise exception(errc.invalid, "build_with_kernel_type: the program is already "
                                          "built (program_state.linked)")
        inp = ff.get_kernel_bundle(self._context, bundle_state.input, devices=self._devices,
                                   kernel=kernel)
        for spec_id, value in self._values.items():
            inp.set_specialization_constant(spec_id, value)
        self._exe = ff.build(inp, properties=properties)
        self._kernels.append(kernel)

    def has_kernel(self, kernel) -> bool:
        return self._exe is not None and self._exe.has_kernel(kernel)

    def get_kernel(self, kernel):
        """The built ``sycl.kernel`` (``errc.invalid`` before a build or for another kernel)."""
        if self._exe is None:
            raise exception(errc.invalid, "get_kernel before build_with_kernel_type")
        return self._exe.get_kernel(kernel)

    def get_kernel_bundle(self):
        """The executable bundle (pysycl extension; ``None`` before a build)."""
        return self._exe

    def __repr__(self) -> str:
        return f"<sycl.compat.program {self.get_state().name}>"
