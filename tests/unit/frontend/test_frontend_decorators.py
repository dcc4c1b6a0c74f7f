"""Decorators, the kernel registry, signatures and host objects."""
import copy

import numpy as np
import pytest

from frontend_sycl import sycl
import frontend_other_module as other
from pysycl.errors import errc, exception
from pysycl.frontend import registry
from pysycl.frontend import source as source_mod

s_id = sycl.specialization_id(np.float32, 1.5)

@sycl.kernel
def k_first(it: sycl.item[2], h: sycl.kernel_handler,
            a: sycl.accessor[np.float32, 2, sycl.read_only],
            loc: sycl.local_accessor[np.int32, 1], p: sycl.global_ptr[np.int64],
            n: np.int32, pt: sycl.vec(np.float32, 4), s: sycl.spec_constant[np.float32, s_id]):
    pass


@sycl.kernel(name="renamed")
def k_second():
    pass


def test_names_and_registry_order():
    @sycl.kernel
    def k_a():
        pass

    @sycl.kernel(name="renamed.again")
    def k_b():
        pass

    names = [k.name for k in registry.kernels_in_module(__name__)]
    assert names == [k_a.name, "renamed.again"]
    assert k_a in registry.all_kernels()
    assert registry.find_kernel("renamed.again") is k_b
    assert k_first.name == f"{__name__}.k_first"
    assert k_first.module_name == __name__
    assert k_second.name == "renamed"


def test_external_symbols():
    @sycl.external
    def ext_here(x: np.int32) -> np.int32:
        return x

    @sycl.external(name="ext_only_declared")
    def ext_decl_here(x: np.int32) -> np.int32:
        ...

    defined = registry.externals_defined()
    assert defined["ext_here"] is ext_here
    assert "ext_only_declared" not in defined
    assert other.ext_twice.name == "ext_twice"
    assert other.ext_decl.name == "ext_declared_elsewhere"
    assert other.ext_decl.is_declaration and not other.ext_twice.is_declaration
    with pytest.raises(exception):
        other.ext_decl.ir_module()


def test_calling_a_kernel_from_python_is_an_error():
    with pytest.raises(exception, match="cannot be called from Python"):
        k_first()


def test_device_functions_run_on_the_host():
    assert other.scale(np.float32(2), np.float32(3)) == 6


def test_parsing_is_lazy():
    @sycl.kernel
    def lazy(it: sycl.item[1]):
        pass

    assert lazy.py_function not in source_mod._cache
    lazy.signature()
    assert lazy.py_function in source_mod._cache


def test_signature():
    sig = k_first.signature()
    assert (sig.index_kind, sig.dims) == ("item", 2)
    kinds = [(p.name, p.kind) for p in sig.params]
    assert kinds == [("it", "index"), ("h", "kernel_handler"), ("a", "accessor"),
                     ("loc", "local_accessor"), ("p", "global_ptr"), ("n", "scalar"),
                     ("pt", "struct"), ("s", "spec_placeholder")]
    a = sig.params[2]
    assert (a.dtype, a.dims, a.mode) == (np.dtype(np.float32), 2, "read_only")
    assert sig.params[4].dtype == np.dtype(np.int64)
    assert [p.name for p in sig.runtime_args] == ["a", "loc", "p", "n", "pt", "s"]
    assert k_second.signature().index_kind is None


def test_ir_module_is_cached():
    assert k_first.ir_module() is k_first.ir_module()


# Host objects --------------------------------------------------------------------------
@sycl.struct
class Pair:
    a: np.int32
    b: np.float32


@sycl.struct
class Outer:
    p: Pair
    w: np.int16


spec_scalar = sycl.specialization_id(np.float32, 1.5)
spec_struct = sycl.specialization_id(Outer, Outer(Pair(1, 2.0), 3))
spec_tuple = sycl.specialization_id(Outer, ((4, 5.0), 6))
spec_array = sycl.specialization_id(np.dtype((np.int32, 3)), (1, 2, 3))
spec_unset = sycl.specialization_id(np.int64)
dg_mod = sycl.device_global(np.int32, sycl.properties())


class Holder:
    inner = sycl.specialization_id(np.int32)


def test_spec_id_defaults():
    assert spec_scalar.default_bytes == np.float32(1.5).tobytes()
    want = np.zeros((), Outer.dtype)
    want["p"]["a"], want["p"]["b"], want["w"] = 1, 2.0, 3
    assert spec_struct.default_bytes == want.tobytes()
    want["p"]["a"], want["p"]["b"], want["w"] = 4, 5.0, 6
    assert spec_tuple.default_bytes == want.tobytes()
    assert spec_array.default_bytes == np.array([1, 2, 3], np.int32).tobytes()
    assert spec_unset.default_bytes == bytes(8)
    void = np.zeros((), Pair.dtype)[()]
    assert sycl.specialization_id(Pair, void).default_bytes == bytes(8)


