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
from .target import host_target_machine, native_cpu_target

# One TargetMachine for the process: host TMs are reusable (llvm-backends.md section 0),
# but LLVM code generation on one TM is not re-entrant, so emission is serialised.
_EMIT_LOCK = threading.Lock()


class NativeCpuCompiler(Compiler):
    """O3 + host object emission. ``slp``: also run the SLP vectoriser (off by default in
    llvmlite's tuning options; it packs the straight-line 3x3 stencil arithmetic)."""

    def __init__(self, target: Target | None = None, slp: bool = True, speed_level: int = 3):
        self.target = target or native_cpu_target()
        self.slp = slp
        self.speed_level = speed_level

    def optimize(self, llvm_ir: str, name: str = "module") -> llvm.ModuleRef:
        """Parse, verify and optimise; raises ``exception(errc.build)`` with LLVM's message."""
        tm = host_target_machine()
        try:
            mod = llvm.parse_assembly(llvm_ir)
            mod.triple = self.target.triple
            mod.data_layout = str(tm.target_data)
            mod.verify()
        except RuntimeError as e:
            raise exception(errc.build, f"LLVM rejected the IR of {name!r}: {e}") from None
        pto = llvm.create_pipeline_tuning_options(speed_level=self.speed_level)
        pto.loop_vectorization = True
        pto.slp_vectorization = self.slp
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return mod

    def optimized_ir(self, llvm_ir: str) -> str:
        """The IR after O3 (``asm["llvm-opt"]``; tests check it for vector ops)."""
        return str(self.optimize(llvm_ir))

    def compile(self, llvm_ir: str, kernel_names: Sequence[str] = ()) -> bytes:
        mod = self.optimize(llvm_ir, ",".join(kernel_names) or "module")
        with _EMIT_LOCK:
            return bytes(host_target_machine().emit_object(mod))

    def assembly(self, llvm_ir: str) -> str:
        """Host assembly of the optimised module (``device_image.asm`` for native CPU)."""
        mod = self.optimize(llvm_ir)
        with _EMIT_LOCK:
            return host_target_machine().emit_assembly(mod)
