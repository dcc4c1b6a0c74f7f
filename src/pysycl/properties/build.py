"""Build properties: given to ``sycl.compile``/``link``/``build``, never written to IR.

``spec_constant_lowering`` is pysycl's own ("three lowerings of one
intrinsic"); its meta name follows the ``sycl-`` convention so it can be recorded in an
image's property sets like any other property.

>>> spec_constant_lowering("emulated").value
'emulated'
"""
from __future__ import annotations

import builtins

from ..errors import errc, exception
from .base import property

SPEC_CONSTANT_LOWERING_MODES = ("auto", "literal", "emulated", "native")


class spec_constant_lowering(property):
    """How specialization constants become code: ``"auto"`` (native where the target
    has them, else literal), ``"literal"`` (folded at build), ``"emulated"`` (read from
    the implicit buffer argument), ``"native"`` (SPIR-V OpSpecConstant, set at program
    build; SPIR-V targets only).

    >>> spec_constant_lowering("fast")
    Traceback (most recent call last):
    ...
    pysycl.errors.exception: spec_constant_lowering: mode 'fast' is not one of 'auto', 'literal', 'emulated', 'native'
    """

    meta_name = "sycl-spec-constant-lowering"
    category = "build"

    def __init__(self, mode: str = "auto"):
        if mode not in SPEC_CONSTANT_LOWERING_MODES:
            allowed = ", ".join(repr(m) for m in SPEC_CONSTANT_LOWERING_MODES)
            raise exception(errc.invalid,
                            f"spec_constant_lowering: mode {mode!r} is not one of {allowed}")
        self._value = mode

    @builtins.property
    def mode(self) -> str:
        return self._value

    @classmethod
    def from_meta(cls, text):
        return cls(text)
