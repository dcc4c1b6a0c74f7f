"""The build chain: one declared list of stages from Python source to a loaded program.

    input ─▶ object ─▶ link ─▶ spec_constants ─▶ kernel_passes ─▶ llvm ─▶ binary ─▶ load

Each :class:`Stage` names what it makes (the name ``PYSYCL_DUMP`` takes and, for the
texts a device image keeps, its ``asm`` key), says why it is there, makes its output
from the previous stage's (``make(value, job)``; ``job`` says for what: a label, and for
the back half the target, lowering and values), prints that output (``show``), and names
the caches at its output boundary, asked in order before it runs (``tiers``).

The SYCL API decides when the front stages run (``get_kernel_bundle`` makes input images,
``sycl.compile`` object images, ``sycl.link`` the rest), so ``sources.py`` and
``linker.py`` run them one at a time through :func:`run`, each keeping its output on the
object it is made from. The back half, from a linked kernel to a binary, runs as one
piece (:func:`build_binary`) behind the build cache, whose key (``linker.py``) covers
everything it reads; ``device_image.program`` runs ``load``. Whoever consults a cache
tier reports the hit with :func:`hit` (``stats.tier_hits``, and a trace slice), so the
warm-start index shows as what it is: a tier in front of the ``binary`` stage.

>>> [s.name for s in STAGES]
['input', 'object', 'link', 'spec_constants', 'kernel_passes', 'llvm', 'binary', 'load']
"""
from __future__ import annotations

import itertools
import logging
import os
import re
import sys
import threading
from typing import Any, Callable, Mapping

from .. import config
from .._records import FrozenValue
from ..detail import trace
from ..errors import errc, exception
from . import stats, toolchain
from .cache import Cache, CacheKey

log = logging.getLogger("pysycl")


class Job(FrozenValue):
    """What a stage works for: ``what`` names it in dumps and trace slices (the kernels,
    or the library's module)."""

    __slots__ = _fields = ("what",)
    what: str

    def __init__(self, what: str):
        object.__setattr__(self, "what", what)


class BuildJob(FrozenValue):
    """The back half's request: the image's kernels, its spec-constant IDs, the target,
    the lowering mode, the values a ``literal`` image folds in (None otherwise), the
    run-time checks compiled in (``toolchain.build_checks()`` when the build was asked
    for: a later query of the same image must see the same code) and the kernels it
    coarsens (name -> (dimension, factor), ``coarsening.plans``, likewise)."""

    __slots__ = _fields = ("what", "names", "spec_ids", "target", "mode", "values", "checks",
                           "coarsen")
    what: str
    names: tuple[str, ...]
    spec_ids: Any
    target: Any
    mode: str
    values: Mapping[str, bytes] | None
    checks: frozenset[str]
    coarsen: Mapping[str, tuple[int, int]]

    def __init__(self, names, spec_ids, target, mode: str,
                 values: Mapping[str, bytes] | None, checks: frozenset[str],
                 coarsen: Mapping[str, tuple[int, int]] | None = None):
        object.__setattr__(self, "what", f"{', '.join(names)} for {target.name}")
        object.__setattr__(self, "names", tuple(names))
        object.__setattr__(self, "spec_ids", spec_ids)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "values", values if mode == "literal" else None)
        object.__setattr__(self, "checks", frozenset(checks))
        object.__setattr__(self, "coarsen", dict(coarsen or {}))


class LoadJob(FrozenValue):
    """``load``'s request: the driver and device, the image's kernels and device globals,
    native spec-constant values, the driver's code cache and context."""

    __slots__ = _fields = ("what", "driver", "device", "kernel_names", "native_values",
                           "device_global_ids", "code_cache", "context")

    def __init__(self, driver, device, kernel_names, native_values, device_global_ids,
                 code_cache, context):
        name = getattr(device, "name", device)
        object.__setattr__(self, "what", f"{', '.join(kernel_names)} on {name}")
        object.__setattr__(self, "driver", driver)
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "kernel_names", list(kernel_names))
        object.__setattr__(self, "native_values", native_values or None)
        object.__setattr__(self, "device_global_ids", tuple(device_global_ids))
        object.__setattr__(self, "code_cache", code_cache)
        object.__setattr__(self, "context", context)


class Stage(FrozenValue):
    """One stage of the chain (see the module doc)."""

    __slots__ = _fields = ("name", "reason", "make", "show", "tiers")
    name: str
    reason: str
    make: Callable[[Any, Any], Any]
    show: Callable[[Any, Any], str]
    tiers: tuple[str, ...]

    def __init__(self, name, reason, make, show, tiers=()):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "make", make)
        object.__setattr__(self, "show", show)
        object.__setattr__(self, "tiers", tuple(tiers))


# -- what each stage does ---------------------------------------------------------------

def _frontend(source, job: Job):
    """A ``@sycl.kernel`` or ``@sycl.external`` function's IR module."""
    return source.ir_module()


