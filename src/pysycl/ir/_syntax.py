"""Lexical rules shared by the IR printer and parser (one place, so they cannot drift).

Strings are double-quoted; ``\\``, ``"`` and characters that are not printable are escaped
(``\\n``, ``\\t``, ``\\r`` or ``\\u{HEX}``), so a printed module is one line per op whatever
the file names and messages hold. Floats print with ``repr`` (the shortest text that reads
back to the same double) except NaNs with a non-default payload, which print their bits.

>>> quote('a"b\\n')
'"a\\\\"b\\\\n"'
"""
from __future__ import annotations

import math
import re
import struct

# Bare words: op names (``wi.global_id``), attribute keys (``sycl-restrict``), params.
BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
BARE_VALUE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OP_NAME = re.compile(r"[a-z_][a-z0-9_.]*")

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
UNESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}

# The NaN that float("nan") gives; any other NaN keeps its exact bits in the text.
_DEFAULT_NAN_BITS = struct.unpack("<Q", struct.pack("<d", float("nan")))[0]


def quote(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("\\u{%X}" % ord(ch))
    return '"' + "".join(out) + '"'


def float_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bits_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def format_float(x: float) -> str:
    if math.isnan(x):
        bits = float_bits(x)
        return "nan" if bits == _DEFAULT_NAN_BITS else "nan(0x%016x)" % bits
    return repr(x)  # 'inf', '-inf', '-0.0', '1e+20', '0.1': all read back exactly


def key_text(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else quote(key)
