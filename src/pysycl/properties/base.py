"""Compile-time properties: the ``property`` base, its registry and ``properties`` lists.

Design (sycl_ext_oneapi_properties, DPC++'s compile-time properties): every property knows its IR
name (``meta_name``, e.g. ``"sycl-work-group-size"``) and the string form of its value
(``meta_value``), so the passes that attach them to IR never need to understand a
property: they route by ``category`` and copy name/value pairs. Adding a property is
one subclass; ``__init_subclass__`` registers it, and nothing else changes.

>>> from pysycl.properties import properties, work_group_size, sub_group_size
>>> p = properties(work_group_size(8, 8), sub_group_size(16))
>>> p == properties(sub_group_size(16), work_group_size(8, 8))
True
>>> p.get_property(work_group_size).meta_value
'8,8'
"""
from __future__ import annotations

import builtins
import enum
import math
import numbers
from typing import Any, ClassVar, Iterable, Iterator

import numpy as np

from ..errors import errc, exception

#: Where a property may be attached; passes route on these names.
CATEGORIES = frozenset({"kernel", "kernel_arg", "global_variable", "pointer", "build", "accessor",
                        "queue", "buffer", "context", "reduction"})

_registry_by_meta: dict[str, type["property"]] = {}
_registry_by_name: dict[str, type["property"]] = {}


def meta_string(value: Any) -> str:
    """Convert a property value to its IR string by sycl_ext_oneapi_properties' rules.

    Integers and floats print like C++ ``std::to_string`` (floats with ``%f``: six
    decimals), booleans as ``true``/``false``, enumerations as their integer, no value
    (``None``) as ``""``; tuples (work-group sizes, aspect lists) are comma-joined.

    >>> meta_string((8, 4)), meta_string(True), meta_string(1.5), meta_string(None)
    ('8,4', 'true', '1.500000', '')
    """
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):  # before int: bool is an int subclass
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(int(value.value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):  # std::to_string gives "nan" / "-nan"
            return "-nan" if math.copysign(1.0, value) < 0 else "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return "%f" % value
    if isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)):
        return ",".join(meta_string(v) for v in value)
    raise exception(errc.invalid, f"property value {value!r} has no IR string form")


def lookup_property(name: str) -> type["property"] | None:
    """The property class registered under a meta name (``"sycl-sub-group-size"``)
    or a Python class name (``"sub_group_size"``), or ``None``.

    >>> lookup_property("sycl-restrict").__name__
    'restrict_key'
    """
    return _registry_by_meta.get(name) or _registry_by_name.get(name)


def registered_properties() -> list[type["property"]]:
    """Every property class known so far, in registration order."""
    return list(_registry_by_name.values())


class property:
    """Base of every compile-time property value.

    Subclasses set ``meta_name`` (the DPC++ IR attribute name; ``None`` for
    runtime-only properties such as ``no_init``), ``category`` (primary routing
    target) and optionally ``categories`` (every place it may be attached), and
    store their canonical value in ``self._value``. Equality and hashing are by
    (class, value), which is what makes ``properties`` order-insensitive.

    >>> from pysycl.properties import alignment
    >>> alignment(16) == alignment(16), alignment(16).meta_name
    (True, 'sycl-alignment')
    """

    meta_name: ClassVar[str | None] = None
    category: ClassVar[str] = ""
    categories: ClassVar[frozenset[str]] = frozenset()
    _value: Any = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if not cls.category:
            return  # an abstract helper base, not a property
        if cls.category not in CATEGORIES:
            raise TypeError(f"{cls.__name__}: unknown property category {cls.category!r}")
        cls.categories = frozenset(cls.categories) | {cls.category}
        if cls.meta_name is not None:
            other = _registry_by_meta.get(cls.meta_name)
            if other is not None and other.__qualname__ != cls.__qualname__:
                raise TypeError(f"meta name {cls.meta_name!r} already used by {other.__name__}")
            _registry_by_meta[cls.meta_name] = cls
        _registry_by_name[cls.__name__] = cls

    @builtins.property
    def value(self) -> Any:
        """The Python value (an int, a tuple of ints, an enum member, ``None``...)."""
        return self._value

    @builtins.property
    def meta_value(self) -> str:
        """The value as the IR attribute string (sycl_ext_oneapi_properties conversion rules)."""
        return meta_string(self._value)

    @classmethod
    def from_meta(cls, text: str) -> "property":
        """Rebuild a property from its ``meta_value`` (used when reading images back)."""
        raise exception(errc.invalid, f"{cls.__name__} cannot be read from IR string {text!r}")

    def __eq__(self, other):
        return type(self) is type(other) and self._value == other._value

    def __hash__(self):
        return hash((type(self).__qualname__, self._value))

    def __repr__(self):
        name = type(self).__name__
        if self._value is None:
            return name
        args = self._value if isinstance(self._value, tuple) else (self._value,)
        return f"{name}({', '.join(_arg_repr(a) for a in args)})"


