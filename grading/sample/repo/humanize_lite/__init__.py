"""Readable text for sizes, durations and large numbers."""

from humanize_lite.durations import format_duration
from humanize_lite.numbers import intcomma, ordinal
from humanize_lite.sizes import format_bytes, parse_bytes

__all__ = ["format_bytes", "format_duration", "intcomma", "ordinal", "parse_bytes"]
__version__ = "0.3.1"
