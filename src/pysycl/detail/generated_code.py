"""Functions made from generated source (argument packers specialised to one kernel
signature) get a real file name: tracebacks through them show
``File "<pysycl packer kernel vadd>", line 3`` and the generated line, never
``<string>``.

>>> scope = define(["def twice(x):", "    return 2 * x"], "<pysycl example>", {})
>>> scope["twice"](21), scope["twice"].__code__.co_filename
(42, '<pysycl example>')
>>> import linecache; linecache.getline("<pysycl example>", 2).strip()
'return 2 * x'
"""
from __future__ import annotations

import linecache


def define(lines: list[str], filename: str, scope: dict) -> dict:
    """Run the generated ``lines`` in ``scope`` as the file ``filename`` (its text is
    registered with ``linecache``, so tracebacks show the generated line) and return
    ``scope``. A second definition under the same name replaces the first's text."""
    source = "\n".join(lines) + "\n"
    # mtime None: linecache.checkcache keeps entries it cannot stat (a generated file).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - source built by pysycl
    return scope