def _arg_repr(value) -> str:
    """An argument as the user writes it (``host_access_mode.read``, not its enum repr)."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


class singleton_property(property):
    """A property with no value, used as a ready-made instance (``sycl.restrict``).

    The class is the key (``has_property(restrict_key)``), and the instance is also
    accepted wherever a key is expected.
    """

    @classmethod
    def from_meta(cls, text: str) -> "property":
        if text != "":
            raise exception(errc.invalid, f"{cls.__name__} takes no value, got {text!r}")
        return cls()

    def __repr__(self):
        return type(self).__name__.removesuffix("_key")


def _key_of(key) -> type[property]:
    if isinstance(key, type) and issubclass(key, property):
        return key
    if isinstance(key, property):
        return type(key)
    raise exception(errc.invalid, f"{key!r} is not a property class")


class properties:
    """An immutable, order-insensitive list of properties (``sycl.properties``).

    Iteration is in a canonical order (by meta name, then class name), so anything
    derived from a list, such as cache keys and IR attributes, does not depend on the
    order the user wrote. Two values of one property class are ``errc.invalid``.

    >>> from pysycl.properties import restrict, alignment, restrict_key
    >>> p = properties(restrict, alignment(64))
    >>> p.has_property(restrict_key), p.has_property(restrict), len(p)
    (True, True, 2)
    """

    __slots__ = ("_by_key", "_hash")

    def __init__(self, *props: property):
        by_key: dict[type[property], property] = {}
        for p in props:
            if isinstance(p, type) and issubclass(p, singleton_property):
                p = p()  # allow passing the key of a no-value property
            if not isinstance(p, property):
                raise exception(errc.invalid, f"{p!r} is not a property")
            key = type(p)
            if key in by_key:
                raise exception(errc.invalid,
                                f"property {key.__name__} appears more than once in a property list")
            by_key[key] = p
        order = sorted(by_key.values(), key=lambda p: (p.meta_name or "", type(p).__name__))
        self._by_key = {type(p): p for p in order}
        self._hash = None

    def has_property(self, key) -> bool:
        """True if a property of class ``key`` (or of a singleton's class) is in the list."""
        return _key_of(key) in self._by_key

    def get_property(self, key) -> property:
        """The property of class ``key``; ``errc.invalid`` naming it if absent."""
        cls = _key_of(key)
        try:
            return self._by_key[cls]
        except KeyError:
            raise exception(errc.invalid,
                            f"property {cls.__name__} is not in {self!r}") from None

    def of_category(self, category: str) -> "properties":
        """The sub-list that may be attached to ``category`` (``"kernel"``, ...)."""
        if category not in CATEGORIES:
            raise exception(errc.invalid, f"unknown property category {category!r}")
        return properties(*(p for p in self if category in p.categories))

    def merge(self, other: "properties | None") -> "properties":
        """Union of two lists (embedded kernel properties + launch properties).

        The same property with different values is ``errc.invalid`` (kernel properties
        extension: a conflict found at run time raises ``invalid``).
        """
        if other is None:
            return self
        merged = dict(self._by_key)
        for p in other:
            mine = merged.get(type(p))
            if mine is not None and mine != p:
                raise exception(errc.invalid,
                                f"conflicting values for property {type(p).__name__}: {mine!r} and {p!r}")
            merged[type(p)] = p
        return properties(*merged.values())

    __or__ = merge

    def __iter__(self) -> Iterator[property]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, item) -> bool:
        if isinstance(item, property):
            return self._by_key.get(type(item)) == item
        return self.has_property(item)

    def __eq__(self, other):
        if not isinstance(other, properties):
            return NotImplemented
        return self._by_key == other._by_key

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(frozenset(self._by_key.values()))
        return self._hash

    def __repr__(self):
        return f"properties({', '.join(repr(p) for p in self)})"


