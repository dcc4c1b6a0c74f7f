"""Fuzz bundle files: mutate real saved bundles, load and run each one in a worker process.

    python benchmarks/fuzz_syclbin.py [--cases N] [--seed S] [--jobs J] [--out DIR]
    python -m benchmarks.stress fuzz --cases N

Seeds are real files: the kernels of ``fuzz_kernels.py`` saved by ``sycl.save_kernel_bundle``
in every state (input, object, executable with literal and with emulated spec constants),
``pysycl compile`` output for ``native_cpu`` and ``spirv64``, and the same SPIR-V in the
layouts DPC++'s writers use (no pysycl sets, no checksum). Each case applies one to three
structure-aware mutations to a seed: property values (random bytes, wrong lengths,
non-UTF-8, the other value type, edge integers), property sets and keys (deleted, added,
renamed), the ELF object of a native image (header, section header, symbol and
relocation fields set to edge values; code and string bytes changed), pysycl IR text
(bytes, lines, numbers, names), SPIR-V words, image metadata, the file's structure
(modules dropped, doubled, reordered, images moved, state changed, IR or signature
removed) and raw bytes; the file is written again with its checksum recomputed (as
anyone can), except for some raw-byte cases.

A worker process loads each case with ``sycl.load_kernel_bundle``, builds or links it
to an executable bundle when it is not one, launches every kernel it holds and compares
each result with NumPy (expected values come from the bundle's own spec-constant
values). One case in eight is a "trusted code" case: the IR and signature are removed,
the ELF object mutated, and the worker loads it with ``PYSYCL_TRUST_BUNDLE_CODE=1`` and
JIT-links it without launching (a trusted file's code runs as it is, so running
mutated code proves nothing; linking it must never kill the process).

Each case ends as one of: ``refused`` (a ``sycl.exception``; counted by ``errc``),
``ran`` (every kernel right), ``loaded`` (a trusted-code case linked), ``empty``
(nothing to run: no image for this device), ``wrong`` (a result that disagrees with
the file), ``unclean`` (another exception: a failure), ``death`` (the worker was killed
by a signal or exited: a failure), ``hang`` (no answer in ``--timeout`` seconds: a
failure). Failing cases are written to ``--out`` with their reason. A worker that dies
or hangs is replaced; workers are also replaced every ``--recycle`` cases.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import importlib.util
import json
import os
import random
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_U32 = struct.Struct("<I")
FAILURES = ("unclean", "death", "hang")


# -- messages between the parent and a worker (length-prefixed fields) --------------------

def _send(stream, fields: list[bytes]) -> None:
    parts = [_U32.pack(len(fields))]
    for f in fields:
        parts += [_U32.pack(len(f)), f]
    stream.write(b"".join(parts))
    stream.flush()


def _read_exact(stream, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError
    return data


def _receive(stream) -> list[bytes]:
    (count,) = _U32.unpack(_read_exact(stream, 4))
    return [_read_exact(stream, _U32.unpack(_read_exact(stream, 4))[0]) for _ in range(count)]


# -- seeds ----------------------------------------------------------------------------------

def _dpcpp_writers():
    """DPC++'s SYCLBIN writers as the tests model them (tests/unit/bundle), if present."""
    path = ROOT / "tests" / "unit" / "bundle" / "dpcpp_syclbin.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("_fuzz_dpcpp_syclbin", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_seeds(workdir: Path) -> dict[str, bytes]:
    """Real bundle files of ``fuzz_kernels`` (see module doc)."""
    import numpy as np

    import pysycl as sycl
    from pysycl.bundle import aot, syclbin
    from pysycl.bundle.property_sets import PropertySetRegistry

    from benchmarks import fuzz_kernels as K
    dev = [d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0]
    ctx = sycl.queue(dev).get_context()
    kids = [sycl.get_kernel_id(k) for k in K.KERNELS]
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel_ids=kids)
    inp.set_specialization_constant(K.fz_scale_id, np.float32(1.5))
    inp.set_specialization_constant(K.fz_shift_id, np.int32(-7))
    inp.set_specialization_constant(K.fz_step_id, np.int64(12345))
    emulated = sycl.properties(sycl.spec_constant_lowering("emulated"))
    bundles = {"input": inp, "object": sycl.compile(inp), "executable": sycl.build(inp),
               "emulated": sycl.build(inp, properties=emulated)}
    seeds = {}
    for name, kb in bundles.items():
        path = workdir / f"{name}.syclbin"
        sycl.save_kernel_bundle(kb, path)
        seeds[name] = path.read_bytes()
    try:
        aot_kb = aot.compile_modules([K.__name__], ["native_cpu", "spirv64"], "executable")
    except sycl.exception:   # no SPIR-V code generator here: native code only
        aot_kb = aot.compile_modules([K.__name__], ["native_cpu"], "executable")
    path = workdir / "aot.syclbin"
    sycl.save_kernel_bundle(aot_kb, path)
    seeds["aot"] = path.read_bytes()
    # DPC++'s layouts: SPIR-V IR modules and SYCL sets only, no checksum.
    f = syclbin.read_syclbin(seeds["aot"])
    modules = []
    for am in f.abstract_modules:
        spirv = [ir for ir in am.ir_modules if ir.ir_type == syclbin.IR_TYPE_SPIRV]
        if spirv:
            sets = {k: v for k, v in am.property_sets.items() if not k.startswith("PYSYCL/")}
            modules.append(syclbin.AbstractModule(PropertySetRegistry(sets), spirv, []))
    if modules:
        dpcpp = syclbin.SyclbinFile(syclbin.SyclbinState.executable, modules)
        seeds["dpcpp_runtime"] = syclbin.write_syclbin(dpcpp, checksum=False)
        seeds["dpcpp_sybi"] = syclbin.write_sybi(dpcpp, checksum=False)
        writers = _dpcpp_writers()
        if writers is not None:
            mods = [{"metadata": {k: dict(v) for k, v in am.property_sets.items()},
                     "ir": [(ir.data, ir.target or "spir64-unknown-unknown")
                            for ir in am.ir_modules]} for am in modules]
            seeds["dpcpp_v2"] = writers.write_v2(2, mods)
    return seeds