def test_unique_ids():
    assert spec_scalar.unique_id == f"{__name__}.spec_scalar"
    assert Holder.inner.unique_id == f"{__name__}.Holder.inner"
    assert dg_mod.unique_id == f"{__name__}.dg_mod"

    def make():
        return sycl.specialization_id(np.int32), sycl.specialization_id(np.int32)

    x, y = make()
    assert x.unique_id != y.unique_id and "@" in x.unique_id   # their definition sites
    named = sycl.specialization_id(np.int32, name="tuning.gain")
    assert named.unique_id == f"{__name__}.tuning.gain"
    assert sycl.device_global(np.int32, name="hits").unique_id == f"{__name__}.hits"
    with pytest.raises(ValueError, match="dotted Python name"):
        sycl.specialization_id(np.int32, name="a b")
    with pytest.raises(TypeError, match="takes a str"):
        sycl.device_global(np.int32, name=3)


def test_host_objects_are_not_copyable():
    for obj in (spec_scalar, dg_mod):
        with pytest.raises(TypeError):
            copy.copy(obj)
        with pytest.raises(TypeError):
            copy.deepcopy(obj)


def test_device_global_attributes():
    dg = sycl.device_global(np.dtype((np.float32, 4)))
    assert dg.dtype == np.dtype((np.float32, 4)) and len(dg.properties) == 0
    with pytest.raises(exception):
        dg.get()


# Struct field defaults (C++ default member initializers) -------------------------------
_rng = np.random.default_rng(2024)
GAIN, TAPS, COUNT = (np.float32(_rng.uniform(1, 9)), int(_rng.integers(-99, -1)),
                     int(_rng.integers(10, 99)))


@sycl.struct
class Tuned:
    gain: np.float32 = GAIN
    taps: np.int16 = TAPS
    pair: Pair                       # no default: Pair's own (zeros)


@sycl.struct
class Rig:
    tuned: Tuned                     # no default: Tuned's defaults
    count: np.int32 = COUNT
    many: np.dtype((Tuned.dtype, 2))  # an array of structs: each element Tuned's defaults


def _reference_rig() -> np.ndarray:
    want = np.zeros((), Rig.dtype)
    for t in (want["tuned"], want["many"][0], want["many"][1]):
        t["gain"], t["taps"] = GAIN, TAPS
    want["count"] = COUNT
    return want


def test_struct_defaults_hold_wherever_a_value_is_made():
    r = Rig()
    assert isinstance(r.tuned, Tuned) and r.tuned.gain == GAIN and r.tuned.taps == TAPS
    assert isinstance(r.tuned.pair, Pair) and r.count == COUNT
    assert r.as_void().tobytes() == _reference_rig().tobytes()
    assert Rig(count=5).tuned.taps == TAPS and Rig(count=5).count == 5
    assert Rig().tuned is not r.tuned            # a fresh nested value each time
    # a specialization_id or device_global of the type, by class or by dtype
    for t in (Rig, Rig.dtype):
        assert sycl.specialization_id(t).default_bytes == _reference_rig().tobytes()
        assert sycl.device_global(t).initial_bytes == _reference_rig().tobytes()
    assert sycl.device_global(np.int32).initial_bytes == bytes(4)
    with pytest.raises(TypeError, match="no field 'gian'"):
        Tuned(gian=2.0)
    with pytest.raises(TypeError, match="at most 3"):
        Tuned(1, 2, Pair(), 4)


@pytest.mark.parametrize("bad, kind", [(300, OverflowError), ("x", ValueError),
                                       (object(), TypeError)])
def test_struct_default_the_field_cannot_take(bad, kind):
    with pytest.raises(exception) as info:
        @sycl.struct
        class Bad:
            a: np.int8 = bad
    assert isinstance(info.value, kind) and info.value.code() == errc.invalid
    assert "Bad" in str(info.value) and "'a'" in str(info.value)


# These kernels exist to test the compiler: keep them out of the application-wide
# registry that bundle tests build from (sycl.get_kernel_bundle with no kernel list).
registry.forget_module(__name__)


@pytest.fixture(autouse=True)
def _forget_kernels_defined_in_tests():
    yield
    registry.forget_module(__name__)
