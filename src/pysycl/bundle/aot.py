"""Ahead-of-time compilation (``pysycl compile``) and bundle-file description
(``pysycl inspect``).

``compile_modules`` turns the kernels and ``@sycl.external`` functions of Python modules
into a kernel bundle without any device:

* ``state="input"``: the modules' input images (pysycl IR), to be built after loading
  with spec-constant values set on the loaded bundle;
* ``state="object"``: one object image per kernel plus one library image per module
  that exports functions (verified, optimised pysycl IR; imports stay unresolved and
  are resolved when the file is linked, possibly with another module's object file);
* ``state="executable"``: the modules' object images are linked with the library
  images of every module imported so far that they need (an unresolved symbol is
  ``errc.build`` naming it), then each kernel is built for every target of the list:
  ``native_cpu`` (host object code for this machine's CPU), ``spirv64`` (SPIR-V) and
  ``nvptx64-sm_XX`` (PTX). Ahead-of-time images take spec constants *emulated* (a
  buffer argument, SYCL 2020's AOT model), so values still apply after loading. A
  kernel that does not fit a target (a required sub-group size the target's devices
  do not have) is left out of that target's images.

The result is a ``kernel_bundle`` with no context (its images name their target, not a
device); ``save_kernel_bundle`` writes it and ``load_kernel_bundle(ctx, path)`` binds
its images to the context's devices of each target, with no code generation.

>>> print(describe_file.__doc__.splitlines()[0])
The text ``pysycl inspect`` prints for a bundle file: header, then per image its
"""
from __future__ import annotations

import os
import types
import warnings
from typing import Iterable, Sequence

from ..backends import registry
from ..errors import errc, exception
from . import property_sets as ps
from . import syclbin
from .device_image import bundle_state, device_image, kernel_compatible
from .kernel_bundle import kernel_bundle
from .kernel_id import get_kernel_id, registered_kernels
from .executables import build_executable
from .linker import link_objects
from .sources import input_image, libraries_for, library_image, object_image

#: The spec-constant lowering of every ahead-of-time executable image.
AOT_SPEC_CONSTANT_LOWERING = "emulated"


class TargetOnly:
    """Stands for "a device with this code-generation target" when building with no
    device present (what ``build_executable`` reads of a device is its ``target``)."""

    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target

    @property
    def name(self) -> str:
        return f"{self.target.name} (ahead of time)"

    def has(self, aspect) -> bool:
        """Aspects are a device's: unknown ahead of time, so a kernel that needs one
        is built (and refused at launch on a device without it)."""
        return True

    @property
    def sub_group_sizes(self):
        """What every device of the target has (``None``: unknown until a device)."""
        return self.target.sub_group_sizes

    def __eq__(self, other):
        return type(other) is TargetOnly and other.target.name == self.target.name

    def __hash__(self):
        return hash(("TargetOnly", self.target.name))

    def __repr__(self) -> str:
        return f"TargetOnly({self.target.name!r})"


def _module_name(module) -> str:
    if isinstance(module, types.ModuleType):
        return module.__name__
    if isinstance(module, str):
        return module
    raise exception(errc.invalid, f"{module!r} is not a Python module or module name")


def resolve_targets(targets: Iterable[str]) -> list:
    """Code-generation ``Target`` objects for names such as ``native_cpu``,
    ``spirv64``, ``nvptx64-sm_90`` (``errc.invalid`` for an unknown name)."""
    out = []
    for name in targets:
        name = name.strip()
        if not name:
            continue
        try:
            target = registry.get_target(name)
        except exception:
            raise
        except Exception as e:  # a malformed name such as "spirv64vX"
            raise exception(errc.invalid, f"unknown target {name!r}: {e}") from None
        if target.name != name:   # e.g. a CPU level the backend does not know
            raise exception(errc.invalid, f"unknown target {name!r}")
        if all(t.name != target.name for t in out):
            out.append(target)
    if not out:
        raise exception(errc.invalid, "no target given (native_cpu, spirv64, nvptx64-sm_XX)")
    return out


def module_images(module_names: Sequence[str]) -> list[device_image]:
    """Input images of the kernels of ``module_names`` plus each module's library image
    (exported ``@sycl.external`` functions), in module order."""
    images: list[device_image] = []
    for name in module_names:
        kernels = registered_kernels(name)
        lib = library_image(name)
        if not kernels and lib is None:
            raise exception(errc.invalid, f"module {name} defines no @sycl.kernel or "
                                          "@sycl.external function")
        for k in kernels:
            if getattr(k, "unbound_reducers", ()):
                # combine()-only reducers take their operator from the launch's reduction
                warnings.warn(f"kernel {k.name} is left out: the operator of its reducer(s) "
                              f"{', '.join(k.unbound_reducers)} comes from the launch; "
                              "annotate it (sycl.reducer[T, sycl.plus]) to compile it ahead "
                              "of time", RuntimeWarning, stacklevel=3)
                continue
            images.append(input_image(get_kernel_id(k)))
        if lib is not None:
            images.append(lib)
    return list(dict.fromkeys(images))