# -- mutations ------------------------------------------------------------------------------

_EDGE = (0, 1, 2, 3, 7, 8, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
         0xFFFFFFFF, 1 << 32, 1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


def _edge_value(rng: random.Random, current: int, bits: int) -> int:
    mask = (1 << bits) - 1
    pick = rng.randrange(6)
    if pick == 0:
        return rng.choice(_EDGE) & mask
    if pick == 1:
        return (current + rng.choice((-1, 1, -8, 8, 16, -16, 64))) & mask
    if pick == 2:
        return current ^ (1 << rng.randrange(bits))
    if pick == 3:
        return rng.getrandbits(bits)
    if pick == 4:
        return (current * rng.choice((2, 16, 256))) & mask
    return rng.randrange(64)


def _bytes_mutation(rng: random.Random, data: bytes, count: int = 0) -> bytes:
    out = bytearray(data)
    for _ in range(count or rng.randint(1, 4)):
        if not out:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            continue
        pos = rng.randrange(len(out))
        op = rng.randrange(6)
        if op == 0:
            out[pos] = rng.randrange(256)
        elif op == 1:
            out[pos] ^= 1 << rng.randrange(8)
        elif op == 2:
            del out[pos:pos + rng.randint(1, 16)]
        elif op == 3:
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 4:
            del out[pos:]
        elif len(out) >= 8:
            at = min(pos, len(out) - 8)
            struct.pack_into("<Q", out, at, rng.choice(_EDGE))
    return bytes(out)


def _overwrite(rng: random.Random, data: bytes) -> bytes:
    """Bytes or u64 fields changed in place (no offset in the file moves)."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(out))
        if rng.random() < 0.5 or len(out) < 8:
            out[pos] = rng.randrange(256)
        else:
            at = min(pos, len(out) - 8) & ~7
            struct.pack_into("<Q", out, at, _edge_value(rng, struct.unpack_from(
                "<Q", out, at)[0], 64))
    return bytes(out)


# ELF64 fields: (offset in header / entry, struct format, bits)
_EHDR_FIELDS = [(4, "B", 8), (5, "B", 8), (0x10, "<H", 16), (0x12, "<H", 16), (0x14, "<I", 32),
                (0x20, "<Q", 64), (0x28, "<Q", 64), (0x34, "<H", 16), (0x3A, "<H", 16),
                (0x3C, "<H", 16), (0x3E, "<H", 16)]
_SHDR_FIELDS = [(0, "<I", 32), (4, "<I", 32), (8, "<Q", 64), (24, "<Q", 64), (32, "<Q", 64),
                (40, "<I", 32), (44, "<I", 32), (48, "<Q", 64), (56, "<Q", 64)]
_SYM_FIELDS = [(0, "<I", 32), (4, "B", 8), (5, "B", 8), (6, "<H", 16), (8, "<Q", 64),
               (16, "<Q", 64)]
_RELA_FIELDS = [(0, "<Q", 64), (8, "<I", 32), (12, "<I", 32), (16, "<Q", 64)]


def _sections(b: bytes) -> list[tuple[int, int, int, int, int]]:
    """(header offset, type, file offset, size, entsize) of each section that lies in
    ``b``; [] when the header does not point at a section table inside it."""
    if len(b) < 64 or b[:4] != b"\x7fELF":
        return []
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shnum = struct.unpack_from("<H", b, 0x3C)[0]
    out = []
    for i in range(min(shnum, 256)):
        at = shoff + 64 * i
        if at + 64 > len(b):
            break
        stype, = struct.unpack_from("<I", b, at + 4)
        off, size = struct.unpack_from("<QQ", b, at + 24)
        entsize, = struct.unpack_from("<Q", b, at + 56)
        out.append((at, stype, off, size, entsize))
    return out


def _patch(rng: random.Random, b: bytearray, base: int, fields) -> None:
    off, fmt, bits = rng.choice(fields)
    at = base + off
    if at + struct.calcsize(fmt) > len(b):
        return
    current = struct.unpack_from(fmt, b, at)[0]
    struct.pack_into(fmt, b, at, _edge_value(rng, current, bits))


def mutate_elf(rng: random.Random, data: bytes) -> bytes:
    """One structure-aware change to an ELF object (falls back to byte changes)."""
    b = bytearray(data)
    secs = _sections(b)
    if not secs:
        return _bytes_mutation(rng, data)
    kind = rng.choices(("header", "section", "symbol", "relocation", "content", "strings",
                        "bytes"), (2, 4, 4, 4, 3, 2, 1))[0]
    if kind == "header":
        _patch(rng, b, 0, _EHDR_FIELDS)
    elif kind == "section":
        _patch(rng, b, rng.choice(secs)[0], _SHDR_FIELDS)
    elif kind in ("symbol", "relocation"):
        want = 2 if kind == "symbol" else 4
        tables = [s for s in secs if s[1] == want and s[3] >= 24 and s[2] + s[3] <= len(b)]
        if not tables:
            return _bytes_mutation(rng, data)
        _hdr, _t, off, size, _e = rng.choice(tables)
        entry = off + 24 * rng.randrange(size // 24)
        _patch(rng, b, entry, _SYM_FIELDS if kind == "symbol" else _RELA_FIELDS)
    elif kind in ("content", "strings"):
        want = (3,) if kind == "strings" else (1,)
        parts = [s for s in secs if s[1] in want and s[3] and s[2] + s[3] <= len(b)]
        if not parts:
            return _bytes_mutation(rng, data)
        _hdr, _t, off, size, _e = rng.choice(parts)
        for _ in range(rng.randint(1, 3)):
            b[off + rng.randrange(size)] = rng.randrange(256)
    else:
        return _bytes_mutation(rng, data)
    return bytes(b)


_NUMBER = re.compile(rb"-?\d+(\.\d+)?")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]*")


def mutate_text(rng: random.Random, data: bytes) -> bytes:
    """One change to a text image (pysycl IR): bytes, lines, numbers, names."""
    lines = data.split(b"\n")
    op = rng.randrange(7)
    if op == 0 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif op == 1:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif op == 2 and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op in (3, 4):
        numbers = list(_NUMBER.finditer(data))
        if numbers:
            m = rng.choice(numbers)
            new = str(rng.choice((0, 1, -1, 2, 255, 256, 65536, 2 ** 31, 2 ** 32, 2 ** 63,
                                  -2 ** 63, 10 ** 30, int(float(m.group()) + 1)))).encode()
            return data[:m.start()] + new + data[m.end():]
        return _bytes_mutation(rng, data, 1)
    elif op == 5:
        words = list(_WORD.finditer(data))
        if len(words) > 1:
            m, other = rng.choice(words), rng.choice(words)
            return data[:m.start()] + other.group() + data[m.end():]
        return _bytes_mutation(rng, data, 1)
    else:
        return _bytes_mutation(rng, data, rng.randint(1, 2))
    return b"\n".join(lines)


def _registry_sets(am) -> dict:
    return am.property_sets._sets


def _random_value(rng: random.Random, current):
    pick = rng.randrange(8)
    if pick == 0:
        return rng.choice(_EDGE) & 0xFFFFFFFF            # an integer, maybe for bytes
    if pick == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 24)))
    if pick == 2:
        return b"\xff\xfe\x80" + bytes(rng.randrange(256) for _ in range(rng.randint(0, 6)))
    if isinstance(current, bytes):
        if pick == 3:
            return current[:rng.randrange(len(current) + 1)]
        if pick == 4:
            return current + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        if pick == 5 and current:
            return _bytes_mutation(rng, current, 1)
        return bytes(len(current))
    if isinstance(current, int):
        return _edge_value(rng, current, 32)
    return b""


def mutate_properties(rng: random.Random, f) -> None:
    ams = f.abstract_modules
    if not ams:
        return
    sets = _registry_sets(rng.choice(ams))
    if not sets:
        sets["SYCL/kernel names"] = {"x": 1}
        return
    name = rng.choice(sorted(sets))
    props = sets[name]
    op = rng.randrange(10)
    if op < 6 and props:
        key = rng.choice(sorted(props))
        props[key] = _random_value(rng, props[key])
    elif op == 6 and props:
        del props[rng.choice(sorted(props))]
    elif op == 7:
        del sets[name]
    elif op == 8:
        props[rng.choice(("x", "mod.k", "fz_scale", "all", "sha256", "\u00e9", "a" * 300))] = \
            _random_value(rng, b"")
    else:
        other = rng.choice(("SYCL/kernel names", "SYCL/specialization constants",
                            "SYCL/device globals", "PYSYCL/image", "PYSYCL/spec values",
                            "SYCL/misc properties", "PYSYCL/signature"))
        sets[other] = sets.pop(name)


def mutate_images(rng: random.Random, f, elf_weight: int = 4) -> None:
    from pysycl.bundle import syclbin
    images = [(am, "native", n) for am in f.abstract_modules for n in am.native_images] + \
        [(am, "ir", ir) for am in f.abstract_modules for ir in am.ir_modules]
    if not images:
        return
    am, kind, img = rng.choice(images)
    is_ir_text = kind == "native" and img.target == syclbin.PYSYCL_IR_TARGET
    op = rng.choices(("data", "meta"), (elf_weight, 1))[0]
    if op == "meta":
        field = rng.choice(("target", "arch", "format") if kind == "native"
                           else ("ir_type", "target"))
        if field == "ir_type":
            img.ir_type = rng.choice((0, 1, 2, 0x5059, 7, 0xFFFFFFFF))
        else:
            setattr(img, field, rng.choice((None, "", "native_cpu", "spirv64", "object",
                                            "ptx", "ir", "pysycl_ir", syclbin.PYSYCL_IR_TARGET,
                                            "x86_64-unknown-linux-gnu",
                                            "spir64-unknown-unknown", "nvptx64-nvidia-cuda")))
    elif is_ir_text:
        img.data = mutate_text(rng, img.data)
    elif img.data[:4] == b"\x7fELF":
        img.data = mutate_elf(rng, img.data)
    elif img.data[:4] == b"\x03\x02\x23\x07":
        words = bytearray(img.data)
        for _ in range(rng.randint(1, 3)):
            at = 4 * rng.randrange(len(words) // 4)
            struct.pack_into("<I", words, at, _edge_value(rng, struct.unpack_from(
                "<I", words, at)[0], 32))
        img.data = bytes(words)
    else:
        img.data = _bytes_mutation(rng, img.data)


def mutate_structure(rng: random.Random, f) -> None:
    from pysycl.bundle import syclbin
    ams = f.abstract_modules
    op = rng.randrange(8)
    if op == 0 and ams:
        del ams[rng.randrange(len(ams))]
    elif op == 1 and ams:
        ams.insert(rng.randrange(len(ams) + 1), rng.choice(ams))
    elif op == 2 and len(ams) > 1:
        rng.shuffle(ams)
    elif op == 3 and len(ams) > 1:
        a, b = rng.sample(ams, 2)
        if a.native_images:
            b.native_images.append(a.native_images.pop(rng.randrange(len(a.native_images))))
    elif op == 4:
        f.state = rng.choice((0, 1, 2))
    elif op == 5:
        for am in ams:   # the pysycl IR goes: unsigned native code has nothing to rebuild from
            am.native_images = [n for n in am.native_images
                                if n.target != syclbin.PYSYCL_IR_TARGET]
    elif op == 6:
        for am in ams:
            _registry_sets(am).pop("PYSYCL/signature", None)
    elif ams:
        sets = _registry_sets(rng.choice(ams))
        values = sets.get("PYSYCL/spec values")
        if values:
            key = rng.choice(sorted(values))
            values[key] = _random_value(rng, values[key])


def reseal(data: bytes) -> bytes:
    """``data`` with pysycl's checksum recomputed where it can be found (what anyone who
    changes a file can do); unchanged otherwise."""
    from pysycl.bundle import syclbin
    try:
        start = 0
        if data[:4] == syclbin.OFFLOAD_MAGIC:
            start = struct.unpack_from("<Q", data, 32 + 24)[0]   # entry 0's image offset
        sybi = bytearray(data[start:])
        at = syclbin._digest_position(bytes(sybi))
        zero = syclbin._ZERO_DIGEST_TEXT.encode("ascii")
        if not 0 < at <= len(sybi) - len(zero) or sybi[at - 9:at] != b"sha256=2|":
            return data
        sybi[at:at + len(zero)] = zero
        size = struct.unpack_from("<Q", data, 32 + 32)[0] if start else len(sybi)
        digest = hashlib.sha256(bytes(sybi[:size])).digest()
        text = syclbin.base64_encode(struct.pack("<Q", 256) + digest).encode("ascii")
        sybi[at:at + len(text)] = text
        return data[:start] + bytes(sybi)
    except (struct.error, IndexError, ValueError):
        return data


TRUST_SEEDS = ("executable", "emulated", "aot")


def make_case(seeds: dict[str, bytes], seed: int, index: int) -> tuple[str, bool, bytes]:
    """Case ``index`` of run ``seed``: (what was done, trusted-code case?, file bytes)."""
    from pysycl.bundle import syclbin
    from pysycl.errors import exception
    rng = random.Random(seed * 1_000_003 + index)
    trust = rng.random() < 0.125
    names = [n for n in (TRUST_SEEDS if trust else sorted(seeds)) if n in seeds]
    name = rng.choice(names)
    data = seeds[name]
    steps = [name]
    if not trust and rng.random() < 0.12:   # raw bytes, checksum recomputed or not
        if rng.random() < 0.7:   # in place (offsets stay), then the checksum made again
            data, steps = reseal(_overwrite(rng, data)), steps + ["raw+reseal"]
        else:
            data, steps = _bytes_mutation(rng, data), steps + ["raw"]
        return "/".join(steps), trust, data
    f = syclbin.read_syclbin(data, require_checksum=False)
    if trust:
        for am in f.abstract_modules:
            am.native_images = [n for n in am.native_images
                                if n.target != syclbin.PYSYCL_IR_TARGET]
            _registry_sets(am).pop("PYSYCL/signature", None)
        for _ in range(rng.randint(0, 2)):
            mutate_images(rng, f, elf_weight=20)
            steps.append("elf")
    else:
        for _ in range(rng.randint(1, 3)):
            op = rng.choices(("properties", "images", "structure"), (4, 5, 2))[0]
            (mutate_properties if op == "properties" else
             mutate_images if op == "images" else mutate_structure)(rng, f)
            steps.append(op)
    checksum = trust or rng.random() < 0.95
    try:
        out = syclbin.write_syclbin(f, checksum=checksum)
    except Exception:  # noqa: BLE001 - any writer error
        # A mutation the writer cannot express (a name with a newline, say): bytes instead.
        out, steps = reseal(_overwrite(rng, data)), steps + ["raw+reseal"]
    return "/".join(steps), trust, out


# -- the worker process ---------------------------------------------------------------------

def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _run_case(sycl, K, q, ctx, path: str, trust: bool, rng) -> dict:
    os.environ["PYSYCL_TRUST_BUNDLE_CODE"] = "1" if trust else "0"
    stage = "load"
    try:
        kb = sycl.load_kernel_bundle(ctx, path)
        if trust:
            stage = "link"
            for img in kb:
                for d in img.get_devices():
                    img.program(d)   # JIT-link (a trusted file's code is not run here)
            return {"outcome": "loaded"}
        stage = "build"
        if kb.state is sycl.bundle_state.input:
            kb = sycl.build(kb)
        elif kb.state is sycl.bundle_state.object:
            kb = sycl.link(kb)
        stage = "run"
        ran, wrong = 0, []
        for kfn, runner in K.RUNNERS.items():
            if kb.has_kernel(kfn):
                ran += 1
                if not runner(q, kb, rng):
                    wrong.append(kfn.__name__)
        if wrong:
            return {"outcome": "wrong", "detail": ",".join(wrong)}
        return {"outcome": "ran" if ran else "empty"}
    except sycl.exception as e:
        return {"outcome": "refused", "errc": e.code().name, "stage": stage,
                "detail": str(e)[:300]}
    except Exception as e:  # noqa: BLE001 - what the fuzzer looks for
        import traceback
        return {"outcome": "unclean", "stage": stage, "detail":
                f"{type(e).__name__}: {str(e)[:300]}\n" +
                "".join(traceback.format_exception(e)[-6:])[-1500:]}


def worker_main() -> None:
    """Run cases sent on stdin; answers go to the original stdout (fd 1 is pointed at
    stderr so nothing else writes into the answers)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    import numpy as np

    import pysycl as sycl

    from benchmarks import fuzz_kernels as K
    dev = [d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0]
    q = sycl.queue(dev)
    ctx = q.get_context()
    path = os.path.join(tempfile.mkdtemp(prefix="pysycl-fuzz-"), "case.syclbin")
    _send(answers, [b"ready", json.dumps({"rss": _rss_mib()}).encode()])
    while True:
        try:
            fields = _receive(requests)
        except EOFError:
            return
        index, trust, data = int(fields[0]), fields[1] == b"1", fields[2]
        with open(path, "wb") as fh:
            fh.write(data)
        result = _run_case(sycl, K, q, ctx, path, trust, np.random.default_rng(index))
        result["rss"] = _rss_mib()
        _send(answers, [b"done", json.dumps(result).encode()])


