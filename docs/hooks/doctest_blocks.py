"""Griffe extension for the API reference: the ``>>>`` examples of pysycl's docstrings
(plain doctest text, as ``python -m doctest`` reads it) are shown as Python console code
blocks, not as paragraphs of Markdown."""
from __future__ import annotations

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with each run of doctest lines (``>>>``, ``...`` and the output up to a
    blank line) inside a ```` ```pycon ```` fence."""
    out, block, indent = [], [], ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not block and stripped.startswith(">>>"):
            indent = line[:len(line) - len(stripped)]
            block.append(line)
        elif block and stripped:
            block.append(line)
        else:
            if block:
                out += [f"{indent}```pycon", *block, f"{indent}```"]
                block = []
            out.append(line)
    if block:
        out += [f"{indent}```pycon", *block, f"{indent}```"]
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
