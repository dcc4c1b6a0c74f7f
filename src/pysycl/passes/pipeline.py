"""Pass pipelines: declared lists of (pass, reason), run in order on a module.

Like numba's ``pm.add_pass(Pass, "reason")``: the list says what runs and why, a pass is a
function ``(module, options) -> module | None`` (None: it rewrote the module in place) or
a class/instance with ``name`` and ``run(module, options)``. After each pass the module can
be verified (``options.verify``; debug builds and tests turn it on) and printed when
``ir`` is among the dump stages (``PYSYCL_DUMP``, read by ``config.dump_stages()`` only).
Each run records per-pass wall times in ``PassManager.timings``.

>>> pm = PassManager("demo")
>>> pm.add_pass(lambda m, o: None, "does nothing")
>>> pm.run(Module("m")).name
'm'
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

from pysycl._records import FrozenValue, Record
from pysycl.errors import errc, exception
from pysycl.ir.core import Module
from pysycl.ir.printer import print_module
from pysycl.ir.verifier import verify_module

from .bounds_checks import insert_bounds_checks
from .coarsen_threads import coarsen_threads
from .lower_complex_group_ops import lower_complex_group_ops
from .lower_group_reduce import lower_group_reduce
from .lower_reducers import finish_reducers_native, lower_reducers, prepare_reducers_native
from .unroll_static_range import unroll_static_range
from .work_group_fission import work_group_fission

PassFunction = Callable[[Module, "PassOptions"], "Module | None"]
_NEW_DICT: Any = object()   # PassOptions(extra=...) not given: a new dict


class PassOptions(Record):
    """What passes may consult. ``dump`` None means: ask ``config.dump_stages()``.
    (A mutable record, _records.py.)"""

    _fields = ("verify", "dump", "dump_stream", "target", "extra")
    verify: bool = False
    dump: frozenset[str] | None = None
    dump_stream: TextIO | None = None
    target: str = ""
    extra: dict[str, Any]

    def __init__(self, verify: bool = False, dump: frozenset[str] | None = None,
                 dump_stream: TextIO | None = None, target: str = "",
                 extra: dict[str, Any] = _NEW_DICT):
        self.verify = verify
        self.dump = dump
        self.dump_stream = dump_stream
        self.target = target
        self.extra = {} if extra is _NEW_DICT else extra

    def dump_stages(self) -> frozenset[str]:
        if self.dump is None:
            from pysycl import config  # the one module that reads PYSYCL_*
            return config.dump_stages()
        return self.dump


class PassEntry(FrozenValue):
    __slots__ = _fields = ("name", "run", "reason")
    name: str
    run: PassFunction
    reason: str

    def __init__(self, name, run, reason):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "run", run)
        object.__setattr__(self, "reason", reason)


class PassManager:
    """A named, ordered list of passes with the reason each one is there."""

    def __init__(self, name: str):
        self.name = name
        self.passes: list[PassEntry] = []
        self.timings: list[tuple[str, float]] = []

    def add_pass(self, p: Any, reason: str) -> None:
        """Append a pass: a function, a class (instantiated without arguments) or an object
        with ``run(module, options)``; its name is ``p.name`` or the function's name."""
        obj = p() if isinstance(p, type) else p
        fn = obj.run if hasattr(obj, "run") else obj
        name = getattr(obj, "name", None) or getattr(fn, "__name__", type(obj).__name__)
        if not callable(fn):
            raise TypeError(f"pass {p!r} is not callable")
        self.passes.append(PassEntry(name, fn, reason))

    def describe(self) -> list[tuple[str, str]]:
        """(name, reason) of every pass, in order."""
        return [(p.name, p.reason) for p in self.passes]

    def run(self, module: Module, options: PassOptions | None = None) -> Module:
        options = options or PassOptions()
        stages = options.dump_stages()
        self.timings = []
        for p in self.passes:
            start = time.perf_counter()
            result = p.run(module, options)
            self.timings.append((p.name, time.perf_counter() - start))
            module = module if result is None else result
            if options.verify:
                self._verify(module, p)
            if "ir" in stages:
                out = options.dump_stream or sys.stderr
                out.write(f"// IR after {self.name}.{p.name} ({p.reason})\n")
                out.write(print_module(module))
        return module

    def _verify(self, module: Module, p: PassEntry) -> None:
        try:
            verify_module(module)
        except exception as e:
            raise exception(errc.build, f"after pass {self.name}.{p.name}: {e}") from None


