"""Reading rendered tables back with the standard library's HTML parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    text: list[str] = field(default_factory=list)
    cells: list[Element] = field(default_factory=list)  # a row's cells

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
        if tag == "td":
            row = next((o for o in reversed(self._open) if o.tag == "tr"), None)
            if row is not None:
                row.cells.append(el)
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
    """The code cells of one side that show a line, in order. Line numbers sit on the row
    (`data-o`, `data-n`); each cell returned carries its row's number for that side as
    `data-line` and the side as `data-side`."""
    attr, index = ("data-o", 1) if side == "old" else ("data-n", 3)
    out = []
    for row in parse(html).elements:
        if row.tag != "tr" or row.attrs.get(attr) is None or len(row.cells) < 4:
            continue
        cell = row.cells[index]
        if "d-code" in cell.classes and cls in cell.classes:
            cell.attrs["data-side"] = side
            cell.attrs["data-line"] = row.attrs[attr]
            out.append(cell)
    return out


def cell_text(el: Element) -> str:
    return "".join(el.text)
