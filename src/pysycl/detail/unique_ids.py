"""Host object -> unique symbolic ID (DPC++'s design for mapping host variables to compiler-generated IDs).

DPC++ registers ``(address, unique id, kind)`` from a static constructor before
``main``; the ID keys every property set that describes the object
(``SYCL/specialization constants``, ``SYCL/device globals``). In Python an object
cannot know the name it is about to be bound to (``x = sycl.specialization_id(...)``
runs the constructor first), so constructors record *where* they ran
(``capture_definition_site``) and the ID is found lazily on first use by looking
for the object in its module's globals and class dictionaries.

An ID must name the same object in every process that runs the same program, since
bundle files and the kernel cache carry it. ID rules:

* ``name=`` given to the constructor -> ``"<module>.<name>"``;
* module-level object -> ``"<module>.<name>"``; class attribute ->
  ``"<module>.<Class qualname>.<name>"``;
* anything else (made in a function, held in a list or dict) -> its definition site:
  ``"<module>.<function qualname>@<line>:<column>"`` (``"<module>@<line>:<column>"`` at
  module level). Python 3.10 has no column positions: ``"...@<line>"``, and the k-th
  distinct call on that line (in order of first execution) ``"...@<line>/<k>"``.
* the n-th object (n > 1) made at one site, or claiming a name a live object holds
  (a notebook cell run again) -> that ID + ``"#<n>"``: the order of creation, which is
  the same in another process only if the program runs the same way. Such IDs, and
  the first object's of a site used more than once, are *unstable*: saving or loading
  a bundle that uses one is ``errc.invalid`` (:func:`check_stable`), naming the object
  and suggesting ``name=``. Within one process they are unique, and the kernel cache
  stays correct with them (an entry is the code of its IR text, whichever object the
  ID names).

``#``, ``@`` and ``/`` never occur in a Python identifier, so the forms cannot collide.

>>> import types, sys
>>> class Spec: pass
>>> m = types.ModuleType("demo_uid"); sys.modules["demo_uid"] = m
>>> m.coeff = Spec(); m.coeff._pysycl_site = DefinitionSite("demo_uid", None, "module")
>>> m.coeff._pysycl_uid_kind = "specialization_id"
>>> get_unique_id(m.coeff)
'demo_uid.coeff'
"""
from __future__ import annotations

import gc
import itertools
import sys
import types
import threading
import weakref
from typing import Any, Callable

from .._records import FrozenValue
from ..errors import errc, exception

#: The kinds of DPC++'s ``uniquely_identifiable_object(kind)`` attribute used here.
KINDS = frozenset({"specialization_id", "device_global"})

# RLock, not Lock: a weakref callback can fire from garbage collection while the same
# thread holds the lock (any allocation may trigger GC).
_lock = threading.RLock()
_by_uid: dict[str, "_Entry"] = {}
_by_obj: dict[int, str] = {}  # id(obj) -> uid; entries leave when the object dies
_uses: dict[str, int] = {}     # site ID or claimed name -> objects made there / claiming it
_line_calls: dict[tuple, list[int]] = {}   # Python 3.10: (module, qualname, line) -> offsets
_qualnames: dict = {}   # Python 3.10: code object -> its function's __qualname__


