"""LLVM IR text -> host object bytes: parse, verify, O3 with the new pass manager (loop and
SLP vectorisation on), emit with a TargetMachine for this CPU (PIC, so LLJIT can place it
anywhere). Needs no device.

>>> obj = NativeCpuCompiler().compile(llvm_ir_text, ["vadd"])    # doctest: +SKIP
"""
from __future__ import annotations

import threading
from typing import Sequence

import llvmlite.binding as llvm

from ...errors import errc, exception
from ..base import Compiler, Target
from . import llvm_threads
from .object_check import check_object, probe_link
from .target import new_target_machine, native_cpu_target


class NativeCpuCompiler(Compiler):
    """O3 + host object emission.

    Measured on the 3x3 convolution kernel (2-core x86-64 with AVX-512, shared machine):
    O3 with SLP and loop interleaving took 147 ms opt + 83 ms codegen and ran no faster
    than without both (85 + 52 ms); so SLP and interleaving are off by default and loop
    vectorisation is on. LLVM's loop unrolling is off (see ``optimize``); loops that
    must be unrolled ask for it."""

    def __init__(self, target: Target | None = None, slp: bool = False,
                 interleave: bool = False, speed_level: int = 3, unroll: bool = False):
        self.target = target or native_cpu_target()
        self.slp = slp
        self.interleave = interleave
        self.speed_level = speed_level
        self.unroll = unroll
        self._per_thread = threading.local()

    @property
    def target_machine(self) -> llvm.TargetMachine:
        """This thread's TargetMachine: host TMs are reusable, but code generation on
        one is not re-entrant, and a bundle's kernels compile on several threads
        (``bundle.executables.build_for_devices``)."""
        tm = getattr(self._per_thread, "tm", None)
        if tm is None:
            tm = self._per_thread.tm = new_target_machine(self.target.cpu,
                                                          self.target.features)
        return tm

    def optimize(self, llvm_ir: str, name: str = "module") -> llvm.ModuleRef:
        """Parse, verify and optimise; raises ``exception(errc.build)`` with LLVM's message.
        Each module gets an LLVM context of its own and each thread a TargetMachine, so
        threads compile at once (``llvm_threads``: outside llvmlite's lock)."""
        tm = self.target_machine
        try:
            mod = llvm_threads.parse(llvm_ir, llvm.create_context())
            mod.triple = self.target.triple
            mod.data_layout = str(tm.target_data)
            llvm_threads.verify(mod)
        except RuntimeError as e:
            raise exception(errc.build, f"LLVM rejected the IR of {name!r}: {e}") from None
        pto = llvm.create_pipeline_tuning_options(speed_level=self.speed_level)
        pto.loop_vectorization = True
        pto.slp_vectorization = self.slp
        pto.loop_interleaving = self.interleave
        # LLVM's runtime/partial unrolling: off. Unrolling the vectorised work-item loop
        # and its remainder doubled code generation (vector add: opt 43 -> 35 ms, codegen
        # 71 -> 32 ms on the 2-core benchmark machine) for no measurable speed: the
        # kernels are memory bound or already unrolled by us. Loops that must vanish are
        # unrolled anyway: sycl.static_range by passes/unroll_static_range, small constant
        # loops through llvm.loop.unroll.full (ir/loops.FULL_UNROLL_TRIPS),
        # which LLVM honours with unrolling off.
        pto.loop_unrolling = self.unroll
        llvm_threads.run_pipeline(llvm.create_pass_builder(tm, pto), mod)
        return mod

    def optimized_ir(self, llvm_ir: str) -> str:
        """The IR after O3 (``asm["llvm-opt"]``; tests check it for vector ops)."""
        return str(self.optimize(llvm_ir))

    def check_binary(self, binary: bytes, link: bool = False) -> None:
        probe_link(binary) if link else check_object(binary)

    def compile(self, llvm_ir: str, kernel_names: Sequence[str] = ()) -> bytes:
        mod = self.optimize(llvm_ir, ",".join(kernel_names) or "module")
        return llvm_threads.emit_object(self.target_machine, mod)

    def assembly(self, llvm_ir: str) -> str:
        """Host assembly of the optimised module (``device_image.asm`` for native CPU)."""
        return self.target_machine.emit_assembly(self.optimize(llvm_ir))
