"""Where a warning belongs: the user's code, not pysycl's frames above it."""
from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_stacklevel() -> int:
    """The ``stacklevel`` (for ``warnings.warn`` called by the caller) of the first frame
    outside pysycl."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_ROOT):
        frame, level = frame.f_back, level + 1
    return level
