"""The hand-written value classes (``pysycl/_records.py``) behave exactly as the
dataclasses they replace: each is checked against ``dataclasses.make_dataclass`` with the
same fields, defaults and options (construction and defaults, ``==`` within and across
classes, ``hash``, ``repr``, assignment)."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

from pysycl import types as pt
from pysycl._records import FrozenValue, IdentityRecord
from pysycl.backends.base import DeviceDescription, KernelArg, KernelArgKind, Target
from pysycl.backends.native_cpu.lowering import WorkItemState
from pysycl.bundle import syclbin
from pysycl.bundle.linker import LinkedKernel
from pysycl.codegen.context import AccessorValue, LoopTarget, VarSlot
from pysycl.codegen.target_lowering import WorkItemDims
from pysycl.detail.unique_ids import DefinitionSite
from pysycl.frontend import values as V
from pysycl.frontend.builtins import Builtin
from pysycl.frontend.diagnostics import Source
from pysycl.frontend.lowering import Slot
from pysycl.frontend.signature import KernelSignature, ParamInfo
from pysycl.frontend.source import ParsedFunction
from pysycl.ir import core as C
from pysycl.ir import types as T
from pysycl.ir.ops import OpDef
from pysycl.passes.fission_values import _Access, _Use
from pysycl.passes.pipeline import PassEntry, PassOptions
from pysycl.passes.spec_constants import SpecConstantIds

M = dataclasses.MISSING
F32, I32 = T.F32, T.I32
NaN = float("nan")

# class, [(field, default)], argument tuples (positional, then defaults filled in)
CASES = [
    (V.Lit, [("value", M)], [(1,), (1.0,), (True,), (NaN,), (2,)]),
    (V.Weak, [("value", M)], [("a",), ("b",)]),
    (V.Obj, [("value", M)], [(np,), (None,), ((1, 2),)]),
    (V.TupleVal, [("items", M)], [((1, 2),), ((),)]),
    (V.GroupHandle, [("scope", M), ("dims", 1)], [("work_group",), ("sub_group", 1),
                                                  ("work_group", 2)]),
    (V.AtomicHandle, [("ptr", M), ("elem", M), ("order", M), ("scope", M)],
     [("p", F32, "relaxed", "device"), ("p", I32, "relaxed", "device")]),
    (V.SpecPlaceholder, [("name", M), ("type", M), ("spec_id", M)], [("n", F32, 1), ("n", F32, 2)]),
    (V.Ptr, [("value", M), ("readonly", None), ("device_global", None)],
     [("v",), ("v", "acc"), ("v", None, "dg")]),
    (Builtin, [("name", M), ("lower", M), ("doc", M)], [("abs", abs, "d"), ("abs", abs, "")]),
    (T.VoidType, [], [()]),
    (T.ScalarType, [("name", M)], [("f32",), ("i32",)]),
    (T.VecType, [("elem", M), ("n", M)], [(F32, 4), (F32, 3)]),
    (T.ArrayType, [("elem", M), ("n", M)], [(F32, 4), (I32, 4)]),
    (T.StructField, [("name", M), ("type", M), ("offset", M)], [("a", F32, 0), ("a", F32, 4)]),
    (T.StructType, [("name", M), ("fields", M), ("size_", M), ("align_", M)],
     [("s", (T.StructField("a", F32, 0),), 4, 4), ("s", (), 4, 4)]),
    (T.TupleType, [("elems", M)], [((F32, I32),), ((),)]),
    (T.PointerType, [("pointee", M), ("space", "global")], [(F32,), (F32, "local")]),
    (T.AccessorType, [("elem", M), ("dims", M), ("mode", "read_write")],
     [(F32, 1), (F32, 1, "read_only")]),
    (T.LocalAccessorType, [("elem", M), ("dims", M)], [(F32, 1), (F32, 2)]),
    (T.IndexSpaceType, [("kind", M), ("dims", 0)], [("item",), ("item", 1), ("id", 1)]),
    (C.Loc, [("file", ""), ("line", 0), ("col", 0)], [(), ("f.py", 3), ("f.py", 3, 4)]),
    (C.SpecConstantDecl, [("unique_id", M), ("type", M), ("default", M)],
     [("a", F32, b"\0" * 4), ("b", F32, b"")]),
    (C.DeviceGlobalDecl, [("unique_id", M), ("type", M), ("properties", dict), ("initial", b"")],
     [("a", F32), ("a", F32, {"x": "1"}), ("a", F32, {}, b"\0\0\x80?")]),
    (C.Module, [("name", M), ("functions", list), ("spec_constants", list),
                ("device_globals", list), ("attrs", dict)], [("m",), ("m", [1]), ("n",)]),
    (C.Function, [("name", M), ("kind", M), ("params", M), ("return_type", T.VOID),
                  ("body", None), ("loc", C.UNKNOWN_LOC), ("properties", dict), ("attrs", dict)],
     [("k", "kernel", []), ("k", "device", [], F32), ("k", "kernel", [], T.VOID, None,
                                                       C.Loc("f", 1))]),
    (OpDef, [("name", M), ("operands", M), ("regions", M), ("result", M), ("attrs", M),
             ("doc", M)], [("add", 2, 0, "value", (), "a + b"), ("add", None, 0, "value", (), "")]),
    (Source, [("filename", M)], [("a.py",), ("b.py",)]),
    (ParamInfo, [("name", M), ("kind", M), ("dtype", None), ("dims", None), ("mode", None),
                 ("properties", None), ("index_kind", None), ("annotated", False),
                 ("spec_id", None), ("op", None)],
     [("x", "scalar"), ("x", "accessor", np.dtype(np.float32), 1, "read_only")]),
    (KernelSignature, [("params", M), ("index_kind", M), ("dims", M)],
     [((), "item", 1), ((), None, None)]),
    (ParsedFunction, [("node", M), ("source", M), ("fn", M)], [(1, Source("a"), len)]),
    (Slot, [("type", M), ("line", M), ("weak", False), ("loop", False)],
     [(F32, 1), (F32, 1, True), (I32, 2, False, True)]),
    (_Use, [("op", M), ("index", M), ("ctx", M), ("region", M)], [(1, 0, None, 2)]),
    (_Access, [("ctx", M), ("in_group_loop", M), ("kind", M)], [(None, False, "var.load")]),
    (PassOptions, [("verify", False), ("dump", None), ("dump_stream", None), ("target", ""),
                   ("extra", dict)], [(), (True,), (False, None, None, "", {"a": 1})]),
    (PassEntry, [("name", M), ("run", M), ("reason", M)], [("p", len, "r")]),
    (SpecConstantIds, [("ids", M), ("default_values", M), ("offsets", M), ("types", M)],
     [({}, b"", {}, {}), ({"a": [(0, 0, 4)]}, b"1234", {"a": 0}, {"a": F32})]),
    (AccessorValue, [("ptr", M), ("ranges", M), ("offset", M), ("elem", M), ("access", None),
                     ("offsets", None)], [(1, [2], 3, F32), (1, [2], 3, F32, [2], [0])]),
    (VarSlot, [("ptr", M), ("type", M), ("per_item", False)], [(1, F32), (1, F32, True)]),
    (LoopTarget, [("continue_block", M), ("break_block", M)], [(1, 2)]),
    (WorkItemDims, [("dims", M)], [(1,), (2,)]),
    (DefinitionSite, [("module", M), ("qualname", M), ("scope", M), ("line", 0), ("col", None),
                      ("call", 1), ("occurrence", 1)],
     [("m", None, "module"), ("m", "C", "class"), ("m", "f", "function", 3, 4, 1, 2)]),
    (pt.AccessorAnnotation, [("dtype", M), ("dims", M), ("mode", pt.access_mode.read_write),
                             ("properties", None)],
     [(np.dtype(np.float32), 1), (np.dtype(np.float32), 1, pt.read_only)]),
    (pt.LocalAccessorAnnotation, [("dtype", M), ("dims", 1)], [(np.dtype(np.int32),)]),
    (pt.GlobalPtrAnnotation, [("dtype", M), ("properties", None), ("annotated", False)],
     [(np.dtype(np.float32),), (np.dtype(np.float32), None, True)]),
    (pt.IndexAnnotation, [("kind", M), ("dims", M)], [("item", 1), ("id", 2)]),
    (pt.SpecConstantAnnotation, [("dtype", M), ("spec_id", None)],
     [(np.dtype(np.int32),), (np.dtype(np.int32), 1)]),
    (Target, [("name", M), ("backend", M), ("triple", M), ("data_layout", M),
              ("binary_format", M), ("address_spaces", M), ("cpu", ""), ("features", ""),
              ("native_spec_constants", False), ("sub_group_sizes", None),
              ("accumulating_reductions", False)],
     [("t", "native_cpu", "x86_64", "e", "object", {})]),
    (KernelArg, [("kind", M), ("value", M)], [(KernelArgKind.scalar, b"1"),
                                              (KernelArgKind.mem, 1)]),
    (DeviceDescription, [("name", M), ("vendor", M), ("backend", M), ("device_type", M),
                         ("driver_version", M), ("max_compute_units", M),
                         ("max_work_group_size", M), ("max_work_item_sizes", M),
                         ("sub_group_sizes", M), ("global_mem_size", M), ("local_mem_size", M),
                         ("aspects", M), ("target", M), ("handle", None), ("extra", dict)],
     [("d", "v", "native_cpu", "cpu", "1", 2, 64, (1, 1, 1), (1,), 1, 1, frozenset(), None)]),
    (syclbin.IRModule, [("ir_type", M), ("data", M), ("target", None)], [(0, b"x"), (1, b"")]),
    (syclbin.NativeImage, [("target", M), ("arch", M), ("data", M), ("format", None)],
     [("x86", "", b"o"), ("x86", "", b"o", "object")]),
    (syclbin.SyclbinFile, [("state", M), ("abstract_modules", list)], [(1,), (2, [3])]),
    (WorkItemState, [("global_range", M), ("local_range", M), ("group_range", M),
                     ("global_offset", M), ("group_id", M), ("local_id", M)],
     [([1], [2], [3], [4], [5], [6]), ([1], [2], [3], [4], [5], [7])]),
    (LinkedKernel, [("kid", M), ("name", M), ("module", M), ("spec_ids", M), ("_ir_text", None)],
     [("kid", "k", "m", "ids")]),
]


def _reference(cls, fields):
    kind = "frozen" if issubclass(cls, FrozenValue) else \
        "identity" if issubclass(cls, IdentityRecord) else "record"
    specs = []
    for name, default in fields:
        if default is M:
            specs.append((name, object))
        elif default in (dict, list):
            specs.append((name, object, dataclasses.field(default_factory=default)))
        else:
            specs.append((name, object, dataclasses.field(default=default)))
    ref = dataclasses.make_dataclass(cls.__name__, specs, frozen=kind == "frozen",
                                     eq=kind != "identity")
    ref.__qualname__ = cls.__qualname__
    return kind, ref


@pytest.mark.parametrize("cls,fields,samples", CASES, ids=[c[0].__name__ for c in CASES])
def test_same_semantics_as_the_dataclass(cls, fields, samples):
    kind, ref = _reference(cls, fields)
    assert cls._fields == tuple(f for f, _ in fields)
    ours = [cls(*args) for args in samples]
    theirs = [ref(*args) for args in samples]
    for a, ra in zip(ours, theirs):
        assert [getattr(a, f) for f, _ in fields] == [getattr(ra, f) for f, _ in fields]
        assert repr(a) == repr(ra)
        assert a == cls(*samples[ours.index(a)]) or kind == "identity"
        assert (a == ra) is False and (a != ra) is True   # other class: never equal
        for b, rb in zip(ours, theirs):
            assert (a == b) == (ra == rb) and (a != b) == (ra != rb)
            if kind == "frozen" and ra == rb:
                try:
                    same = hash(a) == hash(b)
                except TypeError:   # a field is unhashable (a dict): so is the dataclass
                    with pytest.raises(TypeError):
                        hash(ra)
                    continue
                assert same and hash(a) == hash(ra)
    a, ra = ours[0], theirs[0]
    name = fields[0][0] if fields else "x"
    if kind == "frozen":
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(a, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(a, name)
    elif kind == "record":
        with pytest.raises(TypeError):
            hash(a)
        setattr(a, name, 1)
        assert getattr(a, name) == 1
    else:
        assert a != cls(*samples[0]) and hash(a) == object.__hash__(a)


def test_keyword_construction_and_fresh_defaults():
    assert T.PointerType(pointee=F32, space="local") == T.PointerType(F32, "local")
    assert C.Module("a").functions is not C.Module("b").functions
    assert PassOptions().extra is not PassOptions().extra
    assert PassOptions(extra=None).extra is None          # as given, like the dataclass
    assert C.Param("x", F32) == C.Param("x", F32)          # value: not compared
    assert repr(C.Param("x", F32)) == "Param(name='x', type=ScalarType(name='f32'), properties={})"
    with pytest.raises(ValueError):
        T.ScalarType("f128")
    with pytest.raises(TypeError):
        T.PointerType()


def test_self_containing_repr():
    m = C.Module("m")
    m.attrs["self"] = m
    assert repr(m) == "Module(name='m', functions=[], spec_constants=[], device_globals=[], " \
                      "attrs={'self': ...})"


@pytest.mark.parametrize("value", [T.PointerType(F32, "local"), T.VOID, C.Loc("f.py", 1, 2),
                                   pt.GlobalPtrAnnotation(np.dtype(np.float32)),
                                   V.GroupHandle("work_group", 2), C.Module("m")])
def test_copy_deepcopy_pickle(value):
    for other in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert other == value and type(other) is type(value) and repr(other) == repr(value)
