"""Reading rendered tables back with the standard library's HTML parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    text: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.texts: list[str] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, dict(attrs))
        self.elements.append(el)
        if tag not in {"col"}:
            self._open.append(el)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        for el in self._open:
            el.text.append(data)


def parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    collector.close()
    return collector


def code_cells(html: str, side: str, cls: str) -> list[Element]:
    return [
        el
        for el in parse(html).elements
        if el.tag == "td"
        and el.attrs.get("data-side") == side
        and "d-code" in el.classes
        and cls in el.classes
    ]


def cell_text(el: Element) -> str:
    return "".join(el.text)