def _compile(module, job: Job):
    return toolchain.optimise(toolchain.clone(module))


class UnresolvedSymbols(Exception):
    """A link left imports undefined; ``linker.py`` names who imports them."""

    def __init__(self, symbols: list[str]):
        super().__init__(", ".join(symbols))
        self.symbols = symbols


def _link(modules, job: Job):
    """Merged module and its spec-constant IDs: numeric IDs exist only once every image
    that may declare a constant is in (separate compilation)."""
    linked = toolchain.link_modules([toolchain.clone(m) for m in modules])
    missing = toolchain.unresolved_symbols(linked)
    if missing:
        raise UnresolvedSymbols(missing)
    return linked, toolchain.assign_spec_constant_ids(linked)


def _lower_spec_constants(module, job: BuildJob):
    module = toolchain.clone(module)   # the linked kernel's module is shared: lower a copy
    toolchain.lower_spec_constants(module, job.spec_ids, job.mode, job.values)
    return module


def _kernel_passes(module, job: BuildJob):
    return toolchain.kernel_passes(module, job.target, job.checks, job.coarsen)


def _codegen(module, job: BuildJob) -> str:
    return toolchain.codegen(module, job.target, job.checks)


def _target_compile(llvm: str, job: BuildJob) -> bytes:
    return toolchain.target_compile(job.target, llvm, job.names)


def _load(binary: bytes, job: LoadJob):
    stats.bump("load_count")
    return job.driver.load(toolchain.device_description(job.device), binary,
                           job.kernel_names, job.native_values,
                           device_global_ids=job.device_global_ids,
                           code_cache=job.code_cache, context=job.context)


# -- how each stage's output prints -------------------------------------------------------

def _show_ir(module, job) -> str:
    if isinstance(module, tuple):   # link: (module, spec-constant IDs)
        module = module[0]
    return toolchain.print_ir_with_locs(module)


def _show_text(text: str, job) -> str:
    return text


def _show_binary(binary: bytes, job: BuildJob) -> str:
    """The disassembly, after a line saying what the binary is (a target without a
    disassembler, such as host objects, shows that line only)."""
    head = f"; {len(binary)} bytes of {job.target.binary_format} for {job.target.name}"
    text = toolchain.disassemble(job.target, binary)
    return f"{head}\n{text}" if text else head


def _show_program(program, job: LoadJob) -> str:
    return f"{program!r}: kernels {', '.join(job.kernel_names)}"


STAGES: tuple[Stage, ...] = (
    Stage("input", "Python source -> IR: one kernel and the device functions it calls "
          "(a module's @sycl.external functions: one library image)",
          _frontend, _show_ir, ("memory: the kernel_id", "warm index: source fingerprint")),
    Stage("object", "sycl::compile: verify, unroll static_range; target independent",
          _compile, _show_ir, ("memory: the input image",)),
    Stage("link", "merge object images, resolve @sycl.external symbols, assign "
          "spec-constant numeric IDs (they exist only after link)",
          _link, _show_ir, ("memory: the kernel_id (default link) or the input image",)),
    Stage("spec_constants", "lower spec.get for the image's mode: native, literal "
          "(values folded in) or emulated (read from the implicit buffer)",
          _lower_spec_constants, _show_ir),
    Stage("kernel_passes", "per-target IR passes (thread coarsening; native CPU: work-group "
          "fission, group reductions; devices: reducers)", _kernel_passes, _show_ir),
    Stage("llvm", "IR -> LLVM IR through the target's lowering rules", _codegen, _show_text),
    Stage("binary", "LLVM IR -> host object, SPIR-V or PTX (no device needed)",
          _target_compile, _show_binary,
          ("memory: the linked kernel's images", "warm index: source fingerprints",
           "disk: build cache, keyed by the linked kernel's IR")),
    Stage("load", "the device's driver loads the binary (the only stage that touches a "
          "device)", _load, _show_program,
          ("memory: loaded programs (bounded)", "disk: the driver's device code cache")),
)
STAGE: dict[str, Stage] = {s.name: s for s in STAGES}
#: The stages from a linked kernel to its binary, run as one piece behind the build cache.
BACK_HALF = tuple(s.name for s in STAGES[STAGES.index(STAGE["spec_constants"]):
                                          STAGES.index(STAGE["binary"]) + 1])


def describe() -> list[tuple[str, str]]:
    """(name, reason) of every stage, in order."""
    return [(s.name, s.reason) for s in STAGES]


# -- running ------------------------------------------------------------------------------

def run(name: str, value, job):
    """Stage ``name``'s output from ``value`` (the previous stage's), printed when
    ``PYSYCL_DUMP`` asks for it."""
    stage = STAGE[name]
    with trace.span(f"{name} {job.what}", "stage"):
        out = stage.make(value, job)
    if _dumping(name, job):
        _dump(stage, job, out)
    return out


