"""Problem statements as Markdown, rendered safely (pure: no Django).

Problem statements are untrusted text written for GitHub. They are rendered with CommonMark
and raw HTML *off*, so any tag in them is shown as text, never parsed; link targets go through
markdown-it's own check (no `javascript:`, `vbscript:`, `file:` or non-image `data:` URLs);
images are not loaded (a remote image would tell its server who is reviewing, and when) but
shown as their link. The input must already be redacted: this only formats.
"""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def _image_as_link(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    src = escapeHtml(str(token.attrGet("src") or ""))
    alt = escapeHtml(token.content or src)
    return f'<a href="{src}" rel="nofollow noopener noreferrer">image: {alt}</a>'


def _link_open(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


_MD.add_render_rule("image", _image_as_link)
_MD.add_render_rule("link_open", _link_open)


def markdown_html(text: str) -> str:
    """HTML for `text` as Markdown; every character of `text` is escaped or is Markdown syntax."""
    return str(_MD.render(text or ""))
