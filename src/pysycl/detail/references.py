"""Objects sent to another process by reference: module and qualified name.

Kernels, device functions, ``specialization_id``s and ``device_global``s mean the same
thing in every process that imports their module, so ``pickle`` sends where to find
them, as it does for functions, and the receiver looks them up (an MPI rank, a Dask
worker). Objects made inside a function have no such name and refuse.

>>> import collections
>>> lookup("collections", "OrderedDict") is collections.OrderedDict
True
"""
from __future__ import annotations

import importlib
import pickle

from ..errors import errc, exception


def lookup(module_name: str, qualname: str):
    """The object bound to ``qualname`` in module ``module_name`` (imported if needed)."""
    target = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def name_of(obj, module_name: str, container: str | None) -> str | None:
    """The qualified name ``obj`` is bound to in module ``module_name`` (at its top level
    when ``container`` is None, else in the class of that qualified name); None when no
    such name holds it."""
    try:
        scope = lookup(module_name, container) if container else \
            importlib.import_module(module_name)
    except (ImportError, AttributeError):
        return None
    for name, value in vars(scope).items():
        if value is obj:
            return f"{container}.{name}" if container else name
    return None


def reduce_by_reference(obj, what: str, module_name: str, qualname: str | None):
    """``obj.__reduce__``: ``(resolve, (module, qualname, type name))``, or a
    ``PicklingError`` saying why ``obj`` (``what``) cannot be found again by name."""
    if qualname is None:
        raise pickle.PicklingError(
            f"{what} cannot be pickled: it is sent by reference (module and name) and it "
            f"is not bound to a name at the top level of module {module_name} or of a class "
            "there (made inside a function, or held in a list or dict); define it at the "
            "top level of a module the receiving process can import")
    return (resolve, (module_name, qualname, type(obj).__name__))


def resolve(module_name: str, qualname: str, type_name: str):
    """Unpickle an object sent by reference: look it up in this process."""
    try:
        found = lookup(module_name, qualname)
    except (ImportError, AttributeError) as e:
        raise exception(errc.invalid, f"{type_name} {module_name}.{qualname} is not "
                        f"importable in this process ({type(e).__name__}: {e}); the receiving "
                        "process must be able to import the module that defines it") from None
    if type(found).__name__ != type_name:
        raise exception(errc.invalid, f"{module_name}.{qualname} is {type(found).__name__}, "
                        f"not a {type_name}, in this process")
    return found
