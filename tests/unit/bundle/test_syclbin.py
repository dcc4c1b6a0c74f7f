"""SYCLBIN writer/reader: layout, round trips, and untrusted input."""
import hashlib
import random
import struct

import pytest

from pysycl.bundle.property_sets import PropertySetRegistry, device_global_descriptor
from pysycl.bundle.syclbin import (
    IR_TYPE_PYSYCL, IR_TYPE_SPIRV, AbstractModule, IRModule, NativeImage, SyclbinFile,
    SyclbinState, read_syclbin, read_sybi, unwrap_offload_binary, write_sybi, write_syclbin)
from pysycl.errors import errc, exception


def sample() -> SyclbinFile:
    am0 = AbstractModule(
        PropertySetRegistry({
            "SYCL/kernel names": {"mod.conv": 1},
            "SYCL/specialization constants": {"mod.coeff": struct.pack("<III", 0, 0, 4)},
            "SYCL/specialization constants default values": {"all": struct.pack("<f", 2.5)},
            "SYCL/device globals": {"mod.counter": device_global_descriptor(4, False)},
        }),
        ir_modules=[IRModule(IR_TYPE_SPIRV, b"\x03\x02\x23\x07" + bytes(13), "spir64-unknown-unknown"),
                    IRModule(IR_TYPE_PYSYCL, b"module @conv {}\n")],
        native_images=[NativeImage("x86_64-unknown-linux-gnu", "znver4", b"\x7fELF" + bytes(37),
                                   "object")])
    am1 = AbstractModule(PropertySetRegistry({"SYCL/exported symbols": {"mod.helper": 1}}),
                         native_images=[NativeImage("nvptx64-nvidia-cuda", "sm_90", b".version 8.0\n", "ptx")])
    return SyclbinFile(SyclbinState.object, [am0, AbstractModule(), am1])


def invalid(data, **kw):
    with pytest.raises(exception) as info:
        read_syclbin(data, **kw)
    assert info.value.code() is errc.invalid
    return str(info.value)


def test_round_trip():
    f = sample()
    data = write_syclbin(f)
    assert read_syclbin(data) == f
    assert read_syclbin(bytearray(data)) == f
    assert read_syclbin(write_syclbin(SyclbinFile(SyclbinState.input))) == SyclbinFile(SyclbinState.input)
    # Bare SYBI, as LLVM's reader also accepts.
    assert read_sybi(write_sybi(f)) == f
    assert write_syclbin(f) == data  # deterministic


def test_envelope_layout_matches_reference():
    data = write_syclbin(sample())
    magic, version, size, entries_offset, count = struct.unpack_from("<4sIQQQ", data)
    assert (magic, version, size, entries_offset, count) == (b"\x10\xff\x10\xad", 2, len(data), 32, 1)
    assert size % 8 == 0
    kind, _offload, flags, _so, nstrings, image_offset, image_size = struct.unpack_from("<HHIQQQQ", data, 32)
    assert (kind, flags, nstrings) == (7, 0, 0)
    assert image_offset % 8 == 0
    image = data[image_offset:image_offset + image_size]
    assert image[:4] == b"IBYS"
    assert unwrap_offload_binary(data) == image