def run_chain(first: str, last: str, value, job, keep: str | None = None):
    """Run the stages ``first`` .. ``last`` in declared order; returns the last output
    and (``keep``) that stage's output, or None."""
    names = [s.name for s in STAGES]
    kept = None
    for name in names[names.index(first):names.index(last) + 1]:
        value = run(name, value, job)
        if name == keep:
            kept = value
    return value, kept


def build_binary(module, job: BuildJob, key: CacheKey, cache: Cache, label: str
                 ) -> tuple[bytes, str | None]:
    """The binary of linked kernel ``module`` for ``job``: from ``cache`` (memory, then
    disk) under ``key``, else made by the back half; with the LLVM text when it was made
    here (None after a cache hit: :func:`llvm_text` makes it again on demand)."""
    made: list[str] = []

    def make() -> bytes:
        # Any failure on the way is the kernel's build error (IR read from a file may
        # pass the verifier and still break an assumption of a lowering).
        try:
            binary, llvm = run_chain(BACK_HALF[0], BACK_HALF[-1], module, job, keep="llvm")
        except exception:
            raise
        except Exception as e:
            raise exception(errc.build, f"building kernel {', '.join(job.names)} for "
                            f"{job.target.name} failed: {type(e).__name__}: {e}") from e
        made.append(llvm)
        return binary
    binary, tier = cache.fetch_or_build(key, make, label=label)
    hit("binary", tier, job.what)
    return binary, (made[0] if made else None)


def llvm_text(module, job: BuildJob) -> str:
    """The LLVM text the back half makes from ``module`` for ``job`` (what a binary
    found in a cache was made from): the same stages, not printed again."""
    value = module
    for name in BACK_HALF[:BACK_HALF.index("llvm") + 1]:
        value = STAGE[name].make(value, job)
    return value


def hit(stage: str, tier: str, what: str = "") -> None:
    """Record where stage ``stage``'s output came from: ``memory``, ``warm index``,
    ``disk`` or ``built`` (``stats.tier_hits``; a slice when tracing)."""
    stats.bump_tier(stage, tier)
    if trace.recorder() is not None:   # a hit costs microseconds: no slice unless tracing
        with trace.span(f"{stage} from {tier}: {what}" if what else f"{stage} from {tier}",
                        "cache", stage=stage, tier=tier):
            pass


# -- PYSYCL_DUMP ----------------------------------------------------------------------------

#: Names ``PYSYCL_DUMP`` takes besides the stages': ``ir`` (every pass pipeline prints
#: the IR after each pass, ``passes/pipeline.py``), ``all`` (every stage), and the binary
#: formats that name the ``binary`` stage of their targets only.
_ALIASES = {"spirv": "binary", "ptx": "binary"}
_OTHER_NAMES = frozenset({"ir", "all"})
_warned: set[str] = set()
_warn_lock = threading.Lock()


def _dumping(name: str, job) -> bool:
    wanted = config.dump_stages()
    if not wanted:
        return False
    _warn_unknown(wanted)
    if name in wanted or "all" in wanted:
        return True
    # PYSYCL_DUMP=spirv / ptx: the binary stage of the targets that make that format
    # ("object" names the object-image stage, not host objects).
    fmt = getattr(job.target, "binary_format", None) if name == "binary" else None
    return fmt in _ALIASES and fmt in wanted


def _warn_unknown(wanted: frozenset[str]) -> None:
    unknown = sorted(w for w in wanted - _warned if w not in STAGE and w not in _ALIASES
                     and w not in _OTHER_NAMES)
    if not unknown:
        return
    with _warn_lock:
        _warned.update(unknown)
    log.warning("PYSYCL_DUMP: no stage named %s (stages: %s; also ir, spirv, ptx, all)",
                ", ".join(unknown), ", ".join(STAGE))


_dump_numbers = itertools.count(1)
_EXTENSIONS = {"llvm": "ll", "binary": {"spirv": "spvasm", "ptx": "ptx", "object": "s"},
               "load": "txt"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _dump(stage: Stage, job, out) -> None:
    """Print ``out`` to stderr, or write it into ``PYSYCL_DUMP_DIR``: one file per
    output, numbered in the order made (two builds of one kernel never overwrite)."""
    text = stage.show(out, job)
    folder = config.dump_dir()
    if folder is None:
        sys.stderr.write(f"; ---- {stage.name}: {job.what} ----\n{text}\n")
        return
    ext = _EXTENSIONS.get(stage.name, "ir")
    if isinstance(ext, dict):
        ext = ext.get(getattr(job.target, "binary_format", ""), "txt")
    name = f"{next(_dump_numbers):04d}-{stage.name}-{_UNSAFE.sub('_', job.what)[:80]}.{ext}"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:   # a dump is a debugging aid: never fail a build over it
        log.warning("PYSYCL_DUMP_DIR: could not write %s: %s", name, e)
