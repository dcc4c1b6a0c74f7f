"""Host object -> unique ID mapping (seed 004)."""
import gc
import itertools
import sys
import textwrap
import threading

import pytest

from pysycl.detail import (DefinitionSite, capture_definition_site, check_stable,
                           get_unique_id, get_unique_id_kind, lookup_unique_id, make_unique_id,
                           register_uniquely_identifiable_object, registered_unique_ids,
                           unstable_reason)
from pysycl.errors import errc, exception


class Identifiable:
    """Stands in for specialization_id/device_global: records its site at construction."""

    def __init__(self, kind="specialization_id"):
        self._pysycl_site = capture_definition_site()
        self._pysycl_uid_kind = kind


_module_numbers = itertools.count()


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Import a throw-away module written to disk, as a user's module would be."""
    def load(source):
        name = f"uid_user_mod_{next(_module_numbers)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setitem(sys.modules, "uid_helpers", sys.modules[__name__])
        __import__(name)
        return sys.modules[name]
    return load


SOURCE = """
    from uid_helpers import Identifiable
    coeff = Identifiable()
    counter = Identifiable("device_global")

    class Params:
        scale = Identifiable()

        class Inner:
            bias = Identifiable("device_global")

    def make_local():
        local = Identifiable()
        return local
"""


def test_module_level_and_class_ids(user_module):
    m = user_module(SOURCE)
    site = m.coeff._pysycl_site
    assert (site.module, site.qualname, site.scope, site.line) == (m.__name__, None, "module", 3)
    assert site.col in (8, None)                 # None: Python 3.10 has no columns
    assert m.Params.scale._pysycl_site.scope == "class"
    assert get_unique_id(m.coeff) == f"{m.__name__}.coeff"
    assert get_unique_id(m.counter) == f"{m.__name__}.counter"
    assert get_unique_id(m.Params.scale) == f"{m.__name__}.Params.scale"
    assert get_unique_id(m.Params.Inner.bias) == f"{m.__name__}.Params.Inner.bias"
    assert get_unique_id_kind(f"{m.__name__}.counter") == "device_global"
    assert lookup_unique_id(f"{m.__name__}.coeff") is m.coeff
    # Stable: asking again gives the same ID.
    assert get_unique_id(m.coeff) == f"{m.__name__}.coeff"


def _at(line, col):
    """The site suffix of a call at ``line``/``col`` on this Python (3.10: no column)."""
    return f"@{line}:{col}" if sys.version_info >= (3, 11) else f"@{line}"


def test_local_objects_get_their_definition_site(user_module):
    m = user_module(SOURCE)
    a = m.make_local()
    ua = get_unique_id(a)
    assert ua == f"{m.__name__}.make_local{_at(13, 12)}"
    assert unstable_reason(ua) is None
    b = m.make_local()                           # a second object made at the same place
    ub = get_unique_id(b)
    assert ub == f"{ua}#2" and lookup_unique_id(ub) is b
    assert "2 objects were made at that place" in unstable_reason(ua)
    assert "object 2 made at" in unstable_reason(ub)
    with pytest.raises(exception) as info:
        check_stable([ua], "save a kernel bundle")
    assert info.value.code() is errc.invalid
    assert "cannot save a kernel bundle" in str(info.value) and ua in str(info.value)
    assert "name=" in str(info.value) and f"{m.__name__} line 13 in make_local" in str(info.value)


def test_site_ids_do_not_depend_on_what_was_made_before(user_module):
    """The same definitions give the same IDs whatever else the process made first
    (the ID of the n-th object of a process-wide counter did not)."""
    src = """
        from uid_helpers import Identifiable
        def make():
            return Identifiable()
        def other():
            return Identifiable()
        HELD = (make(),)
    """
    quiet = user_module(src)
    busy_src = src.replace("HELD =", "junk = [other(), other()]\n        HELD =")
    busy = user_module(busy_src)
    assert get_unique_id(quiet.HELD[0]) == f"{quiet.__name__}.make{_at(4, 11)}"
    assert get_unique_id(busy.HELD[0]) == f"{busy.__name__}.make{_at(4, 11)}"
    assert unstable_reason(get_unique_id(busy.HELD[0])) is None


def test_two_calls_on_one_line_are_two_sites(user_module):
    m = user_module("""
        from uid_helpers import Identifiable
        def pair():
            return Identifiable(), Identifiable()
    """)
    a, b = m.pair()
    ua, ub = get_unique_id(a), get_unique_id(b)
    assert ua != ub and "#" not in ua + ub
    assert unstable_reason(ua) is None and unstable_reason(ub) is None


def test_python_310_fallback_numbers_the_calls_on_a_line(monkeypatch):
    """Without column positions, a line's calls are told apart by bytecode offset, in
    order of first execution: @<line>, @<line>/2..."""
    from pysycl.detail import unique_ids
    monkeypatch.setattr(unique_ids, "_call_position", lambda frame: (frame.f_lineno, None))

    def pair():
        return Identifiable(), Identifiable()
    a, b = pair()
    c, _ = pair()
    base = f"{__name__}.{pair.__qualname__}@{a._pysycl_site.line}"
    assert [get_unique_id(x) for x in (a, b, c)] == [base, f"{base}/2", f"{base}#2"]