class _Worker:
    def __init__(self, env: dict):
        self.env = env
        self.proc = None
        self.cases = 0
        self.first_rss = self.last_rss = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-c",
             "from benchmarks.fuzz_syclbin import worker_main; worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=ROOT, env=self.env)
        self.cases = 0
        self._stderr: list[bytes] = []
        threading.Thread(target=self._drain, args=(self.proc.stderr, self._stderr),
                         daemon=True).start()
        kind, info = self._answer(120)
        if kind != b"ready":
            raise RuntimeError(f"fuzz worker did not start: {self.stderr()}")
        self.first_rss = json.loads(info)["rss"]

    @staticmethod
    def _drain(stream, sink: list) -> None:
        for line in stream:
            sink.append(line)
            del sink[:-40]

    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")[-3000:]

    def _answer(self, timeout: float):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError
        return _receive(self.proc.stdout)

    def run(self, index: int, trust: bool, data: bytes, timeout: float) -> dict:
        try:
            _send(self.proc.stdin, [str(index).encode(), b"1" if trust else b"0", data])
            kind, info = self._answer(timeout)
            self.cases += 1
            result = json.loads(info)
            self.last_rss = result.get("rss")
            return result
        except TimeoutError:
            self.stop()
            return {"outcome": "hang", "detail": f"no answer in {timeout} s"}
        except (EOFError, BrokenPipeError, OSError):
            code = self.proc.wait()
            time.sleep(0.05)
            why = (f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}")
            detail = f"{why}\n{self.stderr()}"
            self.proc = None
            return {"outcome": "death", "detail": detail}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


