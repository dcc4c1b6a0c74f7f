"""The bundle layer's view of the layers below it: devices, passes, codegen, compilers.

Everything the bundle layer asks of another layer goes through one function here, so
the bundle code reads as the state chain and nothing else; tests stand in a fake code
generator, compiler or driver with ``set_override`` to exercise compile/link/build
without LLVM or a device. Backends are reached only through ``backends.registry``.

>>> device_target_name(type("D", (), {"target": type("T", (), {"name": "native_cpu"})()})())
'native_cpu'
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import sys
from typing import Any, Sequence

from .. import config
from ..backends import registry
from ..errors import errc, exception
from ..ir.core import Module
from ..passes import spec_constants
from . import stats

# The code generator, the pass pipelines and the IR printer/parser/verifier are imported
# on first use: a warm start (warm_index.py) launches a cached binary without any of
# them, and importing them costs tens of milliseconds.

#: Bumped whenever the IR -> LLVM ABI changes in a way that invalidates cached binaries
#: (keys also carry ``compiler_digest``, which changes with any edit of the compiler's
#: source); its history is in docs/contributing/architecture.md.
CODEGEN_ABI = 6

_overrides: dict[str, Any] = {}


def set_override(name: str, fn) -> None:
    """Replace one toolchain step (``"codegen"``, ``"compiler"``, ``"driver"``) in tests;
    ``fn=None`` restores the default."""
    if name not in ("codegen", "compiler", "driver"):
        raise ValueError(f"no toolchain step {name!r}")
    if fn is None:
        _overrides.pop(name, None)
    else:
        _overrides[name] = fn


# -- devices --------------------------------------------------------------------------
# A device here is a ``sycl.device`` (``target``, ``has``, ``description``), a backend
# ``DeviceDescription`` (``target``, ``aspects``) or a test stand-in with ``target``/``has``.

def device_description(dev) -> Any:
    """The backend ``DeviceDescription`` behind a ``sycl.device`` (or the device itself)."""
    return getattr(dev, "description", dev)


def device_target(dev):
    """The code-generation ``Target`` of a device."""
    target = getattr(dev, "target", None)
    if target is None:
        raise exception(errc.invalid, f"device {dev!r} has no code-generation target")
    return target


def device_target_name(dev) -> str:
    return device_target(dev).name


def required_cpu_features(target) -> tuple[str, ...]:
    """The host CPU features code made for ``target`` may use (native CPU targets)."""
    return registry.required_cpu_features(target)


def host_cpu_features() -> frozenset[str]:
    return registry.host_cpu_features()


def device_has(dev, aspect) -> bool:
    """``dev.has(aspect)``; a ``DeviceDescription`` answers from its aspect names."""
    has = getattr(dev, "has", None)
    if has is not None:
        return bool(has(aspect))
    return aspect.name in getattr(dev, "aspects", frozenset())


def device_info(dev, name: str, default=None):
    """A device limit such as ``max_work_item_sizes`` (``default`` when unknown)."""
    value = getattr(dev, name, None)
    return default if value is None else value


def is_descendant(dev, of) -> bool:
    """``dev`` is ``of`` or a sub-device of it (at any depth)."""
    desc, ancestor = device_description(dev), device_description(of)
    while desc is not None:
        if desc is ancestor:
            return True
        desc = getattr(desc, "extra", {}).get("parent")
    return False


def driver_for(dev):
    """The backend driver that loads and launches on ``dev``."""
    fn = _overrides.get("driver")
    if fn is not None:
        return fn(dev)
    return registry.get_driver(device_description(dev).backend)


# -- IR and passes ----------------------------------------------------------------------

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
    from ..ir.parser import parse_module
    return parse_module(text)


def clone(module: Module) -> Module:
    """A deep copy with fresh values (passes rewrite in place)."""
    from ..ir.clone import clone_module
    return clone_module(module)


def verify(module: Module) -> None:
    from ..ir.verifier import verify_module
    verify_module(module)


def optimise(module: Module) -> Module:
    """The object-state pipeline (``sycl.compile``): verify, unroll ``static_range``."""
    from ..passes import pipeline
    return pipeline.run_compile_pipeline(module)


def link_modules(modules: Sequence[Module], name: str = "linked") -> Module:
    """Merge modules; duplicate kernels / exported symbols raise (the linker names them)."""
    from ..passes import link as _link
    return _link.link_modules(list(modules), name)


def unresolved_symbols(module: Module) -> list[str]:
    from ..passes import link as _link
    return list(_link.unresolved_symbols(module))


def reachable_module(module: Module, roots: Sequence[str]) -> Module:
    from ..passes import link as _link
    return _link.reachable_module(module, list(roots))


# Checks compiled into every build in this context besides PYSYCL_DEBUG's: code built
# from IR that no one vouches for (a bundle file this user did not sign) is checked.
_extra_checks: contextvars.ContextVar[frozenset] = contextvars.ContextVar(
    "pysycl_extra_checks", default=frozenset())
#: What a checked build adds (``config.debug_checks`` with ``PYSYCL_DEBUG=bounds``).
CHECKED = frozenset({"assert", "bounds"})


def build_checks() -> frozenset[str]:
    """The run-time checks builds compile in now: ``config.debug_checks()`` and those
    of an enclosing ``checked_builds()``."""
    return config.debug_checks() | _extra_checks.get()


@contextlib.contextmanager
def checked_builds():
    """Builds inside compile bounds and assert checks in, as ``PYSYCL_DEBUG=bounds``
    does: an index out of range stops the work-item and raises ``errc.kernel``."""
    token = _extra_checks.set(CHECKED)
    try:
        yield
    finally:
        _extra_checks.reset(token)


def assign_spec_constant_ids(module: Module):
    """Numeric spec-constant IDs over a linked module (``passes.spec_constants``)."""
    return spec_constants.assign_spec_constant_ids(module)


def lower_spec_constants(module: Module, spec_ids, mode: str, values=None) -> Module:
    """Rewrite ``spec.get`` in place for ``mode`` (``values``: literal mode's)."""
    return spec_constants.lower_spec_constants(module, spec_ids, mode, values)


def kernel_passes(module: Module, target, checks: frozenset[str] | None = None,
                  coarsen=None) -> Module:
    """The per-target IR passes after link and spec-constant lowering (native CPU:
    group reductions, work-group fission; devices: what their codegen needs);
    ``checks``: those compiled in (default: ``build_checks()``); ``coarsen``: the
    kernels to coarsen, name -> (dimension, factor) (``coarsening.plans``; default:
    none)."""
    from ..passes import pipeline
    checks = build_checks() if checks is None else checks
    bounds = "bounds" in checks   # a checked build (PYSYCL_DEBUG=bounds)
    pm = (pipeline.native_cpu_kernel_pipeline(bounds) if target.backend == "native_cpu"
          else pipeline.device_kernel_pipeline(bounds, target.backend))
    return pm.run(module, pipeline.PassOptions(target=target.backend,
                                               extra={"coarsen": dict(coarsen or {}),
                                                      "accumulating_reductions":
                                                          target.accumulating_reductions}))


# -- codegen and target compilers --------------------------------------------------------

def codegen(module: Module, target, checks: frozenset[str] | None = None) -> str:
    """IR -> LLVM IR text for ``target`` with the run-time ``checks`` compiled in
    (default: ``build_checks()``); counted in ``stats.codegen_count``."""
    stats.bump("codegen_count")
    fn = _overrides.get("codegen")
    if fn is not None:
        return fn(module, target)
    from ..codegen.module import lower_module
    lowering = registry.get_lowering(target.name)
    # PYSYCL_DEBUG: assert and bounds checks
    lowering.debug = build_checks() if checks is None else checks
    return str(lower_module(module, lowering))


def kernel_arg_count(fn, target_name: str = "spirv64") -> int:
    """How many arguments kernel ``fn`` takes on ``target_name`` once lowered (its
    parameters as the ABI spreads them, the spec-constant buffer, hidden ones)."""
    from ..codegen.module import param_types
    lowering = registry.get_lowering(target_name)
    return (sum(len(param_types(p, True, lowering)) for p in fn.params) + 1
            + len(lowering.hidden_params(fn)))


def compiler_for(target):
    fn = _overrides.get("compiler")
    if fn is not None:
        return fn(target)
    return registry.get_compiler(target.name)


def target_compile(target, llvm_ir: str, kernel_names: Sequence[str]) -> bytes:
    stats.bump("target_compile_count")
    return compiler_for(target).compile(llvm_ir, list(kernel_names))


def check_binary(target, binary: bytes, link: bool = False) -> None:
    """``errc.invalid`` unless ``binary`` (read from a file) is well formed for ``target``
    (the target's compiler checks it: an ELF object, a SPIR-V module, PTX text);
    ``link``: host code is also linked once in a probe process (a linker crash there
    is an answer, not the end of this process)."""
    compiler_for(target).check_binary(binary, link)


def disassemble(target, binary: bytes) -> str:
    try:
        return compiler_for(target).disassemble(binary)
    except Exception as e:  # asm is a debugging aid; never fail a query for it
        return f"; no disassembly: {e}"


# -- versions (cache key parts; computed once per process) --------------------------------

@functools.cache
def llvm_version() -> str:
    """The LLVM that makes our code: llvmlite's version and the size of the LLVM library
    it ships. Read from the files, not from ``llvmlite.binding``: importing (and so
    loading) LLVM costs ~35 ms, which a disk-cache hit of a GPU image never needs."""
    import llvmlite
    lib_dir = os.path.join(os.path.dirname(llvmlite.__file__), "binding")
    try:
        libs = sorted(n for n in os.listdir(lib_dir) if "llvmlite" in n and
                      n.rsplit(".", 1)[-1] in ("so", "dylib", "dll"))
    except OSError:
        libs = []
    if not libs:   # an unusual layout: ask LLVM itself
        import llvmlite.binding as llvm
        return "llvm " + ".".join(map(str, llvm.llvm_version_info))
    sizes = ",".join(str(os.path.getsize(os.path.join(lib_dir, n))) for n in libs)
    return f"llvmlite {llvmlite.__version__}; {sizes}"


# Not compiler code: what they change never changes a compiled kernel.
_NOT_COMPILER = frozenset({"__pycache__", "runtime", "cli", "examples"})


def _source_files(root: str, skip: frozenset = frozenset({"__pycache__"})
                  ) -> list[tuple[str, os.stat_result]]:
    out = []
    cut = len(root) + 1
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in skip:
                        stack.append(e.path)
                elif e.name.endswith(".py"):
                    out.append((e.path[cut:], e.stat()))
    return sorted(out)


@functools.cache
def compiler_digest() -> str:
    """What made our code, part of every cache key: a binary or index entry made by
    other compiler code is never served, whatever ``CODEGEN_ABI`` says (Triton keys its
    cache on its own source the same way).

    In a source checkout (a development install) that is the names, sizes and
    modification times of the compiler's source files (everything but ``runtime``,
    ``cli`` and ``examples``): a stat per file, no reading; an edit changes it, and a
    checkout that only touches files costs a rebuild, never a stale hit. An installed
    copy (site-packages) changes only by reinstalling, which rewrites its files: its
    version and the modification time of its ``__init__.py`` name it with one stat."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.basename(os.path.dirname(root)) in ("site-packages", "dist-packages"):
        init = os.stat(os.path.join(root, "__init__.py"))
        return f"installed {pysycl_version()} {init.st_mtime_ns}"
    return tree_digest(root, _NOT_COMPILER)


def tree_digest(root: str, skip: frozenset = frozenset({"__pycache__"})) -> str:
    """A digest of the names, sizes and modification times of the ``.py`` files under
    ``root`` (folders named in ``skip`` left out)."""
    import hashlib
    stamp = repr([(n, s.st_size, s.st_mtime_ns) for n, s in _source_files(root, skip)])
    return hashlib.blake2b(stamp.encode(), digest_size=16).hexdigest()


@functools.cache
def host_cpu() -> str:
    """Host CPU name and features (native code is only valid on the same CPU): LLVM's
    host CPU name and feature string, as the native CPU target already holds them
    (asking LLVM and flattening ~100 features again costs ~0.5 ms of a disk-cache hit)."""
    target = registry.get_target("native_cpu")
    return f"{target.cpu}:{target.features}"


@functools.cache
def pysycl_version() -> str:
    """``pysycl.__version__`` and the Python version (bytecode-level behaviour of the
    frontend may differ between Pythons). Not ``importlib.metadata``: importing it
    costs ~50 ms, most of a cold build."""
    from .. import __version__
    return f"{__version__}+py{'.'.join(map(str, sys.version_info[:3]))}"
