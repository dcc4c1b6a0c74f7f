"""The bundle layer's view of the layers below it: devices, passes, codegen, compilers.

Everything the bundle layer asks of another layer goes through one function here, so
a change of a neighbour's spelling is a one-line change, and tests can stand in a fake
code generator or compiler (``set_override``) to exercise compile/link/build without
LLVM. Backends are reached only through ``backends.registry``.

>>> device_target_name(type("D", (), {"target": type("T", (), {"name": "native_cpu"})()})())
'native_cpu'
"""
from __future__ import annotations

import functools
import importlib
import inspect
import logging
import platform
from typing import Any, Sequence

from ..errors import errc, exception
from ..ir.core import Module
from . import stats

log = logging.getLogger("pysycl.bundle")

#: Bumped whenever the IR -> LLVM ABI changes in a way that invalidates cached binaries.
CODEGEN_ABI = 1

_overrides: dict[str, Any] = {}


def set_override(name: str, fn) -> None:
    """Replace one toolchain step (``"codegen"``, ``"compiler"``, ``"driver"``) in tests;
    ``fn=None`` restores the default."""
    if fn is None:
        _overrides.pop(name, None)
    else:
        _overrides[name] = fn


def _try_import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if e.name and name.startswith(e.name):  # the module itself is missing
            return None
        raise


# -- devices --------------------------------------------------------------------------

def device_description(dev) -> Any:
    """The backend ``DeviceDescription`` behind a ``sycl.device`` (or the device itself)."""
    for attr in ("description", "_description", "_desc", "desc"):
        d = getattr(dev, attr, None)
        if d is not None and not callable(d):
            return d
    return dev


def device_target(dev):
    """The code-generation ``Target`` of a device."""
    for obj in (dev, device_description(dev)):
        t = getattr(obj, "target", None)
        if t is not None and not callable(t):
            return t
    raise exception(errc.invalid, f"device {dev!r} has no code-generation target")


def device_target_name(dev) -> str:
    return device_target(dev).name


def device_backend(dev) -> str:
    b = getattr(device_description(dev), "backend", None) or getattr(dev, "backend", None)
    b = getattr(b, "name", b)
    return str(b) if b is not None else device_target(dev).backend


def device_has(dev, aspect) -> bool:
    """``dev.has(aspect)``; falls back on the description's aspect names."""
    has = getattr(dev, "has", None)
    if callable(has):
        return bool(has(aspect))
    names = getattr(device_description(dev), "aspects", frozenset())
    return getattr(aspect, "name", str(aspect)) in names


def device_info(dev, name: str, default=None):
    for obj in (dev, device_description(dev)):
        v = getattr(obj, name, None)
        if v is not None and not callable(v):
            return v
    return default


def is_descendant(dev, of) -> bool:
    """``dev`` is ``of`` or a sub-device of it."""
    while dev is not None:
        if dev == of:
            return True
        dev = getattr(dev, "parent_device", None) or getattr(dev, "_parent", None)
    return False


def driver_for(dev):
    fn = _overrides.get("driver")
    if fn is not None:
        return fn(dev)
    d = getattr(dev, "driver", None) or getattr(dev, "_driver", None)
    if d is not None and not callable(d):
        return d
    from ..backends import registry
    return registry.get_driver(device_backend(dev))


# -- passes ---------------------------------------------------------------------------

def print_ir(module: Module) -> str:
    """Canonical IR text (the cache key's main part). Locations are included: codegen
    writes them into assert and bounds-check messages, so a moved kernel must not reuse
    an image that names stale lines."""
    from ..ir.canonical import canonical_text
    return canonical_text(module)


def print_ir_with_locs(module: Module) -> str:
    from ..ir.printer import print_module
    return print_module(module)


def parse_ir(text: str) -> Module:
    parser = _try_import("pysycl.ir.parser")
    if parser is None:
        raise exception(errc.feature_not_supported, "this pysycl has no IR parser")
    return parser.parse_module(text)


def clone(module: Module) -> Module:
    """A deep copy with fresh values (passes rewrite in place)."""
    from ..ir.clone import clone_module
    return clone_module(module)


def verify(module: Module) -> None:
    v = _try_import("pysycl.ir.verifier")
    if v is not None:
        fn = getattr(v, "verify_module", None) or getattr(v, "verify")
        fn(module)