class Summary:
    def __init__(self):
        self.counts: collections.Counter[str] = collections.Counter()
        self.refusals: collections.Counter[str] = collections.Counter()
        self.wrong: list[str] = []
        self.failures: list[tuple[int, str, dict]] = []
        self.rss: list[tuple[float, float]] = []
        self.elapsed = 0.0

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    def failed(self) -> int:
        return sum(self.counts[k] for k in FAILURES)

    def report(self) -> str:
        lines = [f"{self.cases} cases in {self.elapsed:.1f} s "
                 f"({self.cases / max(self.elapsed, 1e-9):.1f} cases/s)"]
        for k in ("refused", "ran", "loaded", "empty", "wrong", "unclean", "death", "hang"):
            lines.append(f"  {k:8s} {self.counts[k]}")
        for k, v in self.refusals.most_common():
            lines.append(f"    refused {k}: {v}")
        if self.rss:
            lines.append("  worker RSS (MiB) at start / at replacement or end: " +
                         ", ".join(f"{a:.0f}/{b:.0f}" for a, b in self.rss[:8]) +
                         (" ..." if len(self.rss) > 8 else ""))
        for index, what, r in self.failures[:10]:
            lines.append(f"  FAILURE case {index} ({what}): {r['outcome']}: "
                         f"{r.get('detail', '')[:600]}")
        for line in self.wrong[:5]:
            lines.append(f"  wrong: {line}")
        return "\n".join(lines)