class DefinitionSite(FrozenValue):
    """Where an identifiable object was constructed.

    ``module``: the defining module's ``__name__``; ``qualname``: the qualified name of
    the enclosing class or function (``None`` at module level); ``scope``: ``"module"``,
    ``"class"`` or ``"function"``; ``line``/``col``: the constructor call's position
    (``col`` is ``None`` on Python 3.10, where ``call`` numbers the distinct calls on
    that line); ``occurrence``: this object is the n-th made at the site. (A frozen
    value class with dataclass semantics, _records.py.)
    """

    __slots__ = _fields = ("module", "qualname", "scope", "line", "col", "call",
                           "occurrence")
    module: str
    qualname: str | None
    scope: str
    line: int
    col: int | None
    call: int
    occurrence: int

    def __init__(self, module: str, qualname: str | None, scope: str, line: int = 0,
                 col: int | None = None, call: int = 1, occurrence: int = 1):
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "qualname", qualname)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "col", col)
        object.__setattr__(self, "call", call)
        object.__setattr__(self, "occurrence", occurrence)

    @property
    def site_id(self) -> str:
        """The ID of an object made here that no name holds (without ``#n``)."""
        scope = f"{self.module}.{self.qualname}" if self.qualname else self.module
        if self.col is not None:
            return f"{scope}@{self.line}:{self.col}"
        return f"{scope}@{self.line}" + (f"/{self.call}" if self.call > 1 else "")

    def describe(self) -> str:
        where = f" in {self.qualname}" if self.qualname else ""
        return f"{self.module} line {self.line}{where}"


class _Entry:
    __slots__ = ("get", "kind", "obj_id")

    def __init__(self, get: Callable[[], Any], kind: str, obj_id: int):
        self.get = get
        self.kind = kind
        self.obj_id = obj_id


def capture_definition_site(stacklevel: int = 1) -> DefinitionSite:
    """The site of the caller's caller (``stacklevel=1``): call it from a constructor.
    Counts the objects made at each site (``occurrence``).

    >>> class Spec:
    ...     def __init__(self):
    ...         self.site = capture_definition_site()
    >>> def f():
    ...     return Spec()
    >>> f().site.scope, f().site.qualname
    ('function', 'f')
    """
    frame = sys._getframe(stacklevel + 1)
    code = frame.f_code
    module = frame.f_globals.get("__name__", "<unknown>")
    if code.co_name == "<module>":
        qualname, scope = None, "module"
    else:
        # A class body is executed as a code object named after the class whose locals
        # carry __qualname__ (set by type.__build_class__ before the body runs); that
        # also gives the full name on Python 3.10, whose code objects lack co_qualname.
        class_name = frame.f_locals.get("__qualname__")
        if (isinstance(class_name, str) and "__module__" in frame.f_locals
                and class_name.rpartition(".")[2] == code.co_name):
            qualname, scope = class_name, "class"
        else:
            qualname, scope = _function_qualname(code), "function"
    line, col = _call_position(frame)
    with _lock:
        call = 1
        if col is None:   # Python 3.10: tell the calls on one line apart by bytecode offset
            offsets = _line_calls.setdefault((module, qualname, line), [])
            if frame.f_lasti not in offsets:
                offsets.append(frame.f_lasti)
            call = offsets.index(frame.f_lasti) + 1
        site = DefinitionSite(module, qualname, scope, line, col, call)
        n = _uses[site.site_id] = _uses.get(site.site_id, 0) + 1
    return DefinitionSite(module, qualname, scope, line, col, call, n)


def _function_qualname(code) -> str:
    """The qualified name of the function running ``code``. Python 3.10's code objects
    lack ``co_qualname``: the function object that holds the code is found once (IDs
    must not differ between Python versions: a bundle saved under one is loaded under
    another)."""
    qualname = getattr(code, "co_qualname", None)
    if qualname is None:
        qualname = _qualnames.get(code)
        if qualname is None:
            qualname = next((f.__qualname__ for f in gc.get_referrers(code)
                             if isinstance(f, types.FunctionType) and f.__code__ is code),
                            code.co_name)
            _qualnames[code] = qualname
    return qualname


