"""IR -> LLVM IR through a table of small rules keyed by op name.

Public API:

* :func:`lower_module` (``Module, TargetLowering -> llvmlite.ir.Module``)
* :class:`TargetLowering` — per-target hooks; backends subclass it in ``lowering.py``
* :data:`RULES`, :func:`rule`, :class:`LoweringContext` — the rule table and its context
* :func:`missing_rules` — catalogue ops a target cannot lower
* :func:`device_global_symbol` — LLVM symbol of a device_global's unique ID

>>> from pysycl.codegen import lower_module, missing_rules
"""
from .context import RULES, AccessorValue, LoweringContext, Rule, VarSlot, rule
from .module import SPEC_BUFFER_PARAM, lower_module, param_types
from ..detail.symbols import device_global_symbol
from .target_lowering import TargetLowering, missing_rules

__all__ = ["RULES", "Rule", "rule", "LoweringContext", "AccessorValue", "VarSlot",
           "lower_module", "param_types", "SPEC_BUFFER_PARAM", "device_global_symbol",
           "TargetLowering", "missing_rules"]