def test_name_argument_fixes_the_id(user_module):
    m = user_module("""
        from uid_helpers import Identifiable
        def make(name):
            obj = Identifiable()
            obj._pysycl_name = name
            return obj
        HELD = (make("gain"), make("bias"))
    """)
    assert [get_unique_id(o) for o in m.HELD] == [f"{m.__name__}.gain", f"{m.__name__}.bias"]
    assert all(unstable_reason(get_unique_id(o)) is None for o in m.HELD)
    again = m.make("gain")                        # the name held by a live object
    assert get_unique_id(again) == f"{m.__name__}.gain#2"
    assert unstable_reason(get_unique_id(again)) is not None


def test_same_name_in_different_scopes_never_shares(user_module):
    m1 = user_module("from uid_helpers import Identifiable\nx = Identifiable()\n"
                     "class C:\n    x = Identifiable()\n")
    ids = {get_unique_id(m1.x), get_unique_id(m1.C.x)}
    assert ids == {f"{m1.__name__}.x", f"{m1.__name__}.C.x"}


def test_rerun_definition_gets_fresh_id(user_module):
    m = user_module("from uid_helpers import Identifiable\nx = Identifiable()\n")
    old = m.x
    assert get_unique_id(old) == f"{m.__name__}.x"
    m.x = Identifiable()  # as if a notebook cell ran `x = ...` again
    m.x._pysycl_site = DefinitionSite(m.__name__, None, "module")
    new_id = get_unique_id(m.x)
    assert new_id != f"{m.__name__}.x" and new_id.startswith(f"{m.__name__}.x#")
    assert get_unique_id(old) == f"{m.__name__}.x"
    assert unstable_reason(new_id) is not None and unstable_reason(get_unique_id(old)) is None


def test_explicit_registration_and_conflicts():
    a, b = Identifiable(), Identifiable()
    register_uniquely_identifiable_object(a, "test.explicit_a", "specialization_id")
    register_uniquely_identifiable_object(a, "test.explicit_a", "specialization_id")  # no-op
    assert get_unique_id(a) == "test.explicit_a"
    with pytest.raises(exception) as info:
        register_uniquely_identifiable_object(b, "test.explicit_a", "specialization_id")
    assert info.value.code() is errc.invalid and "test.explicit_a" in str(info.value)
    with pytest.raises(exception, match="already registered"):
        register_uniquely_identifiable_object(a, "test.other", "specialization_id")
    with pytest.raises(exception, match="kind"):
        register_uniquely_identifiable_object(b, "test.b", "kernel")
    with pytest.raises(exception):
        register_uniquely_identifiable_object(b, "", "device_global")
    assert "test.explicit_a" in registered_unique_ids("specialization_id")
    assert "test.explicit_a" not in registered_unique_ids("device_global")


def test_unregistered_plain_object_is_invalid():
    with pytest.raises(exception) as info:
        get_unique_id(object())
    assert info.value.code() is errc.invalid


def test_weak_references_let_objects_die():
    a = Identifiable()
    register_uniquely_identifiable_object(a, "test.dies", "device_global")
    assert lookup_unique_id("test.dies") is a
    del a
    gc.collect()
    assert lookup_unique_id("test.dies") is None
    assert get_unique_id_kind("test.dies") is None
    b = Identifiable()  # the ID is free again
    register_uniquely_identifiable_object(b, "test.dies", "device_global")
    assert get_unique_id(b) == "test.dies"


def test_non_weakrefable_objects_are_kept():
    class Slotted:
        __slots__ = ()
    s = Slotted()
    register_uniquely_identifiable_object(s, "test.slotted", "specialization_id")
    assert get_unique_id(s) == "test.slotted"


def test_make_unique_id_pure_naming(user_module):
    m = user_module(SOURCE)
    assert make_unique_id(m.coeff, DefinitionSite(m.__name__, None, "module")) == \
        f"{m.__name__}.coeff"
    assert make_unique_id(m.Params.scale, DefinitionSite(m.__name__, "Params", "class")) == \
        f"{m.__name__}.Params.scale"
    site = DefinitionSite("nowhere.mod", "f", "function", 3, 7)
    assert make_unique_id(object(), site) == "nowhere.mod.f@3:7"
    assert make_unique_id(object(), DefinitionSite("nowhere.mod", "f", "function", 3, 7, 1, 2)) \
        == "nowhere.mod.f@3:7#2"
    assert make_unique_id(object(), DefinitionSite("nowhere.mod", "f", "function", 3)) == \
        "nowhere.mod.f@3"
    assert make_unique_id(object(), site, "gain") == "nowhere.mod.gain"


def test_thread_safety_one_id_per_object(user_module):
    m = user_module("from uid_helpers import Identifiable\n"
                    + "".join(f"v{i} = Identifiable()\n" for i in range(50)))
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        try:
            results.append([get_unique_id(getattr(m, f"v{i}")) for i in range(50)])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    expected = [f"{m.__name__}.v{i}" for i in range(50)]
    assert all(r == expected for r in results)


def test_capture_site_scopes():
    def in_function():
        return capture_definition_site(0)

    class InClass:
        site = capture_definition_site(0)

    assert in_function().scope == "function"
    assert in_function().qualname.endswith("in_function")
    assert InClass.site.scope == "class"
    assert InClass.site.qualname.endswith("InClass")
    assert in_function().module == __name__