def _call_position(frame) -> tuple[int, int | None]:
    """``(line, column)`` of the call a frame is executing; the column is ``None``
    before Python 3.11 (no ``co_positions``)."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:
        return frame.f_lineno, None
    # One position per 2-byte code unit; f_lasti is the CALL's byte offset.
    pos = next(itertools.islice(positions(), frame.f_lasti // 2, None), None)
    if pos is None or pos[0] is None or pos[2] is None:
        return frame.f_lineno, 0
    return pos[0], pos[2]


def _find_in_classes(obj, module, module_name: str, qualname_hint: str | None) -> str | None:
    """``"<Class qualname>.<name>"`` if a class of ``module`` holds ``obj``."""
    candidates = []
    if qualname_hint and "<locals>" not in qualname_hint:
        target = module
        for part in qualname_hint.split("."):
            target = getattr(target, part, None)
        if isinstance(target, type):
            candidates.append(target)
    candidates.extend(v for v in list(vars(module).values()) if isinstance(v, type))
    seen: set[int] = set()
    while candidates:
        cls = candidates.pop(0)
        if id(cls) in seen or getattr(cls, "__module__", None) != module_name:
            continue
        seen.add(id(cls))
        for name, value in list(vars(cls).items()):
            if value is obj:
                return f"{cls.__qualname__}.{name}"
            if isinstance(value, type):
                candidates.append(value)  # nested classes
    return None


def find_binding(obj, module_name: str, qualname_hint: str | None = None) -> str | None:
    """The ID ``obj`` gets from where it is bound now, or ``None`` if it is not bound
    at module or class level in ``module_name``.
    """
    module = sys.modules.get(module_name)
    if module is None:
        return None
    for name, value in list(vars(module).items()):  # list(): another thread may import
        if value is obj:
            return f"{module_name}.{name}"
    in_class = _find_in_classes(obj, module, module_name, qualname_hint)
    return f"{module_name}.{in_class}" if in_class else None


def make_unique_id(obj, site: DefinitionSite, name: str | None = None) -> str:
    """The unique ID of ``obj`` by the rules above, before collisions (does not
    register it). ``name``: the constructor's ``name=``.

    >>> make_unique_id(object(), DefinitionSite("mod", "f", "function", 7, 4))
    'mod.f@7:4'
    """
    if name is not None:
        return f"{site.module}.{name}"
    found = find_binding(obj, site.module, site.qualname)
    if found is not None:
        return found
    base = site.site_id
    return base if site.occurrence == 1 else f"{base}#{site.occurrence}"


def _forget(uid: str, obj_id: int) -> None:
    with _lock:
        entry = _by_uid.get(uid)
        if entry is not None and entry.obj_id == obj_id:
            del _by_uid[uid]
        if _by_obj.get(obj_id) == uid:
            del _by_obj[obj_id]


def register_uniquely_identifiable_object(obj, unique_id: str, kind: str) -> None:
    """Record that ``obj`` is known to device code as ``unique_id`` (DPC++'s
    ``__register_uniquely_identifiable_object``).

    Registering the same pair again is a no-op. Another live object under the same ID,
    or a second ID for the same object, is ``errc.invalid``. The registry holds objects
    weakly (strongly only if they cannot be weakly referenced).

    >>> class S: pass
    >>> s = S(); register_uniquely_identifiable_object(s, "doc.s", "device_global")
    >>> get_unique_id(s), lookup_unique_id("doc.s") is s
    ('doc.s', True)
    """
    if kind not in KINDS:
        raise exception(errc.invalid, f"unknown uniquely identifiable object kind {kind!r}; "
                                      f"expected one of {sorted(KINDS)}")
    if not isinstance(unique_id, str) or not unique_id:
        raise exception(errc.invalid, f"unique ID must be a non-empty string, got {unique_id!r}")
    with _lock:
        current = _by_obj.get(id(obj))
        if current is not None and _live(current) is obj:
            if current == unique_id and _by_uid[current].kind == kind:
                return
            raise exception(errc.invalid, f"object {obj!r} is already registered as "
                                          f"{current!r} ({_by_uid[current].kind})")
        entry = _by_uid.get(unique_id)
        if entry is not None and entry.get() is not None:
            raise exception(errc.invalid, f"unique ID {unique_id!r} is already registered "
                                          f"to another object ({entry.kind})")
        obj_id = id(obj)
        try:
            ref = weakref.ref(obj, lambda _r, u=unique_id, o=obj_id: _forget(u, o))
        except TypeError:
            ref = (lambda o=obj: o)  # not weak-referenceable: keep it alive (id stays valid)
        _by_uid[unique_id] = _Entry(ref, kind, obj_id)
        _by_obj[obj_id] = unique_id


def _live(uid: str):
    entry = _by_uid.get(uid)
    return entry.get() if entry is not None else None


def get_unique_id(obj) -> str:
    """The unique ID of ``obj``, found on first use if it was never registered.

    Lazy discovery needs two attributes the object's constructor sets:
    ``_pysycl_site`` (a ``DefinitionSite``) and ``_pysycl_uid_kind`` (one of
    ``KINDS``), and reads ``_pysycl_name`` (its ``name=``) if present. If the ID is
    held by another live object (the definition ran again, e.g. a re-run notebook
    cell), the new object gets ``"<ID>#<n>"`` instead. Anything else unregistered is
    ``errc.invalid``.
    """
    with _lock:
        uid = _by_obj.get(id(obj))
        if uid is not None and _live(uid) is obj:
            return uid
        site = getattr(obj, "_pysycl_site", None)
        kind = getattr(obj, "_pysycl_uid_kind", None)
        if not isinstance(site, DefinitionSite) or kind not in KINDS:
            raise exception(errc.invalid, f"{obj!r} has no unique ID: it is not a registered "
                                          "specialization_id or device_global")
        uid = make_unique_id(obj, site, getattr(obj, "_pysycl_name", None))
        if "#" not in uid:
            _uses.setdefault(uid, 1)
        while _live(uid) is not None:
            base = uid.partition("#")[0]
            n = _uses[base] = _uses.get(base, 1) + 1
            uid = f"{base}#{n}"
        register_uniquely_identifiable_object(obj, uid, kind)
        return uid


def unstable_reason(unique_id: str) -> str | None:
    """Why ``unique_id`` may name another object in another process (see the module
    doc), or ``None`` when it is stable.

    >>> unstable_reason("mod.coeff") is None
    True
    """
    base, _, n = unique_id.partition("#")
    with _lock:
        used = _uses.get(base, 0)
    if n:
        return (f"it is object {n} made at {base} or claiming that ID, and the order of "
                "such objects need not be the same in another process")
    if used > 1 and "@" in base:
        return (f"{used} objects were made at that place ({base}), and their order need "
                "not be the same in another process")
    return None


def check_stable(unique_ids, action: str) -> None:
    """``errc.invalid`` naming the first of ``unique_ids`` that is unstable: ``action``
    (``"save a kernel bundle"``) would tie it to another object in another process."""
    for uid in unique_ids:
        why = unstable_reason(uid) if isinstance(uid, str) else None
        if why is None:
            continue
        obj = lookup_unique_id(uid)
        kind = get_unique_id_kind(uid) or "object"
        site = getattr(obj, "_pysycl_site", None)
        made = f" (made at {site.describe()})" if isinstance(site, DefinitionSite) else ""
        raise exception(errc.invalid, f"cannot {action}: {kind} {uid}{made} has no ID "
                        f"that is the same in every process: {why}; give it one with "
                        f"sycl.{kind if kind in KINDS else 'specialization_id'}(..., "
                        "name=\"...\") or bind it to a module-level name")


def lookup_unique_id(unique_id: str):
    """The live object registered as ``unique_id``, or ``None``."""
    with _lock:
        return _live(unique_id)


def get_unique_id_kind(unique_id: str) -> str | None:
    """The kind (``"specialization_id"``/``"device_global"``) of a live registration."""
    with _lock:
        entry = _by_uid.get(unique_id)
        return entry.kind if entry is not None and entry.get() is not None else None


def registered_unique_ids(kind: str | None = None) -> dict[str, Any]:
    """``{unique_id: object}`` of every live registration (of one kind if given)."""
    with _lock:
        out = {}
        for uid, entry in list(_by_uid.items()):
            obj = entry.get()
            if obj is not None and (kind is None or entry.kind == kind):
                out[uid] = obj
        return out
