"""Compressed responses (gzip), with the BREACH attack kept in mind.

BREACH recovers a secret from a compressed HTTPS response by reflecting guesses of it in the same
response and watching the compressed length. It needs a secret and attacker-chosen text in one
compressed body. Here:
- only GET and HEAD responses are compressed: a POST's answer may echo the submitted form (a
  login form shows the typed username again next to the CSRF token);
- a GET with a query string is compressed only when its view marks the response
  `compress_safe` (its parameters are validated ids or aliases, never echoed text such as a
  trajectory search);
- the CSRF token in a page is masked afresh for every response (Django), so there is no fixed
  secret to recover, and Django's GZipMiddleware adds random-length padding to every body.
The review page (megabytes of diff HTML that gzip to a tenth) is what this is for.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware


def mark_compress_safe(response: HttpResponseBase) -> HttpResponseBase:
    """For views whose query parameters are validated, never reflected as typed."""
    response.compress_safe = True  # type: ignore[attr-defined]
    return response


class CompressionMiddleware(GZipMiddleware):
    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if request.method not in ("GET", "HEAD"):
            return response
        if request.META.get("QUERY_STRING") and not getattr(response, "compress_safe", False):
            return response
        return super().process_response(request, response)
