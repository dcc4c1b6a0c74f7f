"""MkDocs hook: a link from a page to a file of the repository outside ``docs/`` (the
conformance table links each row to its test) becomes the file's path as code, since
the site does not publish those files. Links between pages stay links and are checked
by ``mkdocs build --strict``."""
from __future__ import annotations

import posixpath
import re

LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown, page, config, files):
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(match):
        text, target = match.group(1), match.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return match.group(0)
        resolved = posixpath.normpath(posixpath.join("docs", here, target))
        if resolved.startswith("docs/"):
            return match.group(0)
        return f"{text} (`{resolved}`)" if text else f"`{resolved}`"

    return LINK.sub(rewrite, markdown)
