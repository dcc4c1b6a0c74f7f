"""Thread coarsening between the build and the launch: which kernels a build coarsens,
how the image says so, and the launch geometry that follows from it.

A build decides per kernel from the kernel's ``coarsen`` verdict (recorded at link,
``passes/coarsen_candidates.py``), the target's backend and ``PYSYCL_COARSEN``
(:func:`plans`). The decision is part of the binary's cache key and of the build's
memo, is carried out by the ``coarsen_threads`` pass, and is written into the
executable image as the property set ``PYSYCL/coarsening`` (kernel name -> ``{u32
dimension, u32 factor}``), which bundle files carry and DPC++ ignores. The launcher
reads the set, never the environment: an image built or saved with one setting
launches correctly in a process with another (:func:`of_image`).

>>> Coarsening(0, 4).geometry((10, 7), None)
((3, 7), None, 10)
>>> Coarsening(0, 4).geometry((64, 64), (8, 32))
((16, 64), (8, 32), 64)
"""
from __future__ import annotations

import struct

from .. import config
from ..backends.base import KernelArg, KernelArgKind
from ..errors import errc, exception
from ..passes.coarsen_candidates import ATTR, analyse_kernel, choose
from . import property_sets as ps

#: The property set of an executable image that lists its coarsened kernels.
COARSENING_SET = "PYSYCL/coarsening"
_PLAN = struct.Struct("<II")
_I64 = struct.Struct("<q")


def plans(kernels, backend: str) -> dict[str, tuple[int, int]]:
    """``{kernel name: (dimension, factor)}`` for the kernels (IR functions, or a warm
    image's kernel infos) that a build for ``backend`` coarsens now."""
    knob = config.coarsen()
    if knob == "off":
        return {}
    out = {}
    for k in kernels:
        plan = choose(k.attrs.get(ATTR), backend, knob)
        if plan is not None:
            out[k.name] = plan
    return out


def key_text(chosen: dict[str, tuple[int, int]]) -> str:
    """The plans as one line for cache keys and memos ("" when there are none)."""
    return ";".join(f"{name}:{d}x{k}" for name, (d, k) in sorted(chosen.items()))


def describe(module, names, chosen: dict[str, tuple[int, int]]) -> str:
    """What a build does about coarsening, for its trace: each kernel's plan, or why
    not (only asked when tracing)."""
    parts = []
    for name in names:
        if name in chosen:
            d, k = chosen[name]
            parts.append(f"{name}: {k} work-items per thread along dimension {d}")
            continue
        fn = module.get_function(name) if module is not None else None
        why = analyse_kernel(fn, module)[1] if fn is not None else "its IR is not at hand"
        if why is None:
            why = f"not chosen with PYSYCL_COARSEN={config.coarsen()}"
        parts.append(f"{name}: not coarsened: {why}")
    return "; ".join(parts)


def with_plans(registry: ps.PropertySetRegistry, chosen: dict[str, tuple[int, int]]
               ) -> ps.PropertySetRegistry:
    """``registry`` (unchanged) or a copy that records ``chosen``: the coarsening set,
    and one more argument in each coarsened kernel's ``SYCL/kernel param opt`` mask."""
    if not chosen:
        return registry
    reg = ps.PropertySetRegistry(registry.to_dict())
    reg.add_set(COARSENING_SET, {name: _PLAN.pack(d, k) for name, (d, k) in chosen.items()})
    masks = reg.get(ps.KERNEL_PARAM_OPT) or {}
    for name in chosen:
        mask = masks.get(name)
        if isinstance(mask, ps.BitBytes):
            masks[name] = ps.kernel_param_opt_mask([False] * (mask.bit_size + 1))
    return reg


class Coarsening:
    """A coarsened kernel's launch: ``factor`` work-items per thread along ``dim``."""

    __slots__ = ("dim", "factor", "_last")

    def __init__(self, dim: int, factor: int):
        self.dim, self.factor = dim, factor
        self._last = (None, None, None)

    def geometry(self, global_size, local_size):
        """``(launch global size, local size, the user's extent along dim)``: the range
        divided by ``factor`` (rounded up; for an nd_range, up to a multiple of the
        work-group size, which is kept); the kernel skips the work-items past the
        extent."""
        d, extent = self.dim, global_size[self.dim]
        items = -(-extent // self.factor)
        if local_size is not None:
            items = -(-items // local_size[d]) * local_size[d]
        launch = tuple(items if i == d else size for i, size in enumerate(global_size))
        return launch, local_size, extent

    def args(self, global_size, local_size, kernel_args: list):
        """``(global size, local size)`` to launch with; ``kernel_args`` (a fresh list)
        gains the extent argument."""
        last = self._last
        if last[0] == global_size and last[1] == local_size:
            launch, arg = last[2]
        else:
            launch, local, extent = self.geometry(global_size, local_size)
            arg = KernelArg(KernelArgKind.scalar, _I64.pack(extent))
            self._last = (global_size, local_size, (launch, arg))
        kernel_args.append(arg)
        return launch, local_size

    def __repr__(self) -> str:
        return f"Coarsening(dim={self.dim}, factor={self.factor})"


def of_image(image, kernel: str, dims: int | None) -> Coarsening | None:
    """The coarsening ``image`` records for ``kernel`` (None: not coarsened);
    ``errc.invalid`` for a record that cannot be (an image read from a file)."""
    raw = (image._registry.get(COARSENING_SET) or {}).get(kernel)
    if raw is None:
        return None
    if not isinstance(raw, bytes) or len(raw) != _PLAN.size:
        raise exception(errc.invalid, f"kernel {kernel}: the image's {COARSENING_SET} "
                        "entry is not two 32-bit numbers")
    d, k = _PLAN.unpack(raw)
    if dims is None or d >= dims or not 2 <= k <= config.MAX_COARSEN:
        raise exception(errc.invalid, f"kernel {kernel}: the image's {COARSENING_SET} "
                        f"entry (dimension {d}, factor {k}) does not fit a "
                        f"{dims}-dimensional kernel")
    return Coarsening(d, k)


__all__ = ["COARSENING_SET", "Coarsening", "describe", "key_text", "of_image", "plans",
           "with_plans"]