def compile_modules(modules, targets: Iterable[str] = ("native_cpu",),
                    state: str | bundle_state = "executable",
                    cpu: str | None = None, progress=None) -> kernel_bundle:
    """The kernel bundle of ``modules`` (module objects or names, already imported) in
    ``state`` (``"input"``, ``"object"`` or ``"executable"``) for ``targets`` (see
    module doc). ``cpu`` (e.g. ``"x86-64-v2"``) builds ``native_cpu`` for that generic
    CPU level instead of this machine's CPU, so the file runs on other CPUs.
    ``progress(done, total, what)`` is called before each executable image is built."""
    if cpu:
        targets = [f"native_cpu-{cpu}" if t.strip() == "native_cpu" else t for t in targets]
    names = list(dict.fromkeys(_module_name(m) for m in modules))
    if not names:
        raise exception(errc.invalid, "compile_modules needs at least one module")
    if not isinstance(state, bundle_state):
        try:
            state = bundle_state[str(state)]
        except KeyError:
            raise exception(errc.invalid, f"unknown bundle state {state!r} (input, object "
                                          "or executable)") from None
    target_list = resolve_targets(targets)
    own = module_images(names)
    if state is bundle_state.input:
        return kernel_bundle(None, [], bundle_state.input, own)
    if state is bundle_state.object:
        return kernel_bundle(None, [], bundle_state.object, [object_image(i) for i in own])
    objects = [object_image(i) for i in own + [lib for lib in libraries_for(own) if lib not in own]]
    builds = []
    for lk in link_objects(objects):
        # A kernel that does not fit a target is left out of that target's images: a
        # launch there is errc.kernel_not_supported, the other targets still have it.
        builds += [(lk, TargetOnly(t)) for t in target_list
                   if kernel_compatible(lk.module.function(lk.name), TargetOnly(t))]
    images = []
    for done, (lk, target) in enumerate(builds):
        if progress is not None:
            progress(done, len(builds), f"{lk.name} for {target.name}")
        images.append(build_executable(lk, [target], AOT_SPEC_CONSTANT_LOWERING, None))
    if progress is not None:
        progress(len(builds), len(builds), "")
    return kernel_bundle(None, [], bundle_state.executable, images)


# -- pysycl inspect -----------------------------------------------------------------------

_IR_TYPES = {syclbin.IR_TYPE_SPIRV: "SPIR-V", syclbin.IR_TYPE_PTX: "PTX",
             syclbin.IR_TYPE_AMDGCN: "AMDGCN", syclbin.IR_TYPE_PYSYCL: "pysycl IR"}


def _names(reg: ps.PropertySetRegistry, set_name: str) -> str:
    names = list(reg.get(set_name) or {})
    return ", ".join(names) if names else "-"


def describe(f: syclbin.SyclbinFile, label: str = "") -> str:
    """``describe_file`` for a parsed file."""
    state = bundle_state(int(f.state)).name
    out = [f"{label}: SYCLBIN, state {state}, {len(f.abstract_modules)} images\n"
           if label else f"SYCLBIN, state {state}, {len(f.abstract_modules)} images\n"]
    for i, am in enumerate(f.abstract_modules):
        reg = am.property_sets
        info = reg.get("PYSYCL/image") or {}

        def text(key, default="-"):
            raw = info.get(key)
            return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else default

        kind = "kernel" if reg.get(ps.KERNEL_NAMES) else "library"
        if info:
            line = f"image {i}: {kind}, target {text('target')}, format {text('format')}"
        else:   # written by DPC++: its images say what they hold
            line = f"image {i}: {kind} (no pysycl image information)"
        if "spec_constant_lowering" in info:
            line += f", spec constants {text('spec_constant_lowering')}"
        out.append(line + "\n")
        out.append(f"  kernels: {_names(reg, ps.KERNEL_NAMES)}\n")
        out.append(f"  exported symbols: {_names(reg, ps.EXPORTED_SYMBOLS)}\n")
        out.append(f"  imported symbols: {_names(reg, ps.IMPORTED_SYMBOLS)}\n")
        for ir in am.ir_modules:
            out.append(f"  ir module: {_IR_TYPES.get(ir.ir_type, f'type {ir.ir_type}')}, "
                       f"{len(ir.data)} bytes\n")
        for nat in am.native_images:
            if nat.target == syclbin.PYSYCL_IR_TARGET:
                out.append(f"  pysycl IR: {len(nat.data)} bytes (native image of target "
                           f"{nat.target}, which DPC++ skips)\n")
                continue
            fmt = f", format {nat.format}" if nat.format else ""
            out.append(f"  native image: {nat.target or 'no target'} arch {nat.arch}{fmt}, "
                       f"{len(nat.data)} bytes\n")
        out.append("  property sets:\n")
        out += [f"    {ln}\n" for ln in reg.to_text().splitlines()]
    return "".join(out)


def describe_file(path) -> str:
    """The text ``pysycl inspect`` prints for a bundle file: header, then per image its
    kind, target, format, kernels, exported and imported symbols, IR and native images,
    and its property sets in DPC++'s text format (``[set]``, ``key=type|value``).
    A malformed file is ``errc.invalid``."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise exception(errc.invalid, f"cannot read {path}: {e.strerror}") from None
    return describe(syclbin.read_syclbin(data), path)


__all__ = ["AOT_SPEC_CONSTANT_LOWERING", "TargetOnly", "compile_modules", "describe",
           "describe_file", "module_images", "resolve_targets"]
