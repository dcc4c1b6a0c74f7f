"""The NVPTX target (``nvptx64-nvidia-cuda``) and the IR conventions the CUDA slice expects.

Conventions codegen follows for CUDA (checked by tests/backends/cuda/test_ptx.py):

* **Kernels** are ``define ptx_kernel void @name(...)``; every other function is a device
  function, internalised by :class:`~pysycl.backends.cuda.compiler.PtxCompiler`.
  Launch bounds are function attributes (``"nvvm.reqntid"="x,y,z"``, ``"nvvm.maxntid"``,
  ``"nvvm.minctasm"``, ``"nvvm.maxnreg"``), see :class:`LaunchBounds`; LLVM 22 still
  auto-upgrades the old ``!nvvm.annotations`` form, which :class:`LaunchBounds` can also emit.
* **Dimensions**: SYCL's rightmost dimension varies fastest (SYCL 2020 §3.11.1), CUDA's
  ``x`` does, so SYCL dimension ``i`` of a ``D``-dimensional range is CUDA axis
  ``"xyz"[D - 1 - i]`` (DPC++ does the same). ``get_global_id(i)`` =
  ``ctaid.A * ntid.A + tid.A`` with ``A = axis(i, D)``; the driver builds the grid the
  same way (:func:`cuda_axis`).
* **Address spaces** (:data:`ADDRESS_SPACES`): generic 0, global 1, local (CUDA shared) 3,
  private 5. SYCL *constant* space maps to **1**, not to NVPTX's ``.const`` (4): constant
  accessors and ``constant_ptr`` point into ordinary ``cuMemAlloc`` memory, and an
  ``ld.const`` through a global address reads garbage. Codegen may still place its own
  read-only tables in addrspace(4). Private variables may be ``alloca ..., addrspace(5)``
  (cast to 0 before passing them as generic pointers) or plain ``alloca`` in 0.
* **Work-group local memory**: static ``local`` objects are
  ``internal addrspace(3) global [N x T] undef``. ``local_accessor`` arguments have no
  pointer on CUDA: the kernel parameter is an ``i32`` byte offset into the one dynamic
  shared buffer ``@__pysycl_local_mem = external addrspace(3) global [0 x i8], align 16``
  and the accessor's pointer is ``getelementptr i8, ptr addrspace(3) @__pysycl_local_mem,
  i32 %offset``. The driver lays the buffer out as: ``local_mem_bytes`` of kernel scratch
  at offset 0, then each ``local`` argument in order, every start aligned to
  :data:`LOCAL_ARG_ALIGN`; it passes the total as the launch's dynamic shared size.
* **Arguments**: scalars by value; ``mem`` arguments are ``ptr addrspace(1)`` (64-bit);
  struct/array values as ``ptr byval(%T) align N`` (NVPTX turns that into a ``.param``
  byte array the driver fills from the ``bytes`` value); local offsets ``i32``. The
  spec-constant buffer is the implicit last ``ptr addrspace(1)`` parameter.
* **Builtins**: ``llvm.nvvm.read.ptx.sreg.{tid,ntid,ctaid,nctaid}.{x,y,z}``, barriers
  ``llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)``, math through libdevice ``__nv_*``
  declarations (linked by the compiler), atomics as ``atomicrmw`` on addrspace(1)/(3).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from ..base import AddressSpace, Target

TRIPLE = "nvptx64-nvidia-cuda"
# What LLVM 22's NVPTX TargetMachine reports for nvptx64 (its target data layout).
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

ADDRESS_SPACES = {
    AddressSpace.generic: 0,
    AddressSpace.global_: 1,
    AddressSpace.local: 3,
    AddressSpace.constant: 1,   # see module docstring: host data lives in global memory
    AddressSpace.private: 5,
}

LOCAL_MEMORY_SYMBOL = "__pysycl_local_mem"
LOCAL_ARG_ALIGN = 16          # widest SYCL scalar/vector element (double2, int4)

# Processors LLVM 22's NVPTX backend knows; it silently falls back to a generic
# PTX 3.2 target for names it does not know, which no current driver loads.
_LLVM_SM = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103,
            110, 120, 121)


def sm_for(compute_capability: tuple[int, int]) -> str:
    """The ``sm_XX`` to generate for a device: its own, or the newest older one LLVM
    knows (the driver JIT-compiles PTX forward to newer GPUs).

    >>> sm_for((9, 0))
    'sm_90'
    """
    major, minor = compute_capability
    cc = major * 10 + minor
    known = [sm for sm in _LLVM_SM if sm <= cc]
    return f"sm_{known[-1] if known else _LLVM_SM[0]}"


def cuda_target(compute_capability: tuple[int, int] = (9, 0), features: str = "") -> Target:
    """The frozen :class:`Target` for a GPU of this compute capability.

    >>> cuda_target((9, 0)).name
    'nvptx64-sm_90'
    """
    sm = sm_for(compute_capability)
    return Target(name=f"nvptx64-{sm}", backend="cuda", triple=TRIPLE,
                  data_layout=DATA_LAYOUT, binary_format="ptx",
                  address_spaces=dict(ADDRESS_SPACES), cpu=sm, features=features,
                  native_spec_constants=False, sub_group_sizes=(32,),
                  accumulating_reductions=True)   # the warp


def cuda_axis(dim: int, ndims: int) -> int:
    """CUDA axis (0=x, 1=y, 2=z) of SYCL dimension ``dim`` in an ``ndims`` range.

    >>> [cuda_axis(i, 2) for i in range(2)]
    [1, 0]
    """
    return ndims - 1 - dim


@dataclasses.dataclass(frozen=True)
class LaunchBounds:
    """Kernel properties that become PTX launch bounds, in **SYCL** dimension order.

    ``reqd_work_group_size`` -> ``.reqntid``; ``max_work_group_size`` -> ``.maxntid``;
    ``min_work_groups_per_cu`` -> ``.minnctapersm``; ``max_registers`` -> ``.maxnreg``.

    >>> LaunchBounds(reqd_work_group_size=(2, 32)).function_attributes()
    '"nvvm.reqntid"="32,2"'
    """

    reqd_work_group_size: Sequence[int] | None = None
    max_work_group_size: Sequence[int] | None = None
    min_work_groups_per_cu: int | None = None
    max_registers: int | None = None

    @staticmethod
    def _xyz(sizes: Sequence[int]) -> list[int]:
        return [int(s) for s in reversed(tuple(sizes))]

    def _items(self) -> list[tuple[str, list[int]]]:
        items = []
        if self.reqd_work_group_size:
            items.append(("reqntid", self._xyz(self.reqd_work_group_size)))
        if self.max_work_group_size:
            items.append(("maxntid", self._xyz(self.max_work_group_size)))
        if self.min_work_groups_per_cu:
            items.append(("minctasm", [int(self.min_work_groups_per_cu)]))
        if self.max_registers:
            items.append(("maxnreg", [int(self.max_registers)]))
        return items

    def function_attributes(self) -> str:
        """The string attributes to put in the kernel's ``attributes #N = { ... }`` group
        (the form LLVM 21+ reads natively)."""
        return " ".join(f'"nvvm.{key}"="{",".join(map(str, vals))}"'
                        for key, vals in self._items())

    def nvvm_annotations(self, kernel_name: str) -> list[str]:
        """Legacy ``!nvvm.annotations`` operands (``!{ptr @k, !"reqntidx", i32 32, ...}``),
        one per line, for IR that must also read with older LLVMs. The caller numbers the
        metadata nodes and lists them in ``!nvvm.annotations = !{...}``."""
        lines = []
        for key, vals in self._items():
            if key in ("reqntid", "maxntid"):
                ops = ", ".join(f'!"{key}{axis}", i32 {v}' for axis, v in zip("xyz", vals))
            else:
                ops = f'!"{key}", i32 {vals[0]}'
            lines.append(f"!{{ptr @{kernel_name}, {ops}}}")
        return lines


def target_for_name(name: str) -> Target | None:
    """The target called ``name`` (``"nvptx64-sm_90"``), for ``registry.get_target``.

    >>> target_for_name("nvptx64-sm_120").cpu
    'sm_120'
    """
    prefix = f"{TRIPLE.split('-')[0]}-sm_"
    if not name.startswith(prefix) or not name[len(prefix):].isdigit():
        return None
    sm = int(name[len(prefix):])
    return cuda_target((sm // 10, sm % 10))


_PTX_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def ptx_symbol(kernel_name: str) -> str:
    """The PTX ``.entry`` name of a kernel: PTX identifiers are ``[A-Za-z0-9_$]``.
    NVPTX aborts the process ("Symbol name with unsupported characters") on names such
    as ``f.<locals>.k``, and it emits ``.entry mod.k`` as is, which the driver loads but
    then runs as a kernel that writes nothing (seen on an H200, driver 580: every
    ``module.kernel`` name failed, ``kernel`` names worked). Other characters become
    ``_`` plus a hash of the full name, so distinct kernels stay distinct. Codegen, the
    compiler's checks and the driver's lookup all go through this one function.

    >>> ptx_symbol("vadd"), ptx_symbol("app.vadd")[:9], ptx_symbol("t.<locals>.k")[:12]
    ('vadd', 'app_vadd_', 't__locals__k')
    """
    if all(c in _PTX_NAME_CHARS for c in kernel_name) and not kernel_name[:1].isdigit():
        return kernel_name
    import hashlib
    clean = "".join(c if c in _PTX_NAME_CHARS else "_" for c in kernel_name)
    return f"{clean}_{hashlib.sha256(kernel_name.encode()).hexdigest()[:8]}"
