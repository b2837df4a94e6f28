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
        # A scan of the bytes first: most pages hold no such character and stay as they are.
        if html_needs_visible(response.content):
            charset = response.charset
            text = response.content.decode(charset, "replace")
            response.content = visible_html(text).encode(charset)
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response
