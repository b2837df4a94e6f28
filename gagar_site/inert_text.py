"""The safety net under every HTML page: control, bidi and zero-width characters in its text
are shown as marks (`␛`, `⟨U+202E⟩`), never sent raw.

Pages make untrusted text visible where they show it (`visible` in presenters and templates),
but text reaches a page through many paths no template sees: the admin's change lists, filters,
breadcrumbs and "recent actions", form errors, messages. A raw ESC there reaches a terminal
when the text is copied; an RLO reorders the text around it. Only text nodes change (see
`visible_html`): markup and attribute values keep the real value, so a `data-path` still names
the real file and a form still submits what it holds. JSON, CSV and other bodies are data and
keep their values.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBase

from grading.domain.hostile_text import html_needs_visible, visible_html


def inert_html(content: bytes, charset: str = "utf-8") -> bytes:
    """An HTML page's bytes with every such character in its text shown as a mark."""
    # A scan of the bytes first: most pages hold no such character and stay as they are.
    if not html_needs_visible(content):
        return content
    return visible_html(content.decode(charset, "replace")).encode(charset)


def mark_inert(response: HttpResponse) -> None:
    """For a view that ran `inert_html` on what it rendered itself and added only bytes that
    are inert by construction (the review page splices megabytes of diff HTML, in which
    review.diffs shows every such character as a mark): the net skips a second scan."""
    response.inert_text_checked = True  # type: ignore[attr-defined]


class InertTextMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            not isinstance(response, HttpResponse)  # streamed and file responses pass
            or not response.get("Content-Type", "").startswith("text/html")
            or response.get("Content-Encoding")
        ):
            return response
        if getattr(response, "inert_text_checked", False):
            return response
        content = inert_html(response.content, response.charset)
        if content is not response.content:
            response.content = content
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(content))
        return response
