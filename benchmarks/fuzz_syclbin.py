"""Fuzz the SYCLBIN reader: N mutated files, only ``sycl.exception`` may escape.

    python benchmarks/fuzz_syclbin.py [N] [seed]

Mutations: byte overwrites, deletions, insertions, and u64 fields set to edge values
(0, 1, 2**32-1, 2**63, random), applied 1-6 times to valid files with and without
the pysycl checksum. Any other exception is printed with its input (hex) and the
script exits with status 1.
"""
from __future__ import annotations

import collections
import random
import struct
import sys
import time

from pysycl.bundle.property_sets import PropertySetRegistry, device_global_descriptor
from pysycl.bundle.syclbin import (IR_TYPE_PYSYCL, IR_TYPE_SPIRV, AbstractModule, IRModule,
                                   NativeImage, SyclbinFile, SyclbinState, read_syclbin,
                                   write_sybi, write_syclbin)
from pysycl.errors import exception


def seeds() -> list[bytes]:
    am = AbstractModule(
        PropertySetRegistry({
            "SYCL/kernel names": {"mod.k": 1},
            "SYCL/specialization constants": {"mod.c": struct.pack("<III", 0, 0, 4)},
            "SYCL/device globals": {"mod.g": device_global_descriptor(8, True)},
        }),
        [IRModule(IR_TYPE_SPIRV, b"\x03\x02\x23\x07" + bytes(20), "spir64-unknown-unknown"),
         IRModule(IR_TYPE_PYSYCL, b"module @k {}\n")],
        [NativeImage("nvptx64-nvidia-cuda", "sm_90", b".version 8.0\n", "ptx")])
    f = SyclbinFile(SyclbinState.executable, [am, AbstractModule()])
    return [write_syclbin(f), write_syclbin(f, checksum=False), write_sybi(f, checksum=False)]


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if not out:
            break
        pos = rng.randrange(len(out))
        op = rng.randrange(4)
        if op == 0:
            out[pos] = rng.randrange(256)
        elif op == 1:
            del out[pos:pos + rng.randint(1, 16)]
        elif op == 2:
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif len(out) >= 8:
            value = rng.choice([0, 1, 0xFFFFFFFF, 1 << 63, rng.randrange(1 << 64)])
            struct.pack_into("<Q", out, min(pos, len(out) - 8) & ~7, value)
    return bytes(out)


def main(n: int = 100_000, seed: int = 0) -> int:
    rng = random.Random(seed)
    inputs = seeds()
    outcomes: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    for _ in range(n):
        data = mutate(rng, rng.choice(inputs))
        try:
            read_syclbin(data, require_checksum=rng.random() < 0.5)
            outcomes["accepted"] += 1
        except exception as e:
            outcomes[f"sycl.exception({e.code().name})"] += 1
        except Exception as e:  # the bug this script exists to find
            print(f"UNEXPECTED {type(e).__name__}: {e}\ninput: {data.hex()}", file=sys.stderr)
            return 1
    elapsed = time.perf_counter() - start
    print(f"{n} mutated inputs in {elapsed:.1f}s ({n / elapsed:,.0f}/s)")
    for outcome, count in outcomes.most_common():
        print(f"  {outcome}: {count}")
    print("only sycl.exception was raised")
    return 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(*args))
