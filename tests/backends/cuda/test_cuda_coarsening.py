"""``PYSYCL_COARSEN=auto`` on CUDA, no GPU needed: the natural one-pixel-per-work-item
3x3 convolution of ``benchmarks/gpu.py`` is built four rows per thread, and the PTX of
its interior loads each input value once for the four rows (18 loads, as the kernel
coarsened by hand), the image telling the launcher so."""
from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from pysycl.backends.cuda.target import cuda_target
from pysycl.bundle.aot import TargetOnly
from pysycl.bundle.coarsening import COARSENING_SET
from pysycl.bundle.executables import build_executable
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks import gpu  # noqa: E402

SM90 = TargetOnly(cuda_target((9, 0)))


def _build(kernel, setting, monkeypatch):
    monkeypatch.setenv("PYSYCL_COARSEN", setting)
    lk = default_linked_kernel(get_kernel_id(kernel))
    coeff = np.random.default_rng().uniform(0.5, 2, (3, 3)).astype(np.float32)
    img = build_executable(lk, [SM90], "literal", {gpu.coeff_id.unique_id: coeff.tobytes()})
    return lk.name, img


def _blocks(ptx: str) -> list[str]:
    """The PTX's straight-line pieces (split at labels and branches)."""
    return re.split(r"\n\$L__\w+:|\n\s*@?%?\w*\s*bra", ptx)


def _accesses(text: str) -> tuple[int, int]:
    return len(re.findall(r"\bld\.global", text)), len(re.findall(r"\bst\.global", text))


def test_auto_coarsens_the_benchmark_convolution(monkeypatch, libdevice):
    name, img = _build(gpu.conv3x3_literal, "auto", monkeypatch)
    assert img.property_sets[COARSENING_SET] == {name: struct.pack("<II", 0, 4)}
    assert "coarsen.extent" in img.asm["llvm"]
    ptx = img.asm["ptx"]
    # The interior: four outputs from six input rows of three values, no branch (LLVM
    # may share the last store with the code for the edges).
    assert max(_accesses(b)[0] for b in _blocks(ptx)) == 18
    _, hand = _build(gpu.conv3x3_literal_rows4, "auto", monkeypatch)
    assert COARSENING_SET not in hand.property_sets       # already four rows by hand
    assert _accesses(hand.asm["ptx"]) == (18, 4)


@pytest.mark.parametrize("setting", ["off", "2"])
def test_off_and_forced_factor(monkeypatch, libdevice, setting):
    name, img = _build(gpu.conv3x3_literal, setting, monkeypatch)
    if setting == "off":
        assert COARSENING_SET not in img.property_sets
        assert _accesses(img.asm["ptx"]) == (9, 1)
    else:
        assert img.property_sets[COARSENING_SET] == {name: struct.pack("<II", 0, 2)}
        assert max(_accesses(b)[0] for b in _blocks(img.asm["ptx"])) == 12


def _loads_under_each_branch(ptx: str) -> list[int]:
    """For each forward branch, the ``ld.global`` between it and its target label."""
    lines = ptx.splitlines()
    labels = {line.strip()[:-1]: i for i, line in enumerate(lines)
              if re.fullmatch(r"\$L__\w+:", line.strip())}
    out = []
    for i, line in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__\w+);", line)
        if m and labels.get(m.group(1), -1) > i:
            out.append(sum(bool(re.search(r"\bld\.global", x))
                           for x in lines[i:labels[m.group(1)]]))
    return out


def test_one_pixel_kernel_guards_each_load_on_its_own(monkeypatch, libdevice):
    """The row and column checks of the one-pixel convolution are one condition per load
    (passes/flatten_guards.py): no branch skips a whole row of loads, so ptxas predicates
    all nine in one region and issues them together."""
    _, img = _build(gpu.conv3x3_literal, "off", monkeypatch)
    skipped = _loads_under_each_branch(img.asm["ptx"])
    assert len(skipped) >= 8 and max(skipped) == 1


def test_auto_leaves_kernels_without_reuse(monkeypatch, libdevice):
    _, img = _build(gpu.saxpy, "auto", monkeypatch)
    assert COARSENING_SET not in img.property_sets


def _reduction(setting, monkeypatch):
    monkeypatch.setenv("PYSYCL_COARSEN", setting)
    lk = default_linked_kernel(get_kernel_id(gpu.reduction_sum))
    return lk.name, build_executable(lk, [SM90], "literal", {})


def test_auto_coarsens_the_benchmark_reduction(monkeypatch, libdevice):
    """``total += x[i]`` over a range: each thread combines 32 elements into its one
    accumulator, then one work-group reduction, one atomic add and one counter increment
    per work-group: 32 times fewer work-groups and same-address atomics."""
    name, img = _reduction("auto", monkeypatch)
    assert img.property_sets[COARSENING_SET] == {name: struct.pack("<II", 0, 32)}
    ptx = img.asm["ptx"]
    atomics = [m.start() for m in re.finditer(r"\b(atom|red)\.global", ptx)]
    loads = [m.start() for m in re.finditer(r"\bld\.global", ptx)]
    # Every element is loaded before the work-group's atomics; after them only the last
    # work-group reads (the accumulator and the result's old value).
    assert len(atomics) == 2 and sum(at > atomics[0] for at in loads) == 2
    assert re.search(r"\b(atom|red)\.global\S*\.add\.f32", ptx)   # into the accumulator
    # All 32 elements inside the range: their loads in one straight line (LLVM may
    # share the last one with the edge's code); at the edge each is guarded.
    assert max(_accesses(b)[0] for b in _blocks(ptx)) >= 31
    assert len(loads) - 2 in (63, 64)
    # The copies are ceil(n / 32) elements apart, so a warp's loads stay consecutive:
    # the 32 addresses step by a multiple of that stride, not by 4 bytes.
    assert not re.search(r"ld\.global\.b32\s+%r\d+, \[%rd\d+\+4\]", ptx)
    _, off = _reduction("off", monkeypatch)
    assert COARSENING_SET not in off.property_sets
    assert _accesses(off.asm["ptx"])[0] == 1 + 2   # its element; the last group's two
    assert len(re.findall(r"\b(atom|red)\.global", off.asm["ptx"])) == 2
