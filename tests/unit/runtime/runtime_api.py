"""The public names the runtime tests use, as ``import pysycl as sycl`` will give them.

Until the facade (``pysycl/__init__.py``) re-exports the runtime, build the same
namespace from the layers that define the names.
"""
import types as _types

import pysycl

if hasattr(pysycl, "queue"):
    sycl = pysycl
else:
    from pysycl import errors, properties, runtime, types

    sycl = _types.SimpleNamespace()
    for module in (runtime,):
        for name in module.__all__:
            setattr(sycl, name, getattr(module, name))
    sycl.exception, sycl.errc = errors.exception, errors.errc
    sycl.aspect, sycl.no_init, sycl.properties = (properties.aspect, properties.no_init,
                                                  properties.properties)
    sycl.read_only, sycl.write_only, sycl.read_write = (types.read_only, types.write_only,
                                                        types.read_write)
