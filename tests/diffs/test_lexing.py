"""Lexing a side once and the other only where it differs (review/diffs/lexing.py).

The reference is always Pygments itself: `lexer.get_tokens_unprocessed` on the whole text.
"""

from __future__ import annotations

import difflib
import random
import re
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from review.diffs import Lexed, RenderOptions, parse_patch, render_file, render_patch
from review.diffs.highlight import lexer_for
from review.diffs.layout import Row, rows_from_hunks
from review.diffs.lexing import (
    ALWAYS,
    LEX_STATS,
    _first_chars,
    _readable,
    css_class,
    fused_states,
    lex_against,
    lex_side,
)

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _pygments_lines(path: str, lines: list[str]) -> list[tuple[str, ...]]:
    """Pygments' own tokens for the joined side, as (class, text, class, text, …) per line."""
    if not lines:
        return []
    out: list[tuple[str, ...]] = [()]
    for _, ttype, value in lexer_for(path).get_tokens_unprocessed("\n".join(lines) + "\n"):
        for k, piece in enumerate(value.split("\n")):
            if k:
                out.append(())
            if piece:
                out[-1] = (*out[-1], css_class(ttype), piece)
    assert out[-1] == ()
    return out[:-1]


def _udiff(old: list[str], new: list[str], path: str = "m.py", n: int = 3) -> str:
    body = difflib.unified_diff(
        [f"{x}\n" for x in old], [f"{x}\n" for x in new], f"a/{path}", f"b/{path}", n=n
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(body)


def _against(path: str, old: list[str], new: list[str], n: int = 3) -> Lexed | None:
    """The new side of the hunks-only rendering, lexed against its old side."""
    file = parse_patch(_udiff(old, new, path, n))[0]
    sides, items = rows_from_hunks(file)
    same = {
        i.new_pos: i.old_pos
        for i in items
        if isinstance(i, Row) and i.kind == "equal" and i.new_pos is not None
        if i.old_pos is not None
    }
    ref = lex_side(lexer_for(path), sides.old)
    assert list(ref.lines) == _pygments_lines(path, sides.old)
    lexed = lex_against(lexer_for(path), sides.new, ref, sides.old, same)
    if not sides.new:
        assert lexed is None  # nothing to lex (a deletion's empty side)
        return None
    if lexed is None:
        # Lexers with their own token loop (CLexer's) have no state to read: lexed whole.
        assert not _readable(lexer_for(path))
        return None
    assert list(lexed.lines) == _pygments_lines(path, sides.new)
    return lexed


def _edited(lines: list[str], rng: random.Random, edits: int) -> list[str]:
    new = list(lines)
    for _ in range(edits):
        i = rng.randrange(len(new))
        kind = rng.random()
        if kind < 0.4:
            new[i] = new[i].replace("self", "this", 1) + "  # checked"
        elif kind < 0.6:
            new[i:i] = ['"""', "a docstring opened here"]  # the state changes below
        elif kind < 0.8:
            new[i:i] = ["if value is None:", "    raise ValueError('value')"]
        else:
            del new[i : i + 2]
    return new


@pytest.mark.parametrize("module", ["argparse.py", "textwrap.py", "string.py", "csv.py"])
def test_it_lexes_edited_modules_as_pygments_does_whole(module: str) -> None:
    lines = (STDLIB / module).read_text(encoding="utf-8").rstrip("\n").split("\n")
    rng = random.Random(module)
    for edits in (1, 5, 30):
        new = _edited(lines, rng, edits)
        for n in (0, 1, 3, 10):
            _against(module, lines, new, n)


SOURCES = {
    "x.js": ["const a = `multi", "line ${b}`;", "/* open", "close */ let c = 1;", "f(a, c);"],
    "x.c": [  # CLexer has its own loop: lexed whole
        "#include <stdio.h>",
        "/* a",
        " b */",
        'char *s = "x";',
        "int main() { return 0; }",
    ],
    "x.html": ["<p>", "<script>", "var a = 1;", "</script>", "<!-- c", "-->", "</p>"],
    "x.py": ['s = """', "inside", '"""', "x = 1", "# c", "y = 'a'", "def f():", "    pass"],
}


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(sorted(SOURCES)),
    st.lists(st.integers(min_value=0, max_value=7), min_size=4, max_size=40),
    st.lists(st.integers(min_value=0, max_value=7), min_size=4, max_size=40),
    st.integers(min_value=0, max_value=4),
)
def test_it_lexes_any_edit_as_pygments_does_whole(
    path: str, a: list[int], b: list[int], n: int
) -> None:
    source = SOURCES[path]
    old = [source[i % len(source)] for i in a]
    new = [source[i % len(source)] for i in b]
    if old != new:
        _against(path, old, new, n)


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        # HtmlLexer's script content runs up to a closing tag however many lines later: on the
        # old side (none) each line ends the script, on the new side the lines before the
        # closing tag are one script token, though they are the same lines.
        ("x.html", ["<script>", "<p>", "<p>", "<p>"], ["<script>", "<p>", "<p>", "</script>"]),
        # A fenced code block is one token up to its closing fence, wherever that is.
        ("x.md", ["```", "code"], ["```", "code", "```"]),
    ],
)
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_it_relexes_what_a_rule_looked_ahead_at_across_lines(
    path: str, old: list[str], new: list[str], n: int
) -> None:
    _against(path, old, new, n)


