"""The host CPU as a code-generation target (triple, CPU name and features from LLVM).

>>> native_cpu_target().binary_format
'object'
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from ..base import AddressSpace, Target

# One flat address space on the host: local memory is an arena in ordinary memory.
_ADDRESS_SPACES = {s: 0 for s in AddressSpace}


@functools.lru_cache(maxsize=None)
def _init_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.lru_cache(maxsize=None)
def host_target_machine() -> llvm.TargetMachine:
    """The host TargetMachine (host CPU and features, PIC). Host TMs may be reused across
    modules, unlike SPIR-V ones (llvm-backends.md 0.1)."""
    _init_llvm()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, reloc="pic", codemodel="default")


@functools.lru_cache(maxsize=None)
def native_cpu_target() -> Target:
    """The frozen :class:`Target` of this machine; part of every cache key (the object is
    CPU-specific, so the CPU name and features are in it)."""
    tm = host_target_machine()
    return Target(name="native_cpu", backend="native_cpu", triple=llvm.get_process_triple(),
                  data_layout=str(tm.target_data), binary_format="object",
                  address_spaces=dict(_ADDRESS_SPACES), cpu=llvm.get_host_cpu_name(),
                  features=llvm.get_host_cpu_features().flatten(), native_spec_constants=False,
                  sub_group_sizes=(1,))


def entry_symbol(kernel_name: str) -> str:
    """The exported symbol the executor calls for ``kernel_name``, with the C signature
    ``void(void **args, const int64_t *launch, int64_t group_begin, int64_t group_end,
    char *local_mem)`` (see ``lowering.py``).

    >>> entry_symbol("vadd")
    '__pysycl_entry_vadd'
    """
    return f"__pysycl_entry_{kernel_name}"


#: Layout of the ``launch`` array the entry reads (int64[LAUNCH_WORDS]).
LAUNCH_DIMS, LAUNCH_GLOBAL, LAUNCH_LOCAL, LAUNCH_GROUPS, LAUNCH_OFFSET = 0, 1, 4, 7, 10
LAUNCH_WORDS = 16