def run(cases: int, seed: int = 0, jobs: int = 1, out: Path | None = None,
        timeout: float = 60.0, recycle: int = 2000, progress: float = 0.0,
        verbose: bool = False, minutes: float | None = None) -> Summary:
    """Run ``cases`` cases on ``jobs`` workers (no new case after ``minutes``, if
    given); failing cases are written to ``out``."""
    workdir = Path(tempfile.mkdtemp(prefix="pysycl-fuzz-run-"))
    # The run's own kernel cache and signing key unless the caller chose them (tests do).
    os.environ.setdefault("PYSYCL_CACHE_DIR", str(workdir / "cache"))
    os.environ.setdefault("PYSYCL_KEY_DIR", str(workdir / "keys"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in sys.path if p and
                                                       "site-packages" not in p])
    seeds = make_seeds(workdir)
    summary = Summary()
    lock = threading.Lock()
    counter = iter(range(cases))
    start = time.perf_counter()
    last_print = [start]

    deadline = start + minutes * 60 if minutes else None

    def next_case():
        with lock:
            if deadline is not None and time.perf_counter() > deadline:
                return None
            return next(counter, None)

    def record(index, what, result):
        with lock:
            outcome = result["outcome"]
            summary.counts[outcome] += 1
            if verbose:
                print(f"case {index} ({what}): {outcome} {result.get('errc', '')} "
                      f"{result.get('stage', '')} {result.get('detail', '')[:160]!r}")
            if outcome == "refused":
                summary.refusals[f"{result['errc']} at {result['stage']}"] += 1
            elif outcome == "wrong":
                summary.wrong.append(f"case {index} ({what}): {result.get('detail')}")
            elif outcome in FAILURES:
                summary.failures.append((index, what, result))
            now = time.perf_counter()
            if progress and now - last_print[0] >= progress:
                last_print[0] = now
                done = summary.cases
                print(f"  {done} cases, {done / (now - start):.1f}/s, failures "
                      f"{summary.failed()}", flush=True)

    def work():
        w = _Worker(env)
        w.start()
        try:
            while True:
                index = next_case()
                if index is None:
                    return
                what, trust, data = make_case(seeds, seed, index)
                result = w.run(index, trust, data, timeout)
                record(index, what, result)
                if result["outcome"] in FAILURES and out is not None:
                    out.mkdir(parents=True, exist_ok=True)
                    (out / f"case{index}.syclbin").write_bytes(data)
                    (out / f"case{index}.txt").write_text(
                        f"{what} trust={trust}\n{json.dumps(result, indent=1)}\n")
                if w.proc is None or w.cases >= recycle:
                    with lock:
                        summary.rss.append((w.first_rss or 0, w.last_rss or 0))
                    w.stop()
                    w.start()
        finally:
            with lock:
                summary.rss.append((w.first_rss or 0, w.last_rss or 0))
            w.stop()

    threads = [threading.Thread(target=work) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    summary.elapsed = time.perf_counter() - start
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="fuzz_syclbin.py")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--recycle", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    ap.add_argument("--verbose", action="store_true", help="a line per case")
    args = ap.parse_args(argv)
    summary = run(args.cases, args.seed, args.jobs, args.out, args.timeout, args.recycle,
                  progress=30.0, verbose=args.verbose)
    print(summary.report())
    return 1 if summary.failed() else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
