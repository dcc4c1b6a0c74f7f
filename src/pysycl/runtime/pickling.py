"""Runtime objects that cannot be pickled say so, and why.

Queues, contexts, events, buffers and accessors stand for state of this process (driver
handles, pending commands, device copies); a copy in another process would point at
nothing. ``pickle`` gets a ``TypeError`` (also a ``sycl.exception`` with ``errc.invalid``)
naming the object and what to send instead. ``sycl.usm_array`` pickles by value
(``runtime/usm.py``); a ``sycl.kernel_bundle`` as its SYCLBIN bytes
(``runtime/bundle_pickling.py``).

>>> import pickle, pysycl as sycl
>>> pickle.dumps(sycl.queue())
Traceback (most recent call last):
...
pysycl.runtime.pickling.pickling_error: cannot pickle sycl.queue: ...
"""
from __future__ import annotations

from ..errors import errc, exception


class pickling_error(exception, TypeError):
    """Pickling a runtime object that only means something in this process."""


def not_picklable(what: str, instead: str):
    """A ``__reduce__`` that refuses: ``cannot pickle sycl.<what>: ...; <instead>``."""
    def __reduce__(self):
        raise pickling_error(errc.invalid, f"cannot pickle sycl.{what}: it belongs to this "
                             f"process (driver handles, pending commands); {instead}")
    __reduce__.__qualname__ = f"{what}.__reduce__"
    return __reduce__