def optimise(module: Module) -> Module:
    """The object-state pipeline (verify, unroll static_range, ...) from passes/pipeline.py."""
    pipeline = _try_import("pysycl.passes.pipeline")
    if pipeline is not None:
        for name in ("run_compile_pipeline", "compile_pipeline", "run_object_pipeline"):
            fn = getattr(pipeline, name, None)
            if callable(fn):
                out = fn(module)
                return out if isinstance(out, Module) else module
        run = getattr(pipeline, "run_pipeline", None)
        stages = getattr(pipeline, "COMPILE_PIPELINE", None) or getattr(pipeline, "OBJECT_PIPELINE", None)
        if callable(run) and stages is not None:
            out = run(module, stages)
            return out if isinstance(out, Module) else module
    verify(module)
    unroll = _try_import("pysycl.passes.unroll_static_range")
    if unroll is not None:
        fn = getattr(unroll, "unroll_static_range", None) or getattr(unroll, "run", None)
        if fn is not None:
            out = fn(module)
            module = out if isinstance(out, Module) else module
    return module


def _link_api():
    link = _try_import("pysycl.passes.link")
    if link is None:
        raise exception(errc.feature_not_supported, "this pysycl has no linker (passes/link.py)")
    return link


def link_modules(modules: Sequence[Module], name: str = "linked") -> Module:
    """Merge modules; duplicate kernels / exported symbols raise (the linker names them)."""
    link = _link_api()
    params = inspect.signature(link.link_modules).parameters
    if "name" in params:
        return link.link_modules(list(modules), name=name)
    return link.link_modules(list(modules))


def unresolved_symbols(module: Module) -> list[str]:
    return list(_link_api().unresolved_symbols(module))


def reachable_module(module: Module, roots: Sequence[str]) -> Module:
    return _link_api().reachable_module(module, list(roots))


def work_group_fission(module: Module) -> Module:
    fission = _try_import("pysycl.passes.work_group_fission")
    if fission is None:
        return module
    fn = getattr(fission, "work_group_fission", None) or getattr(fission, "run", None)
    out = fn(module)
    return out if isinstance(out, Module) else module


# -- codegen and target compilers --------------------------------------------------------

def codegen(module: Module, target) -> str:
    """IR -> LLVM IR text for ``target``; counted in ``stats.codegen_count``."""
    stats.bump("codegen_count")
    fn = _overrides.get("codegen")
    if fn is not None:
        return fn(module, target)
    from ..backends import registry
    if hasattr(registry, "get_lowering"):
        lowering = registry.get_lowering(target.name)
    else:
        lowering = _lowering_for(target)
    from ..codegen.module import lower_module
    return str(lower_module(module, lowering))


def _lowering_for(target):
    """The backend's ``TargetLowering`` for ``target`` (its ``lowering.py``)."""
    from ..codegen.target_lowering import TargetLowering
    mod = importlib.import_module(f"pysycl.backends.{target.backend}.lowering")
    factory = getattr(mod, "lowering_for", None)
    if callable(factory):
        return factory(target)
    found = [v for v in vars(mod).values() if inspect.isclass(v) and issubclass(v, TargetLowering)
             and v is not TargetLowering and v.__module__ == mod.__name__]
    if len(found) != 1:
        raise exception(errc.feature_not_supported, f"backend {target.backend} has no lowering")
    return found[0](target)


def compiler_for(target):
    fn = _overrides.get("compiler")
    if fn is not None:
        return fn(target)
    from ..backends import registry
    return registry.get_compiler(target.name)


def target_compile(target, llvm_ir: str, kernel_names: Sequence[str]) -> bytes:
    stats.bump("target_compile_count")
    return compiler_for(target).compile(llvm_ir, list(kernel_names))


def disassemble(target, binary: bytes) -> str:
    try:
        return compiler_for(target).disassemble(binary)
    except Exception as e:  # asm is a debugging aid; never fail a query for it
        return f"; no disassembly: {e}"


@functools.lru_cache(maxsize=None)
def llvm_version() -> str:
    try:
        import llvmlite.binding as llvm
        return ".".join(map(str, llvm.llvm_version_info))
    except Exception:
        return "unknown"


@functools.lru_cache(maxsize=None)
def host_cpu() -> str:
    """Host CPU name and features (native code is only valid on the same CPU)."""
    try:
        import llvmlite.binding as llvm
        return f"{llvm.get_host_cpu_name()}:{llvm.get_host_cpu_features().flatten()}"
    except Exception:
        return platform.machine()


@functools.lru_cache(maxsize=None)
def pysycl_version() -> str:
    # The package's own constant: importlib.metadata costs ~100 ms to import, on the
    # path of every disk-cache hit (the value is the same: pyproject's version).
    from .. import __version__
    if __version__:
        return __version__
    try:
        from importlib.metadata import version
        return version("pysycl")
    except Exception:
        return "0"
