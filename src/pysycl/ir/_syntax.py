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
import struct

# Bare words: op names (``wi.global_id``), attribute keys (``sycl-restrict``), params.
# As regular expressions for the parser (compiled on first use: the printer, which every
# build runs, tests the same sets of characters without them).
_PATTERNS = {"BARE_KEY": r"[A-Za-z_][A-Za-z0-9_.\-]*",
             "BARE_VALUE_NAME": r"[A-Za-z_][A-Za-z0-9_]*",
             "OP_NAME": r"[a-z_][a-z0-9_.]*"}
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _FIRST | frozenset("0123456789")
_KEY_CHARS = _NAME_CHARS | frozenset(".-")


def __getattr__(name: str):
    pattern = _PATTERNS.get(name)
    if pattern is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import re
    compiled = globals()[name] = re.compile(pattern)
    return compiled


def is_bare_key(s: str) -> bool:
    """``BARE_KEY.fullmatch(s)``: an attribute key that prints without quotes."""
    return bool(s) and s[0] in _FIRST and all(c in _KEY_CHARS for c in s)


def is_bare_value_name(s: str) -> bool:
    """``BARE_VALUE_NAME.fullmatch(s)``: a parameter name that prints without quotes."""
    return bool(s) and s[0] in _FIRST and all(c in _NAME_CHARS for c in s)


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
    return key if is_bare_key(key) else quote(key)