def verify(module: Module, options: PassOptions | None = None) -> None:
    """The verifier as a pass."""
    verify_module(module)


def compile_pipeline() -> PassManager:
    """The object-state pipeline (``sycl::compile``): target independent."""
    pm = PassManager("compile")
    pm.add_pass(verify, "reject malformed input before rewriting it")
    pm.add_pass(unroll_static_range, "sycl.static_range loops must be unrolled before codegen")
    return pm


def run_compile_pipeline(module: Module, options: PassOptions | None = None) -> Module:
    """Run :func:`compile_pipeline` (what ``bundle.toolchain.optimise`` calls)."""
    return compile_pipeline().run(module, options)


def _add_bounds_checks(pm: PassManager) -> None:
    pm.add_pass(insert_bounds_checks, "checked builds: every accessor and USM access checks "
                                      "its index first (before the passes that copy or "
                                      "split kernel bodies, so they keep the checks)")


def _add_coarsening(pm: PassManager) -> None:
    pm.add_pass(coarsen_threads, "the kernels a build coarsens run K work-items per "
                                 "thread, before any pass that reads work-item structure")


def native_cpu_kernel_pipeline(bounds: bool = False) -> PassManager:
    """IR passes for kernels on the native CPU device, after link and spec-constant
    lowering; ``bounds``: a checked build (``PYSYCL_DEBUG=bounds``)."""
    from .forward_constants import forward_constant_vars
    from .split_item_range import split_item_range
    from .strip_uniform_loops import strip_uniform_loops

    pm = PassManager("native_cpu")
    pm.add_pass(unroll_static_range, "sycl.static_range loops must be unrolled before codegen")
    if bounds:
        _add_bounds_checks(pm)
    pm.add_pass(forward_constant_vars, "loops over a constant local (a literal spec constant) "
                                       "get a constant trip count, so they fully unroll")
    _add_coarsening(pm)
    pm.add_pass(prepare_reducers_native, "a reducer accumulates per work-group (one thread "
                                         "runs it), and returns end a work-item's part only")
    pm.add_pass(lower_group_reduce, "work-group reductions become group vars and barriers")
    pm.add_pass(strip_uniform_loops, "uniform kernel loops get implicit barriers, so the "
                                     "work-item loop inside them is innermost and vectorises")
    pm.add_pass(_OptimisedFission(), "one thread runs a work-group: split at barriers")
    pm.add_pass(finish_reducers_native, "reducers start from the identity and write each "
                                        "work-group's result, at group level around the "
                                        "work-item regions")
    pm.add_pass(split_item_range, "bounds checks of the innermost work-item id hold on an "
                                  "interior interval of each row: the row loop is split "
                                  "there, so guarded code vectorises without masks")
    return pm


class _OptimisedFission:
    """``work_group_fission`` with its clean-up (fission_uniform): uniform vars at group
    level, item-expression vars recomputed, work-item loops innermost."""

    name = "work_group_fission"

    def run(self, module: Module, options: PassOptions | None = None) -> Module:
        return work_group_fission(module, options, optimise=True)


def device_kernel_pipeline(bounds: bool = False, backend: str = "") -> PassManager:
    """IR passes for SPIR-V and PTX targets (barriers and reductions are native there);
    ``bounds``: a checked build; ``backend``: the target's (``"cuda"``, ``"opencl"``)."""
    from .flatten_guards import flatten_guards

    pm = PassManager("device")
    pm.add_pass(unroll_static_range, "sycl.static_range loops must be unrolled before codegen")
    if bounds:
        _add_bounds_checks(pm)
    _add_coarsening(pm)
    pm.add_pass(lower_reducers, "reducers start from the identity and combine through a "
                                "work-group reduction and one write per work-group")
    pm.add_pass(lower_complex_group_ops, "the group primitives move single numbers: a "
                                         "complex value goes through them as its parts "
                                         "(after lower_reducers, which makes group ops)")
    if backend == "cuda":
        pm.add_pass(flatten_guards, "nested bounds checks become one condition per "
                                    "guarded access, so ptxas predicates them all in one "
                                    "region and issues the guarded loads together")
    return pm
