"""The OpenAPI schema endpoint, readable in a browser."""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response


class SchemaView(SpectacularAPIView):
    """The schema as drf-spectacular serves it, except that a browser opening the URL (it asks
    for text/html, and names no format) is shown the YAML as text instead of being made to
    download a file of the `application/vnd.oai.openapi` type it cannot display. Clients and
    the docs page (which ask for JSON or YAML) get exactly what they got before."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        wants_page = "text/html" in request.headers.get("Accept", "")
        if wants_page and "format" not in request.query_params and response.status_code == 200:
            response.content_type = "text/plain; charset=utf-8"
        return response