def test_sybi_header_and_tables():
    f = sample()
    image = write_sybi(f)
    magic, version, n_am, n_ir, n_nat, meta_size, bin_size, gm_off, gm_size = \
        struct.unpack_from("<5I4xQQQQ", image)
    assert (magic, version, n_am, n_ir, n_nat) == (0x53594249, 1, 3, 2, 2)
    header_end = 56 + 32 * (3 + 2 + 2)
    assert len(image) == header_end + (-(-meta_size // 8) * 8) + (-(-bin_size // 8) * 8)
    glob = image[header_end + gm_off:header_end + gm_off + gm_size].decode()
    assert glob.startswith("[SYCLBIN/global metadata]\nstate=1|1\n[PYSYCL/integrity]\nsha256=2|")
    # AM headers: IR/native index ranges are consecutive.
    ams = [struct.unpack_from("<QQIIII", image, 56 + 32 * i) for i in range(3)]
    assert [(a[2], a[3], a[4], a[5]) for a in ams] == [(2, 0, 1, 0), (0, 2, 0, 1), (0, 2, 1, 1)]
    # First IR module: metadata names type 0 and the target triple; bytes at binary table start.
    m_off, m_size, b_off, b_size = struct.unpack_from("<QQQQ", image, 56 + 32 * 3)
    ir_meta = image[header_end + m_off:header_end + m_off + m_size].decode()
    assert ir_meta.startswith("[SYCLBIN/ir module metadata]\ntype=1|0\ntarget=2|")
    bin_start = header_end + -(-meta_size // 8) * 8
    assert image[bin_start + b_off:bin_start + b_off + b_size] == f.abstract_modules[0].ir_modules[0].data


def test_checksum_definition():
    image = write_sybi(sample())
    glob_end = image.index(b"\n", image.index(b"sha256=2|"))
    text_start = image.index(b"sha256=2|") + len(b"sha256=2|")
    from pysycl.bundle.property_sets import base64_decode, base64_encode
    digest = base64_decode(image[text_start:glob_end].decode())[8:]
    zero = base64_encode(struct.pack("<Q", 256) + bytes(32)).encode()
    assert hashlib.sha256(image[:text_start] + zero + image[glob_end:]).digest() == digest


def test_file_without_checksum():
    f = sample()
    data = write_syclbin(f, checksum=False)
    assert "checksum" in invalid(data)
    assert read_syclbin(data, require_checksum=False) == f


def test_state_and_version_errors():
    f = sample()
    image = bytearray(write_sybi(f, checksum=False))
    struct.pack_into("<I", image, 4, 2)
    assert "version 2" in invalid(bytes(image), require_checksum=False)
    image = bytearray(write_sybi(f, checksum=False))
    image[:4] = b"XXXX"
    assert "magic" in invalid(bytes(image), require_checksum=False)
    env = bytearray(write_syclbin(f))
    struct.pack_into("<I", env, 4, 3)
    assert "OffloadBinary version 3" in invalid(bytes(env))
    env = bytearray(write_syclbin(f))
    struct.pack_into("<H", env, 32, 6)  # IMG_SPIRV, not SYCLBIN
    assert "image kind 6" in invalid(bytes(env))
    env = bytearray(write_syclbin(f))
    struct.pack_into("<Q", env, 24, 2)  # a second entry that is not there
    assert "entry 1" in invalid(bytes(env))


def test_bad_state_value_is_rejected():
    with pytest.raises(exception) as info:
        write_syclbin(SyclbinFile(7))
    assert info.value.code() is errc.invalid and "7" in str(info.value)


def test_every_truncation_is_invalid():
    data = write_syclbin(sample())
    for n in range(len(data)):
        invalid(data[:n])


def test_oversized_counts_and_offsets():
    f = sample()
    image = bytearray(write_sybi(f, checksum=False))
    struct.pack_into("<I", image, 8, 0xFFFFFFFF)  # abstract module count
    assert "do not fit" in invalid(bytes(image), require_checksum=False)
    image = bytearray(write_sybi(f, checksum=False))
    struct.pack_into("<Q", image, 32, 1 << 62)  # binary table size
    assert "past the end" in invalid(bytes(image), require_checksum=False)
    image = bytearray(write_sybi(f, checksum=False))
    struct.pack_into("<Q", image, 56 + 32 * 3 + 16, 1 << 63)  # IR bytes offset
    assert "runs past" in invalid(bytes(image), require_checksum=False)
    image = bytearray(write_sybi(f, checksum=False))
    struct.pack_into("<I", image, 56 + 16 + 4, 1)  # AM0's first IR index
    assert "next unclaimed" in invalid(bytes(image), require_checksum=False)
    env = bytearray(write_syclbin(f))
    struct.pack_into("<Q", env, 8, len(env) + 8)
    assert "says" in invalid(bytes(env))


def test_random_inputs():
    rng = random.Random(7)
    for n in range(300):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
        invalid(blob)
        invalid(b"\x10\xff\x10\xad" + blob)
        invalid(b"IBYS" + blob)


def test_single_byte_flips_in_image_are_detected():
    data = write_syclbin(sample())
    image_offset, image_size = struct.unpack_from("<QQ", data, 32 + 32)
    for pos in range(image_offset, image_offset + image_size):
        corrupt = bytearray(data)
        corrupt[pos] ^= 0x01
        invalid(bytes(corrupt))


def test_bounded_fuzz_raises_only_sycl_exception():
    rng = random.Random(2024)
    seeds = [write_syclbin(sample()), write_syclbin(sample(), checksum=False),
             write_sybi(sample(), checksum=False)]
    accepted = 0
    for i in range(2000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            op = rng.randrange(4)
            pos = rng.randrange(len(data))
            if op == 0:
                data[pos] = rng.randrange(256)
            elif op == 1:
                del data[pos:pos + rng.randint(1, 16)]
            elif op == 2:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            else:
                struct.pack_into("<Q", data, min(pos, len(data) - 8) & ~7,
                                 rng.choice([0, 1, 0xFFFFFFFF, 1 << 63, rng.randrange(1 << 64)]))
        try:
            result = read_syclbin(bytes(data), require_checksum=rng.random() < 0.5)
        except exception as e:
            assert e.code() is errc.invalid
        else:
            accepted += 1
            assert isinstance(result, SyclbinFile)
    # Most mutations must be caught; the survivors hit padding or unchecked seeds.
    assert accepted < 200