def as_properties(props: "properties | Iterable[property] | property | None") -> properties:
    """Normalise what users pass as ``properties=`` (``None``, one property, a list).

    >>> len(as_properties(None))
    0
    """
    if props is None:
        return properties()
    if isinstance(props, properties):
        return props
    if isinstance(props, property) or (isinstance(props, type) and issubclass(props, property)):
        return properties(props)
    if isinstance(props, (list, tuple, set, frozenset)):
        return properties(*props)
    raise exception(errc.invalid, f"{props!r} is not a sycl.properties list")


#: What each category is, in the words of an error message.
CATEGORY_WORDS = {
    "kernel": "kernels", "kernel_arg": "kernel arguments", "global_variable": "device_global",
    "pointer": "annotated pointers", "build": "sycl.build/compile/link",
    "accessor": "accessors", "queue": "sycl.queue", "buffer": "sycl.buffer",
    "context": "sycl.context",
}


def properties_for(props, categories, owner: str) -> properties:
    """``props`` (None, a property, a list, a property list) as a list, checked for
    ``owner`` (``"kernel m.k"``, ``"sycl.device_global at f.py:3"``): every property
    must apply to one of ``categories``; one that does not is ``errc.invalid`` naming
    both (SYCL 2020 4.5.4: a property of another kind of object is an error).

    >>> from pysycl.properties import restrict
    >>> properties_for(restrict, ("global_variable",), "sycl.device_global x")
    Traceback (most recent call last):
    pysycl.errors.exception: sycl.device_global x does not take the property restrict (it applies to kernel arguments, annotated pointers)
    """
    if isinstance(categories, str):
        categories = (categories,)
    plist = as_properties(props)
    for p in plist:
        if not p.categories & set(categories):
            where = ", ".join(CATEGORY_WORDS.get(c, c) for c in sorted(p.categories))
            raise exception(errc.invalid, f"{owner} does not take the property {p!r} "
                            f"(it applies to {where})")
    return plist


def to_meta(props) -> dict[str, str]:
    """``{meta_name: meta_value}`` for every property that has an IR name.

    >>> from pysycl.properties import work_group_size, device_image_scope
    >>> to_meta(properties(work_group_size(8, 4), device_image_scope))
    {'sycl-device-image-scope': '', 'sycl-work-group-size': '8,4'}
    """
    return {p.meta_name: p.meta_value for p in as_properties(props) if p.meta_name is not None}


#: Key of a parameter's IR properties whose value is the ``annotation_string`` of an
#: ``annotated_ptr``: the codegen annotates the pointer with it (``llvm.ptr.annotation``);
#: a pysycl marker, never a parameter attribute.
POINTER_ANNOTATION = "pysycl-ptr-annotation"


def annotation_string(props) -> str:
    """The ``@llvm.ptr.annotation`` string of sycl_ext_oneapi_properties (``annotated_ptr`` members).

    A property with an empty value contributes its name alone, others ``name=value``;
    definitions are comma-joined after ``"sycl-properties:"`` (the IR adds the NUL).

    >>> from pysycl.properties import restrict, alignment
    >>> annotation_string(properties(restrict, alignment(32)))
    'sycl-properties:sycl-alignment=32,sycl-restrict'
    """
    parts = [name if value == "" else f"{name}={value}" for name, value in to_meta(props).items()]
    return "sycl-properties:" + ",".join(parts)


def from_meta(meta: dict[str, str]) -> properties:
    """Inverse of ``to_meta`` for registered properties; unknown names are ``errc.invalid``.

    >>> from_meta({"sycl-sub-group-size": "16"})
    properties(sub_group_size(16))
    """
    out = []
    for name, text in meta.items():
        cls = _registry_by_meta.get(name)
        if cls is None:
            raise exception(errc.invalid, f"unknown property meta name {name!r}")
        out.append(cls.from_meta(text))
    return properties(*out)
