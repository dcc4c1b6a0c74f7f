"""DPC++ property sets: the model, the text format and LLVM's Base64 variant.

A device image's metadata is a ``PropertySetRegistry``: set name -> (key -> value),
where a value is a u32 (``int``) or a byte array (``bytes``). The text form is what
``sycl-post-link`` writes (``llvm/lib/Support/PropertySetIO.cpp``) and what a
SYCLBIN file stores::

    [SYCL/device globals]
    mod.counter=2|ABAAAAAAAAAEAAAAAAAAAAA

Byte arrays are written as a little-endian u64 size in *bits* followed by the data,
encoded with ``llvm/lib/Support/Base64.cpp`` (standard alphabet, no ``=`` padding,
6-bit groups taken LSB-first). Payloads whose size is not a whole number of bytes
(``SYCL/kernel param opt`` bit masks) are ``BitBytes``, a ``bytes`` that remembers
its bit size.

>>> reg = PropertySetRegistry()
>>> reg.add("SYCL/misc properties", "optLevel", 2)
>>> print(reg.to_text(), end="")
[SYCL/misc properties]
optLevel=1|2
>>> PropertySetRegistry.from_text(reg.to_text()) == reg
True
"""
from __future__ import annotations

import struct
from typing import Iterable, Iterator, Mapping, Union

from ..errors import errc, exception
from ..spec_values import value_bytes

# Set names exactly as DPC++ spells them (its design document PropertySets.md).
SPEC_CONSTANTS = "SYCL/specialization constants"
SPEC_CONSTANTS_DEFAULT_VALUES = "SYCL/specialization constants default values"
DEVICE_GLOBALS = "SYCL/device globals"
KERNEL_NAMES = "SYCL/kernel names"
KERNEL_PARAM_OPT = "SYCL/kernel param opt"
DEVICE_REQUIREMENTS = "SYCL/device requirements"
MISC_PROPERTIES = "SYCL/misc properties"
EXPORTED_SYMBOLS = "SYCL/exported symbols"
IMPORTED_SYMBOLS = "SYCL/imported symbols"
PROGRAM_METADATA = "SYCL/program metadata"

#: The leaf ID DPC++ gives padding inside a composite spec constant.
PADDING_LEAF_ID = 0xFFFFFFFF

TYPE_UINT32 = 1
TYPE_BYTE_ARRAY = 2
_U32_MAX = 0xFFFFFFFF

_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_INDEX = {c: i for i, c in enumerate(_B64)}


