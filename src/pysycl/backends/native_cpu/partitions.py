"""Splitting the native CPU device into sub-devices (SYCL 2020 4.6.4.2).

A native CPU device (root or sub-device) owns a tuple of cores; its compute units are
those cores. A partition splits them into groups, one per sub-device:

* ``partition_equally(n)``: as many groups of ``n`` consecutive cores as fit; the rest
  belong to no sub-device.
* ``partition_by_counts([a, b, ...])``: groups of ``a``, ``b``, ... cores in order.

The runtime has checked the values' types (a positive count; positive counts).
* ``partition_by_affinity_domain(domain)``: the cores that share a NUMA node or a
  cache level (read from Linux's ``/sys`` topology); ``next_partitionable`` takes the
  first of NUMA, L4, L3, L2, L1 that splits the cores in more than one group.

Errors follow the specification: a size or count that does not fit is
``errc.invalid``; a domain this machine does not describe is
``errc.feature_not_supported``.

>>> split((0, 1, 2, 3, 4), "partition_equally", 2)
[(0, 1), (2, 3)]
>>> split((0, 1, 2, 3), "partition_by_counts", [3, 1])
[(0, 1, 2), (3,)]
"""
from __future__ import annotations

import glob
import os
from typing import Sequence

from ...errors import errc, exception

_SYS_CPU = "/sys/devices/system/cpu"
_SYS_NODE = "/sys/devices/system/node"
# next_partitionable tries the domains in the specification's order.
DOMAIN_ORDER = ("numa", "L4_cache", "L3_cache", "L2_cache", "L1_cache")
PROPERTIES = ("partition_equally", "partition_by_counts", "partition_by_affinity_domain")


def parse_cpu_list(text: str) -> set[int]:
    """Linux's cpu list syntax: ``"0-3,8,10-11"``.

    >>> sorted(parse_cpu_list("0-2,5"))
    [0, 1, 2, 5]
    """
    cores: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cores.update(range(int(lo), int(hi or lo) + 1))
    return cores


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _numa_groups() -> list[set[int]]:
    groups = []
    for path in sorted(glob.glob(os.path.join(_SYS_NODE, "node[0-9]*", "cpulist"))):
        text = _read(path)
        if text:
            groups.append(parse_cpu_list(text))
    return groups


def _cache_groups(level: int) -> list[set[int]]:
    """Sets of cores sharing one cache of ``level`` (data or unified caches)."""
    seen: list[set[int]] = []
    for index in glob.glob(os.path.join(_SYS_CPU, "cpu[0-9]*", "cache", "index[0-9]*")):
        if _read(os.path.join(index, "level")) != str(level):
            continue
        if _read(os.path.join(index, "type")) == "Instruction":
            continue
        shared = _read(os.path.join(index, "shared_cpu_list"))
        if shared:
            cores = parse_cpu_list(shared)
            if cores not in seen:
                seen.append(cores)
    return seen


def domain_groups(domain: str) -> list[set[int]]:
    """The machine's sets of cores of ``domain`` ("numa", "L1_cache", ...); empty when
    the machine does not describe that domain."""
    if domain == "numa":
        return _numa_groups()
    if domain.endswith("_cache") and domain[1:2].isdigit():
        return _cache_groups(int(domain[1]))
    return []


def _split_domain(cores: Sequence[int], domain: str) -> list[tuple[int, ...]]:
    out = []
    for group in domain_groups(domain):
        mine = tuple(c for c in cores if c in group)
        if mine:
            out.append(mine)
    return out


def supported_domains(cores: Sequence[int]) -> list[str]:
    """The affinity domains along which ``cores`` split in more than one group, then
    ``next_partitionable`` when there is any."""
    found = [d for d in DOMAIN_ORDER if len(_split_domain(cores, d)) > 1]
    return found + ["next_partitionable"] if found else []


def split(cores: Sequence[int], prop: str, value) -> list[tuple[int, ...]]:
    """The core groups of a partition of ``cores`` (see the module docstring)."""
    cores = tuple(cores)
    if prop == "partition_equally":
        size = value
        if size > len(cores):
            raise exception(errc.invalid, f"partition_equally({size}): a sub-device needs 1 "
                            f"to {len(cores)} compute units on this device")
        return [cores[i:i + size] for i in range(0, len(cores) - size + 1, size)]
    if prop == "partition_by_counts":
        counts = list(value)
        if sum(counts) > len(cores):
            raise exception(errc.invalid, f"partition_by_counts({counts}): the counts add "
                            f"up to more than the {len(cores)} compute units of the device")
        starts = [sum(counts[:i]) for i in range(len(counts))]
        return [cores[s:s + c] for s, c in zip(starts, counts)]
    if prop == "partition_by_affinity_domain":
        return _split_affinity(cores, str(value))
    raise exception(errc.feature_not_supported,
                    f"the native CPU device cannot be partitioned by {prop}")


def _split_affinity(cores: tuple[int, ...], domain: str) -> list[tuple[int, ...]]:
    supported = supported_domains(cores)
    if domain not in supported:
        raise exception(errc.feature_not_supported, f"this device cannot be partitioned by "
                        f"affinity domain {domain} (it can by: "
                        f"{', '.join(supported) or 'none'})")
    if domain == "next_partitionable":
        domain = supported[0]
    return _split_domain(cores, domain)