def test_it_relexes_what_follows_a_change_of_state() -> None:
    # Opening a docstring turns every later line into string on the new side only: the old
    # side's tokens for those lines must not be copied.
    old = [f"value_{i} = compute({i})" for i in range(30)]
    new = ['"""', *old]
    lexed = _against("m.py", old, new, n=30)
    assert lexed is not None
    assert all(cls.startswith("s") for line in lexed.lines[1:] for cls in line[::2])
    (rendered,) = render_patch(_udiff(old, new, n=30))
    assert 'class="s2">value_29 = compute(29)' in rendered.html


def test_it_copies_the_shared_lines_instead_of_lexing_them() -> None:
    old = [f"value_{i} = compute({i})" for i in range(400)]
    new = list(old)
    new[200] = "value_200 = compute(2000)"
    LEX_STATS.clear()
    _against("m.py", old, new, n=200)
    # The old side (401 lines: 200 context each way) whole, the new side a few lines.
    assert LEX_STATS["sides"] == 1
    assert LEX_STATS["lines"] - 401 < 10


class _Store:
    """A LexCache in a dict (the shared-cache one is tested in tests/review)."""

    def __init__(self) -> None:
        self.data: dict[str, Lexed] = {}

    def get(self, key: str) -> Lexed | None:
        return self.data.get(key)

    def set(self, key: str, value: Lexed) -> None:
        self.data[key] = value


def test_a_shared_base_file_is_lexed_once_and_renders_the_same() -> None:
    base = [f"value_{i} = compute({i})" for i in range(300)]
    base_text = "\n".join(base) + "\n"
    patches = []
    for k in range(4):
        new = list(base)
        new[50 * k + 10] = f"value_x = compute({k})"
        new.insert(50 * k + 30, '"""')  # a state change the copying must respect
        patches.append(_udiff(base, new))
    files = [parse_patch(p)[0] for p in patches]

    LEX_STATS.clear()
    plain = [render_file(f, old_text=base_text).html for f in files]
    assert LEX_STATS["sides"] == 4  # the base once per candidate

    store = _Store()
    LEX_STATS.clear()
    shared = [render_file(f, old_text=base_text, lex_cache=store).html for f in files]
    assert shared == plain
    assert LEX_STATS["sides"] == 1  # the base once for the group
    assert len(store.data) == 1
    # Each candidate's new side: its changed stretch (to the end: the docstring runs on).
    assert LEX_STATS["lines"] < 300 + sum(300 - (50 * k + 10) for k in range(4)) + 20


def test_it_renders_the_same_without_highlighting_state() -> None:
    # Above the highlighting threshold nothing is lexed, cache or not.
    base = [f"v{i} = {i}" for i in range(20)]
    file = parse_patch(_udiff(base, [*base[:5], "v5 = 50", *base[6:]]))[0]
    store = _Store()
    LEX_STATS.clear()
    out = render_file(
        file,
        old_text="\n".join(base) + "\n",
        lex_cache=store,
        options=RenderOptions(highlight_max_lines=0),
    )
    assert not out.highlighted and not store.data and LEX_STATS["sides"] == 0


