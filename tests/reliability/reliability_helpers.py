"""Source preludes for the subprocess tests of this folder."""
from __future__ import annotations

import textwrap


def device_prelude(device) -> str:
    """Source that binds ``q`` to a queue on the same device as ``device`` in a subprocess."""
    backend = device.backend.name
    index = [d for d in device.get_devices() if d.backend == device.backend].index(device)
    return textwrap.dedent(f"""
        import gc, pickle, sys
        import numpy as np
        import pysycl as sycl
        dev = [d for d in sycl.device.get_devices() if d.backend.name == {backend!r}][{index}]
        q = sycl.queue(dev)
    """)