class BitBytes(bytes):
    """Bytes whose meaningful size is ``bit_size`` bits (``ceil(bit_size/8)`` bytes).

    >>> BitBytes(b"\\x01", 2).bit_size
    2
    """

    bit_size: int

    def __new__(cls, data: bytes, bit_size: int):
        self = super().__new__(cls, data)
        if not 8 * len(self) - 8 < bit_size <= 8 * len(self):
            raise exception(errc.invalid,
                            f"{bit_size} bits do not fit exactly in {len(self)} bytes")
        self.bit_size = bit_size
        return self

    def __eq__(self, other):
        if not isinstance(other, (bytes, bytearray)):
            return NotImplemented
        return bytes(self) == bytes(other) and self.bit_size == _bit_size(other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash((bytes(self), self.bit_size))

    def __repr__(self):
        return f"BitBytes({bytes(self)!r}, {self.bit_size})"


Value = Union[int, bytes]


def _bit_size(data) -> int:
    return data.bit_size if isinstance(data, BitBytes) else 8 * len(data)


def base64_encode(data: bytes) -> str:
    """LLVM's ``Base64Impl`` encoding (LSB-first groups, no padding).

    >>> base64_encode(struct.pack("<Q", 2) + b"\\x01")
    'CAAAAAAAAAQA'
    """
    t = _B64
    out = bytearray()
    n = len(data)
    full = n - n % 3
    for i in range(0, full, 3):
        b0, b1, b2 = data[i], data[i + 1], data[i + 2]
        out += bytes((t[b0 & 63], t[((b1 << 2) | (b0 >> 6)) & 63],
                      t[((b2 << 4) | (b1 >> 4)) & 63], t[(b2 >> 2) & 63]))
    rest = n - full
    if rest == 1:
        b0 = data[full]
        out += bytes((t[b0 & 63], t[b0 >> 6]))
    elif rest == 2:
        b0, b1 = data[full], data[full + 1]
        out += bytes((t[b0 & 63], t[((b1 << 2) | (b0 >> 6)) & 63], t[(b1 >> 4) & 63]))
    return out.decode("ascii")


def base64_decode(text: str) -> bytes:
    """Inverse of ``base64_encode``. Unknown characters, an impossible length and
    non-zero unused bits are ``errc.invalid`` (strict, so one encoding per payload).

    >>> base64_decode("CAAAAAAAAAQA")[8:]
    b'\\x01'
    """
    try:
        raw = text.encode("ascii")
        codes = [_B64_INDEX[c] for c in raw]
    except (UnicodeEncodeError, KeyError):
        raise exception(errc.invalid, "property value is not LLVM base64") from None
    n = len(codes)
    if n % 4 == 1:
        raise exception(errc.invalid, f"base64 text of length {n} cannot be decoded")
    out = bytearray()
    full = n - n % 4
    for i in range(0, full, 4):
        c0, c1, c2, c3 = codes[i:i + 4]
        out += bytes(((c0 | (c1 << 6)) & 0xFF, ((c1 >> 2) | (c2 << 4)) & 0xFF,
                      ((c2 >> 4) | (c3 << 2)) & 0xFF))
    rest = codes[full:]
    if len(rest) == 2:
        c0, c1 = rest
        if c1 >> 2:
            raise exception(errc.invalid, "base64 text has stray bits in its last character")
        out.append(c0 | (c1 << 6))
    elif len(rest) == 3:
        c0, c1, c2 = rest
        if c2 >> 4:
            raise exception(errc.invalid, "base64 text has stray bits in its last character")
        out += bytes(((c0 | (c1 << 6)) & 0xFF, ((c1 >> 2) | (c2 << 4)) & 0xFF))
    return bytes(out)


def encode_value(value: Value) -> str:
    """``"1|<u32>"`` or ``"2|<base64 of bit size + data>"``.

    >>> encode_value(BitBytes(b"\\x7e\\x06", 11))
    '2|LAAAAAAAAAgfGA'
    """
    if isinstance(value, bool) or not isinstance(value, (int, bytes)):
        raise exception(errc.invalid, f"property value {value!r} is neither a u32 nor bytes")
    if isinstance(value, int):
        if not 0 <= value <= _U32_MAX:
            raise exception(errc.invalid, f"property value {value} does not fit in a u32")
        return f"{TYPE_UINT32}|{value}"
    return f"{TYPE_BYTE_ARRAY}|" + base64_encode(struct.pack("<Q", _bit_size(value)) + value)


def decode_value(text: str) -> Value:
    """Inverse of ``encode_value``; malformed text is ``errc.invalid``."""
    kind, sep, payload = text.partition("|")
    if not sep:
        raise exception(errc.invalid, f"property value {text[:40]!r} has no type")
    if kind == str(TYPE_UINT32):
        if not payload.isascii() or not payload.isdigit() or int(payload) > _U32_MAX:
            raise exception(errc.invalid, f"bad u32 property value {payload[:40]!r}")
        return int(payload)
    if kind == str(TYPE_BYTE_ARRAY):
        raw = base64_decode(payload)
        if len(raw) < 8:
            raise exception(errc.invalid, "byte-array property value is shorter than its size")
        bits = struct.unpack_from("<Q", raw)[0]
        data = raw[8:]
        if (bits + 7) // 8 != len(data):
            raise exception(errc.invalid,
                            f"byte-array property says {bits} bits but holds {len(data)} bytes")
        return bytes(data) if bits == 8 * len(data) else BitBytes(data, bits)
    raise exception(errc.invalid, f"unknown property value type {kind[:10]!r}")


def _check_name(what: str, name: str, forbidden: str) -> None:
    if not isinstance(name, str) or not name or any(c in name for c in forbidden):
        # The text format has no escapes: such a name would not read back.
        raise exception(errc.invalid, f"{what} {name!r} is empty or contains one of {forbidden!r}")


class PropertySetRegistry:
    """Ordered ``set name -> {key: value}``, like ``llvm::util::PropertySetRegistry``.

    Sets and keys keep insertion order (the text form is then deterministic and
    matches what a writer did). ``reg[name]`` is a plain ``dict``.

    >>> reg = PropertySetRegistry({"SYCL/kernel names": {"k": 1}})
    >>> reg["SYCL/kernel names"]["k"], "SYCL/kernel names" in reg
    (1, True)
    """

    def __init__(self, sets: Mapping[str, Mapping[str, Value]] | None = None):
        self._sets: dict[str, dict[str, Value]] = {}
        for name, props in (sets or {}).items():
            self.add_set(name, props)

    @classmethod
    def from_checked(cls, sets: dict[str, dict[str, Value]]) -> "PropertySetRegistry":
        """A registry of sets that were checked when first made (read back from pysycl's
        authenticated warm-start index): no second validation, which cost a warm start
        of 160 kernels a fifth of its time."""
        reg = cls.__new__(cls)
        reg._sets = sets
        return reg

    def add_set(self, name: str, props: Mapping[str, Value] | None = None) -> dict[str, Value]:
        """Create (or extend) set ``name`` and return its dict."""
        _check_name("property set name", name, "]\n\r")
        target = self._sets.setdefault(name, {})
        for key, value in (props or {}).items():
            self.add(name, key, value)
        return target

    def add(self, set_name: str, key: str, value: Value) -> None:
        """Set one property (validated: u32 range, key characters)."""
        _check_name("property key", key, "=\n\r")
        encode_value(value)  # validates the value
        if set_name not in self._sets:
            self.add_set(set_name)
        self._sets[set_name][key] = value

    def __getitem__(self, name: str) -> dict[str, Value]:
        return self._sets[name]

    def get(self, name: str, default=None):
        return self._sets.get(name, default)

    def __contains__(self, name) -> bool:
        return name in self._sets

    def __iter__(self) -> Iterator[str]:
        return iter(self._sets)

    def __len__(self) -> int:
        return len(self._sets)

    def items(self):
        return self._sets.items()

    def to_dict(self) -> dict[str, dict[str, Value]]:
        """A copy as plain dicts (``device_image.property_sets``)."""
        return {name: dict(props) for name, props in self._sets.items()}

    def __eq__(self, other):
        if isinstance(other, PropertySetRegistry):
            return self._sets == other._sets
        if isinstance(other, Mapping):
            return self._sets == other
        return NotImplemented

    def __repr__(self):
        return f"PropertySetRegistry({self._sets!r})"

    def to_text(self) -> str:
        """The PropertySetIO text (``[set]`` then ``key=type|value`` lines)."""
        lines = []
        for name, props in self._sets.items():
            lines.append(f"[{name}]\n")
            lines.extend(f"{key}={encode_value(value)}\n" for key, value in props.items())
        return "".join(lines)

    @classmethod
    def from_text(cls, text: str) -> "PropertySetRegistry":
        """Parse PropertySetIO text. Like the LLVM reader it skips blank lines and splits
        a property on its first ``=`` and first ``|``; anything else is ``errc.invalid``.
        """
        reg = cls()
        current: str | None = None
        for lineno, line in enumerate(text.split("\n"), 1):
            line = line.rstrip("\r")
            if not line:
                continue
            if line.startswith("["):
                if not line.endswith("]") or len(line) < 3:
                    raise exception(errc.invalid, f"line {lineno}: bad property set header")
                current = line[1:-1]
                if current in reg:
                    raise exception(errc.invalid, f"line {lineno}: property set {current!r} repeated")
                reg.add_set(current)
                continue
            if current is None:
                raise exception(errc.invalid, f"line {lineno}: property outside any property set")
            key, sep, value = line.partition("=")
            if not sep or not key:
                raise exception(errc.invalid, f"line {lineno}: expected key=type|value")
            if key in reg[current]:
                raise exception(errc.invalid, f"line {lineno}: property {key[:40]!r} repeated")
            reg[current][key] = decode_value(value)
        return reg


# --- builders for the sets the link pass emits -------------------------------------

def pack_spec_constant_descriptors(leaves: Iterable[tuple[int, int, int]]) -> bytes:
    """``{u32 leaf ID, u32 offset, u32 size}`` triples, as one property value."""
    return b"".join(struct.pack("<III", *leaf) for leaf in leaves)


def unpack_spec_constant_descriptors(data: bytes) -> list[tuple[int, int, int]]:
    """Inverse of ``pack_spec_constant_descriptors``."""
    if len(data) % 12:
        raise exception(errc.invalid, f"spec constant descriptors of {len(data)} bytes "
                                      "are not whole {id, offset, size} triples")
    return [struct.unpack_from("<III", data, i) for i in range(0, len(data), 12)]


def spec_constants_property_set(layout: Mapping[str, Iterable[tuple[int, int, int]]]
                                ) -> dict[str, bytes]:
    """``SYCL/specialization constants``: symbolic ID -> packed descriptors.

    >>> spec_constants_property_set({"m.id_int": [(0, 0, 4)]})["m.id_int"].hex()
    '000000000000000004000000'
    """
    return {sym: pack_spec_constant_descriptors(leaves) for sym, leaves in layout.items()}


def spec_constant_default_values_property_set(blob: bytes) -> dict[str, bytes]:
    """``SYCL/specialization constants default values``: ``{"all": blob}``."""
    return {"all": bytes(blob)}


def device_global_descriptor(size: int, device_image_scope: bool) -> bytes:
    """``{u32 size, u32 device_image_scope}`` (u32 flag "to eliminate padding").

    >>> base64_encode(struct.pack("<Q", 64) + device_global_descriptor(1, True))[:17]
    'ABAAAAAAAAQAAAAAB'
    """
    if not 0 < size <= _U32_MAX:
        raise exception(errc.invalid, f"device_global size {size} does not fit in a u32")
    return struct.pack("<II", size, 1 if device_image_scope else 0)


def device_globals_property_set(entries: Iterable[tuple[str, int, bool]]) -> dict[str, bytes]:
    """``SYCL/device globals`` from ``(unique_id, size, device_image_scope)`` entries."""
    return {uid: device_global_descriptor(size, dis) for uid, size, dis in entries}


def unpack_device_global_descriptor(data: bytes) -> tuple[int, bool]:
    """``(size, device_image_scope)`` from a ``SYCL/device globals`` value."""
    if len(data) != 8:
        raise exception(errc.invalid, f"device global descriptor has {len(data)} bytes, not 8")
    size, dis = struct.unpack("<II", data)
    return size, bool(dis)


def names_property_set(names: Iterable[str]) -> dict[str, int]:
    """``name -> 1`` for ``SYCL/kernel names``, ``SYCL/exported symbols`` and
    ``SYCL/imported symbols`` (the value is always 1 in DPC++)."""
    return {name: 1 for name in names}


kernel_names_property_set = names_property_set
exported_symbols_property_set = names_property_set
imported_symbols_property_set = names_property_set


def kernel_param_opt_mask(removed: Iterable[bool]) -> BitBytes:
    """``SYCL/kernel param opt`` value: bit i (LSB-first) set = argument i removed.

    >>> encode_value(kernel_param_opt_mask([True, False]))
    '2|CAAAAAAAAAQA'
    """
    flags = list(removed)
    data = bytearray((len(flags) + 7) // 8)
    for i, gone in enumerate(flags):
        if gone:
            data[i // 8] |= 1 << (i % 8)
    return BitBytes(bytes(data), len(flags))


def _u32s(values) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


def _u64s(values) -> bytes:
    return struct.pack(f"<{len(values)}Q", *values)


def device_requirements_property_set(aspects: Iterable[int] = (),
                                     reqd_work_group_size: list[int] | None = None,
                                     reqd_sub_group_size: int | None = None) -> dict[str, Value]:
    """``SYCL/device requirements`` as ``sycl-post-link`` writes it (keys in its sorted
    order): ``aspects`` (u32 array, always present), ``reqd_sub_group_size`` (u32),
    ``reqd_work_group_size_uint64_t`` (u64 array). Work-group sizes are given in SYCL
    order and stored reversed, as the SPIR-V metadata holds them.

    >>> encode_value(device_requirements_property_set()["aspects"])
    '2|AAAAAAAAAAA'
    >>> encode_value(device_requirements_property_set((), [64])["reqd_work_group_size_uint64_t"])
    '2|ABAAAAAAAAAQAAAAAAAAAA'
    """
    out: dict[str, Value] = {"aspects": _u32s(sorted(set(int(a) for a in aspects)))}
    if reqd_sub_group_size is not None:
        out["reqd_sub_group_size"] = int(reqd_sub_group_size)
    if reqd_work_group_size:
        out["reqd_work_group_size_uint64_t"] = _u64s(list(reversed(reqd_work_group_size)))
    return out


def program_metadata_entries(kernel: str, reqd_work_group_size: list[int] | None = None,
                             max_work_group_size: list[int] | None = None,
                             max_linear_work_group_size: int | None = None) -> dict[str, bytes]:
    """One kernel's ``SYCL/program metadata`` entries: ``<kernel>@reqd_work_group_size``
    and ``@max_work_group_size`` (u32 arrays, reversed as in SPIR-V), and
    ``@max_linear_work_group_size`` (one u64)."""
    out: dict[str, bytes] = {}
    if reqd_work_group_size:
        out[f"{kernel}@reqd_work_group_size"] = _u32s(list(reversed(reqd_work_group_size)))
    if max_work_group_size:
        out[f"{kernel}@max_work_group_size"] = _u32s(list(reversed(max_work_group_size)))
    if max_linear_work_group_size is not None:
        out[f"{kernel}@max_linear_work_group_size"] = _u64s([max_linear_work_group_size])
    return out


def unpack_u32s(data: bytes) -> list[int]:
    if len(data) % 4:
        raise exception(errc.invalid, f"{len(data)} bytes are not a u32 array")
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def unpack_u64s(data: bytes) -> list[int]:
    if len(data) % 8:
        raise exception(errc.invalid, f"{len(data)} bytes are not a u64 array")
    return list(struct.unpack(f"<{len(data) // 8}Q", data))


# --- specialization-constant layout (called by the link pass) ----------------------

def _leaves(dtype, offset: int, out: list, next_id: list[int], name: str) -> None:
    """Depth-first leaves of ``dtype`` at ``offset`` (C++ declaration order)."""
    import numpy as np

    if dtype.subdtype is not None:  # fixed array / sycl.vec: one leaf per element
        base, shape = dtype.subdtype
        count = int(np.prod(shape)) if shape else 1
        for i in range(count):
            _leaves(base, offset + i * base.itemsize, out, next_id, name)
        return
    if dtype.names is not None:
        fields = [(dtype.fields[f][0], dtype.fields[f][1]) for f in dtype.names]
        end = 0
        for ftype, foff in fields:
            # A C struct's members ascend in declaration order without overlap; NumPy
            # can express unions and shuffled offsets, which no C++ type matches.
            if foff < end:
                raise exception(errc.invalid, f"spec constant {name}: struct fields overlap or "
                                              "are not in ascending offset order")
            end = foff + ftype.itemsize
        cursor = 0
        for ftype, foff in fields:
            if foff > cursor:
                out.append((PADDING_LEAF_ID, offset + cursor, foff - cursor))
            _leaves(ftype, offset + foff, out, next_id, name)
            cursor = foff + ftype.itemsize
        if dtype.itemsize > cursor:  # tail padding (e.g. a 3-vector's 4th slot)
            out.append((PADDING_LEAF_ID, offset + cursor, dtype.itemsize - cursor))
        return
    if dtype.kind not in "biufc" or dtype.itemsize == 0:
        raise exception(errc.invalid, f"spec constant {name}: {dtype} is not a device-copyable "
                                      "scalar, array or struct type")
    # std::complex is a struct {re, im}: two leaves, as DPC++ would see it.
    parts = 2 if dtype.kind == "c" else 1
    for i in range(parts):
        out.append((next_id[0], offset + i * dtype.itemsize // parts, dtype.itemsize // parts))
        next_id[0] += 1


def assign_leaf_ids(constants, start: int = 0) -> dict[str, list[tuple[int, int, int]]]:
    """Numeric IDs for the scalar leaves of each constant, depth-first (DPC++'s spec-constant ID assignment).

    ``constants``: ``(symbolic_id, numpy dtype)`` pairs in the order IDs are handed
    out. Returns ``{symbolic_id: [(leaf_id, offset, size), ...]}`` where ``offset`` is
    the leaf's byte offset within the constant's own value (0 for a scalar) and
    padding gets ``PADDING_LEAF_ID`` without consuming an ID.

    >>> import numpy as np
    >>> nested = np.dtype([("a", np.float32), ("b", np.float32)])
    >>> a = np.dtype([("x", np.int32), ("n", nested)])
    >>> assign_leaf_ids([("id_int", np.int32), ("id_A", a), ("id_Nested", nested)])
    {'id_int': [(0, 0, 4)], 'id_A': [(1, 0, 4), (2, 4, 4), (3, 8, 4)], 'id_Nested': [(4, 0, 4), (5, 4, 4)]}
    """
    import numpy as np

    next_id = [int(start)]
    layout: dict[str, list[tuple[int, int, int]]] = {}
    for symbolic_id, dtype in constants:
        if symbolic_id in layout:
            raise exception(errc.invalid, f"spec constant {symbolic_id} listed twice")
        leaves: list[tuple[int, int, int]] = []
        _leaves(np.dtype(dtype), 0, leaves, next_id, symbolic_id)
        if not any(leaf[0] != PADDING_LEAF_ID for leaf in leaves):
            raise exception(errc.invalid, f"spec constant {symbolic_id} has no scalar members")
        layout[symbolic_id] = leaves
    if next_id[0] - 1 > _U32_MAX - 1:
        raise exception(errc.invalid, "too many specialization constant leaves for u32 IDs")
    return layout


def default_values_blob(constants, layout: Mapping[str, list[tuple[int, int, int]]]) -> bytes:
    """``SYCL/specialization constants default values`` ``all``: every constant's default
    in ascending numeric-ID order, each taking its full size (the emulated buffer).

    ``constants``: ``(symbolic_id, dtype, default)`` triples; ``layout`` from
    ``assign_leaf_ids``.

    >>> import numpy as np
    >>> lay = assign_leaf_ids([("a", np.int32), ("b", np.float32)])
    >>> default_values_blob([("b", np.float32, 1.0), ("a", np.int32, 7)], lay).hex()
    '070000000000803f'
    """
    def first_id(item):
        leaves = layout.get(item[0])
        if leaves is None:
            raise exception(errc.invalid, f"spec constant {item[0]} has no assigned IDs")
        return min(leaf[0] for leaf in leaves if leaf[0] != PADDING_LEAF_ID)

    return b"".join(value_bytes(default, dtype)
                    for _sym, dtype, default in sorted(constants, key=first_id))


def spec_constant_offsets(constants, layout) -> dict[str, int]:
    """Byte offset of each constant in the emulated buffer (sum of earlier sizes).

    ``constants``: ``(symbolic_id, dtype)`` pairs.
    """
    import numpy as np

    order = sorted(constants, key=lambda c: min(l[0] for l in layout[c[0]] if l[0] != PADDING_LEAF_ID))
    offsets, total = {}, 0
    for sym, dtype in order:
        offsets[sym] = total
        total += np.dtype(dtype).itemsize
    return offsets