# Each state's rules are fused into one regex (lexing._fused): the same first matching rule,
# found in one call. Texts made of many languages' delimiters, so that every state is entered.
PIECES = [
    '"', "'", "`", '"""', "'''", "/*", "*/", "//", "#", "<", ">", "</", "/>", "{", "}", "(",
    ")", "[", "]", "\n", " ", "\t", "x", "Foo", "1", "0x1f", "1.5e3", "if", "def", "class",
    "fn", "let", "$", "${", "@", "\\", "<!--", "-->", "<script>", "</script>", "<style>",
    "=", ";", ":", "::", "r\"", "f\"", "b'", "%", "-", "+", "*", "|", "&&", "?", "!", ".",
    ",", "end", "do", "\\n", "=>", "<<EOF", "EOF", "---", "- ", "key: ", "[section]", "```",
]  # fmt: skip
LEXED_PATHS = [
    "x.py", "x.js", "x.ts", "x.tsx", "x.go", "x.rs", "x.java", "x.kt", "x.rb", "x.php",
    "x.html", "x.css", "x.scss", "x.json", "x.yaml", "x.toml", "x.ini", "x.sh", "x.sql",
    "x.md", "x.rst", "x.xml", "x.lua", "x.swift", "x.scala", "x.hs", "x.ex", "x.pl",
    "Makefile", "Dockerfile", "x.cfg", "x.proto", "x.tex", "x.vue", "x.r", "x.jl",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(LEXED_PATHS),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=80),
)
def test_the_fused_rules_lex_as_pygments_does(path: str, pieces: list[str]) -> None:
    lines = "".join(pieces).split("\n")
    lexer = lexer_for(path)
    if not _readable(lexer):
        return
    assert list(lex_side(lexer, lines).lines) == _pygments_lines(path, lines)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(LEXED_PATHS),
    st.lists(st.sampled_from([*PIECES, "é", "\u00a0", "Ωx", "K"]), min_size=1, max_size=60),
)
def test_the_rules_a_character_may_start_match_as_all_the_rules_do(
    path: str, pieces: list[str]
) -> None:
    # Each fused state is matched by the alternation of only the rules that may start with
    # the text's character (_Fused.by_char): at every position of the text, in every state,
    # the same rule matches the same text as the whole state's alternation, or none does.
    lexer = lexer_for(path)
    if not _readable(lexer):
        return
    text = "".join(pieces) + "\n"
    table = fused_states(lexer)  # type: ignore[arg-type]
    for state in lexer._tokens:  # type: ignore[attr-defined]
        fused = table[state]
        if fused is None:
            continue
        for pos in range(len(text) + 1):
            whole = fused.match(text, pos)
            match, rules = fused.by_char[text[pos : pos + 1]]
            picked = match(text, pos)
            assert (picked is None) == (whole is None), (path, state, pos)
            if picked is not None and whole is not None:
                assert picked.span() == whole.span(), (path, state, pos)
                assert rules[picked.lastindex or 0] is fused.rules[whole.lastindex or 0]


def test_a_rule_starts_only_with_the_characters_it_can_start_with() -> None:
    # What the dispatch reads of a rule's pattern: its first character, past anchors,
    # lookarounds and optional parts; None where it may match nothing.
    def first(pattern: str, flags: int = 0) -> frozenset[str] | None:
        return _first_chars(re.compile(pattern, flags))

    assert first(r"\bdef\b") == {"d"}
    assert first(r"(?<!\.)(?:if|else)\b") == {"i", "e"}
    assert first(r"[^\S\n]+") == {" ", "\t", "\x0b", "\x0c", "\r"} | {
        chr(c) for c in range(0x1C, 0x20)
    }
    assert first(r"r?'") == {"r", "'"}
    assert first(r"(?i)select") == {"s", "S"}
    assert first(r"[a-z]*") is None  # may match nothing: any character
    assert first(r"\d+") == frozenset("0123456789")
    assert first(r"[^a]") == frozenset(chr(c) for c in range(128)) - {"a"}
    assert first(r".", re.DOTALL) == frozenset(chr(c) for c in range(128))
    assert first(r"(?=x)") is None
    # Case-insensitive: the Kelvin sign is a k, as the regex engine matches it.
    assert first("(?i)\u212a") == {"k", "K"}


def test_most_states_of_common_lexers_fuse() -> None:
    # The fused regex is what makes lexing faster than Pygments' own loop: a lexer whose
    # states stopped fusing (a Pygments upgrade) would still be right, only slower.
    for path in ("x.py", "x.js", "x.ts", "x.html", "x.css", "x.go", "x.rs", "x.java"):
        lexer = lexer_for(path)
        assert _readable(lexer), path
        tokendefs = lexer._tokens  # type: ignore[attr-defined]
        table = fused_states(lexer)  # type: ignore[arg-type]
        fused = [table[state] is not None for state in tokendefs]
        assert sum(fused) >= 0.8 * len(fused), path


def test_it_knows_where_a_rule_may_look_any_number_of_lines_ahead() -> None:
    # Script content runs to its closing tag from wherever it starts.
    html = fused_states(lexer_for("x.html"))  # type: ignore[arg-type]
    assert html.guards_of("script-content") is ALWAYS
    # Python's docstring rule scans for the closing quotes only after opening ones.
    guard = fused_states(lexer_for("m.py")).guards_of("root")  # type: ignore[arg-type]
    assert guard is not None and guard is not ALWAYS
    text = 'x = 1\n"""doc\n'
    assert not guard(text, 0) and guard(text, 6)
    # A line comment ends at its line's end: JavaScript's root looks far only for others.
    js = fused_states(lexer_for("x.js")).guards_of("root")  # type: ignore[arg-type]
    assert js is not None and not js("// c\n", 0) and js("/* c\n", 0)


def test_clear_caches_forgets_every_lexing_analysis() -> None:
    # The cold-start benchmarks rely on it: a cache it missed made the "cold" run warm.
    from review.diffs import highlight, lexing

    lex_side(lexer_for("a.py"), ["def f(x):", "    return x  # done"])
    assert lexing._far_cut.cache_info().currsize > 0
    assert lexing._FUSED and highlight._lexer_for_name.cache_info().currsize > 0
    highlight.clear_caches()
    assert lexing._far_cut.cache_info().currsize == 0
    assert not lexing._FUSED and highlight._lexer_for_name.cache_info().currsize == 0
