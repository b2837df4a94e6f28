"""Hostile inputs pushed through every input of the product, and the checks that they came out
inert. `MARK` sits inside every executable payload: if it ever shows up in an attribute, a script
or an event handler of a page we serve, something was injected."""

from __future__ import annotations

from html.parser import HTMLParser

MARK = "gagarxss"

PAYLOADS: dict[str, str] = {
    "script": f'<script>alert("{MARK}")</script>',
    "img-onerror": f"<img src=x onerror=alert('{MARK}')>",
    "attribute-breakout": f'" onmouseover="alert(\'{MARK}\')" x="',
    "javascript-url": f"javascript:alert('{MARK}')",
    "svg-onload": f"<svg onload=alert('{MARK}')>",
    "svg-script": f"<svg><script>alert('{MARK}')</script></svg>",
    "template-variable": "{{ 7*7 }}",
    "template-tag": "{% debug %}",
    "sql": "'; DROP TABLE grading_task; --",
    "traversal-posix": "../../etc/passwd",
    "traversal-windows": "..\\..\\win.ini",
    "bidi": "evil\u202egnp.exe\u2066hidden\u2069\u200f",
    "broken-html": "</td></tr></table></pre></details><div <p>unclosed <!-- <",
    "nul": "before\x00after",
    "huge": "A" * (1 << 20) + f"<script>{MARK}</script>",
}

# What the database cannot hold in a text column (PostgreSQL refuses NUL), and what is longer
# than a bounded column: both must be refused with a clear message, never truncated or mangled.
NUL = "nul"
HUGE = "huge"


def fits_a_name(name: str) -> bool:
    """Payloads that can be an identifier, a file name or a form's short field."""
    return name not in (NUL, HUGE)


def file_name(name: str, payload: str) -> str:
    """A patch file name carrying the payload (traversal payloads are the whole path)."""
    if name.startswith("traversal"):
        return payload
    return f"src/{payload}.py"


def new_file_patch(path: str, line: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        f"+++ b/{path}\n"
        "@@ -0,0 +1,2 @@\n"
        f"+{line}\n"
        "+ok = True\n"
    )


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=…>: an event handler attribute")
            if name in ("href", "src", "action", "formaction") and value.startswith("javascript:"):
                self.problems.append(f"<{tag} {name}={value[:40]!r}>: a javascript: URL")
            if MARK in name:
                self.problems.append(f"<{tag}>: an injected attribute {name[:40]!r}")
        # (The admin draws its icons from an inline <svg> sprite: svg alone is no sign.)
        if tag in ("iframe", "object", "embed") or (tag == "img" and ("src", "x") in attrs):
            self.problems.append(f"<{tag}>: an injected element")
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and MARK in data:
            self.problems.append(f"a script runs the payload: {data[:60]!r}")


def injection_problems(html: str) -> list[str]:
    """Elements, attributes or scripts that only an unescaped payload could have produced."""
    scan = _Scan()
    scan.feed(html)
    scan.close()
    raw = [
        f"{name} appears unescaped"
        for name, payload in PAYLOADS.items()
        if "<" in payload and payload in html
    ]
    return scan.problems + raw
