"""The host CPU as a code-generation target (triple, CPU name and features from LLVM).

>>> native_cpu_target().binary_format
'object'
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from ..base import AddressSpace, Target
from ..host_jit import host_target_machine
from ..host_jit import init_llvm as _init_llvm

# One flat address space on the host: local memory is an arena in ordinary memory.
_ADDRESS_SPACES = {s: 0 for s in AddressSpace}


@functools.lru_cache(maxsize=None)
def cpu_target_machine(cpu: str, features: str) -> llvm.TargetMachine:
    """A TargetMachine for another CPU of this architecture (ahead-of-time images that
    must run on CPUs other than this one)."""
    if cpu == llvm.get_host_cpu_name() and features == llvm.get_host_cpu_features().flatten():
        return host_target_machine()
    return new_target_machine(cpu, features)


def new_target_machine(cpu: str, features: str) -> llvm.TargetMachine:
    """A TargetMachine of its own (code generation on one TargetMachine is not
    re-entrant: each compiling thread takes one)."""
    _init_llvm()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default")


#: The x86-64 micro-architecture levels (the System V psABI's): a generic CPU an
#: image can be compiled for, and the CPU features each one needs (cumulative).
X86_64_LEVELS = {
    "x86-64": ("cx8", "fxsr", "sse", "sse2"),
    "x86-64-v2": ("cx16", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3", "sahf"),
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}


def cpu_level_features(cpu: str) -> tuple[str, ...]:
    """The features a generic level needs (with the lower levels'); ``()`` for a CPU
    that is not a level.

    >>> "avx2" in cpu_level_features("x86-64-v3"), "avx2" in cpu_level_features("x86-64-v2")
    (True, False)
    """
    out: list[str] = []
    for level, feats in X86_64_LEVELS.items():
        out += feats
        if level == cpu:
            return tuple(out)
    return ()


def target_for_name(name: str) -> Target | None:
    """``native_cpu`` (this machine's CPU) or ``native_cpu-<level>`` for a generic
    x86-64 level, e.g. ``native_cpu-x86-64-v2`` (ahead-of-time images for other CPUs)."""
    if name == "native_cpu":
        return native_cpu_target()
    prefix = "native_cpu-"
    if not name.startswith(prefix) or name[len(prefix):] not in X86_64_LEVELS:
        return None
    cpu = name[len(prefix):]
    tm = cpu_target_machine(cpu, "")
    return Target(name=name, backend="native_cpu", triple=llvm.get_process_triple(),
                  data_layout=str(tm.target_data), binary_format="object",
                  address_spaces=dict(_ADDRESS_SPACES), cpu=cpu, features="",
                  native_spec_constants=False, sub_group_sizes=(1,))


def required_features(target: Target) -> tuple[str, ...]:
    """The CPU features code made for ``target`` may use: its level's, or the ``+``
    entries of its feature string (the host's full list for ``native_cpu``)."""
    plus = [f[1:] for f in target.features.split(",") if f.startswith("+")]
    return tuple(sorted(set(cpu_level_features(target.cpu)) | set(plus)))


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
