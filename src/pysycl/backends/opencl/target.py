"""The SPIR-V code-generation target of the OpenCL backend.

>>> from pysycl.backends.opencl.target import SPIRV64, spirv_target
>>> SPIRV64.triple, spirv_target((1, 2)).triple
('spirv64-unknown-unknown', 'spirv64v1.2-unknown-unknown')
"""
from __future__ import annotations

import re
from types import MappingProxyType

from pysycl.backends.base import AddressSpace, Target

# What LLVM 22's SPIR-V TargetMachine reports for spirv64 (and what clang uses for
# spirv64): the notes' layout plus the native integer widths ``n8:16:32:64``. Using the
# TM's own string keeps the module and the backend in agreement.
DATA_LAYOUT = ("e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256"
               "-v512:512-v1024:1024-n8:16:32:64-G1")

# The OpenCL flavour of SPIR-V (SPIR-V environment spec, "OpenCL address spaces"),
# which is also what the LLVM SPIR-V backend maps: 0 Function, 1 CrossWorkgroup,
# 2 UniformConstant, 3 Workgroup, 4 Generic.
ADDRESS_SPACES = MappingProxyType({
    AddressSpace.private: 0,
    AddressSpace.global_: 1,
    AddressSpace.constant: 2,
    AddressSpace.local: 3,
    AddressSpace.generic: 4,
})

# LLVM emits SPIR-V 1.4 for a triple with no version; Intel's CPU runtime accepts 1.0-1.4.
DEFAULT_VERSION = (1, 4)
# The highest version LLVM 22's triple parser knows (spirv64v1.6).
MAX_VERSION = (1, 6)


def spirv_target(version: tuple[int, int] = DEFAULT_VERSION) -> Target:
    """The SPIR-V target emitting ``version`` (``(1, 4)`` uses the plain triple, so
    the cache key of the common case does not change with this function)."""
    version = min(tuple(version), MAX_VERSION)
    sub = "" if version == DEFAULT_VERSION else f"v{version[0]}.{version[1]}"
    name = "spirv64" if not sub else f"spirv64{sub}"
    return Target(
        name=name,
        backend="opencl",
        triple=f"spirv64{sub}-unknown-unknown",
        data_layout=DATA_LAYOUT,
        binary_format="spirv",
        address_spaces=ADDRESS_SPACES,
        native_spec_constants=True,
    )


def il_versions(il_version: str) -> list[tuple[int, int]]:
    """``"SPIR-V_1.0 SPIR-V_1.4"`` (``CL_DEVICE_IL_VERSION``) -> ``[(1, 0), (1, 4)]``."""
    return sorted({(int(a), int(b)) for a, b in re.findall(r"SPIR-V_(\d+)\.(\d+)", il_version)})


def target_for_il_version(il_version: str) -> Target | None:
    """The target for a device: the default version if the device takes it, else the
    highest version it lists; None when the device takes no SPIR-V at all."""
    versions = il_versions(il_version)
    if not versions:
        return None
    if DEFAULT_VERSION in versions:
        return SPIRV64
    below = [v for v in versions if v <= MAX_VERSION]
    return spirv_target(max(below)) if below else None


SPIRV64 = spirv_target()


def target_for_name(name: str) -> Target | None:
    """``"spirv64"`` or ``"spirv64v1.2"`` -> its Target (what ``registry.get_target`` asks)."""
    if name == SPIRV64.name:
        return SPIRV64
    m = re.fullmatch(r"spirv64v(\d+)\.(\d+)", name)
    return spirv_target((int(m.group(1)), int(m.group(2)))) if m else None
