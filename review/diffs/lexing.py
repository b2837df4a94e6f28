"""Lexing one side of a file into per-line tokens, once per distinct text, and the other side
only where it differs.

Both sides of a diff are mostly the same lines (context; with the base file, the whole file
but the hunks), and candidates of one group share base files. Pygments' `RegexLexer` is a
state machine whose next token depends only on the text and its state stack, so when the
second side reaches the start of a line it shares with the first side, in the same state, the
first side's tokens are its tokens until the next difference. `lex_against` lexes only the
changed stretches that way and copies the rest; `lex_side` records the state stack at every
line start so that it can. A shared base file is lexed once per group through a `LexCache`.

Regex lookahead and lookbehind can see past a token: copying starts `MARGIN` lines after a
difference and stops `MARGIN` lines before the next, in text both sides hold. Some rules look
any number of lines ahead (HtmlLexer's script content runs to the closing tag; an unclosed
comment or docstring rule scans to the end of the text before it fails): a line where such a
rule was tried (`Lexed.far`, found by `far_guards`) is never copied unless everything after it
is the same on both sides. Lexers that are
not a plain `RegexLexer` (their own `get_tokens_unprocessed`, an `ExtendedRegexLexer`'s
context, `TextLexer`) have no readable state: their sides are lexed whole.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Protocol

from pygments.lexer import ExtendedRegexLexer, Lexer, RegexLexer
from pygments.token import STANDARD_TYPES, Error, Whitespace, _TokenType

# Lines of shared text kept between a difference and copied tokens (see the module docstring):
# with none, edited standard library modules come out wrong (tests/diffs/test_lexing.py).
MARGIN = 1

# One line's tokens as a flat tuple: the CSS class and text of each token's part on the line,
# (class, text, class, text, …). Flat rather than a pair per piece: a big diff's sides hold
# hundreds of thousands of pieces, and a tuple each was most of what the collector counted.
Pieces = tuple[str, ...]
# Bump when `Lexed` changes shape: lexed sides are kept in the shared cache under it.
LEXED_VERSION = "2"
State = tuple[str, ...]

# What was lexed, for benchmarks and tests: "sides" lexed from their start, "runs" of changed
# stretches lexed against another side, and "lines" that went through Pygments.
LEX_STATS: Counter[str] = Counter()


@dataclass(frozen=True, slots=True)
class Lexed:
    """One side's tokens per line, and the lexer's state stack at each line's start (None
    where a token runs across the line break, or the lexer's state cannot be read)."""

    lines: tuple[Pieces, ...]
    states: tuple[State | None, ...]
    # Lines where a rule that can look any number of lines ahead was tried (see `far_guards`).
    far: frozenset[int] = frozenset()


class LexCache(Protocol):
    """Where lexed sides are kept by content (a group's shared base files)."""

    def get(self, key: str) -> Lexed | None: ...

    def set(self, key: str, value: Lexed) -> None: ...


_CLASS_OK = re.compile(r"[A-Za-z0-9_-]*")


@lru_cache(maxsize=1024)
def css_class(ttype: _TokenType) -> str:
    """Pygments' short CSS class for a token type (same rule as HtmlFormatter)."""
    suffix = ""
    name = STANDARD_TYPES.get(ttype)
    current: _TokenType | None = ttype
    while name is None and current is not None:
        suffix = current[-1] + suffix
        current = current.parent
        name = STANDARD_TYPES.get(current) if current is not None else None
    if name is None:  # unreachable for real token types: `Token` itself is standard
        return ""
    cls = str(name + suffix)
    # Whitespace spans carry no colour; leaving them out makes the HTML smaller.
    if cls == "w" or not _CLASS_OK.fullmatch(cls):
        return ""
    return cls


def _readable(lexer: Lexer) -> bool:
    return (
        isinstance(lexer, RegexLexer)
        and not isinstance(lexer, ExtendedRegexLexer)
        and type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed
    )


def _line_starts(lines: Sequence[str]) -> list[int]:
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    return starts


def _transition(statestack: list[str], new_state: Any) -> None:
    """Apply one rule's state change to the stack, as RegexLexer does."""
    if isinstance(new_state, tuple):
        for state in new_state:
            if state == "#pop":
                if len(statestack) > 1:
                    statestack.pop()
            elif state == "#push":
                statestack.append(statestack[-1])
            else:
                statestack.append(state)
    elif isinstance(new_state, int):
        # Pop, but keep at least one state on the stack.
        if abs(new_state) >= len(statestack):
            del statestack[1:]
        else:
            del statestack[new_state:]
    elif new_state == "#push":
        statestack.append(statestack[-1])
    else:
        raise ValueError(f"wrong state def: {new_state!r}")


def _anywhere(_text: str, _pos: int) -> bool:
    return True


# A state's guard (see `far_guards`): None where no rule looks far, ALWAYS where one may at
# any position, else a match that succeeds where one may.
ALWAYS: Callable[[str, int], object] = _anywhere
Guards = Callable[[str, int], object] | None
# The flags a rule's part keeps inside a state's one guard pattern.
_SCOPED = re.IGNORECASE | re.MULTILINE | re.DOTALL

try:  # the standard library's own regex parser and compiler (private; without them, no guards)
    _parser: Any = importlib.import_module("re._parser")
    _compiler: Any = importlib.import_module("re._compiler")
    _c: Any = importlib.import_module("re._constants")
    _REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT)
    _ONE_CHAR = (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.CATEGORY)
    _SPACES = (_c.CATEGORY_SPACE, _c.CATEGORY_UNI_SPACE)
except (ImportError, AttributeError):  # pragma: no cover (CPython has them)
    _parser = _compiler = _c = None


def _spaces_only(op: Any, av: Any) -> bool:
    """Whether a one-character item matches only whitespace (then a repeat of it crosses
    lines only through blank ones, which MARGIN's lines of context do not count on)."""
    if op is _c.LITERAL:
        return chr(av).isspace()
    if op is _c.CATEGORY:
        return av in _SPACES
    if op is _c.IN:
        for sub, arg in av:
            if sub is _c.LITERAL and chr(arg).isspace():
                continue
            if sub is _c.RANGE and all(chr(c).isspace() for c in range(arg[0], arg[1] + 1)):
                continue
            if sub is _c.CATEGORY and arg in _SPACES:
                continue
            return False
        return True
    return False


def _children(op: Any, av: Any, flags: int) -> list[tuple[Any, int]]:
    """The sequences nested in one parsed item, with the flags they are matched under."""
    if op in _REPEATS:
        return [(av[2], flags)]
    if op is _c.SUBPATTERN:
        return [(av[3], (flags | av[1]) & ~av[2])]
    if op is _c.ATOMIC_GROUP:
        return [(av, flags)]
    if op is _c.BRANCH:
        return [(alt, flags) for alt in av[1]]
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [(av[1], flags)]
    if op is _c.GROUPREF_EXISTS:
        return [(b, flags) for b in av[1:] if b is not None]
    return []


def _crosses_lines(body: Any, state: Any, flags: int) -> bool:
    """Whether a repeated pattern can match a line break that is not mere whitespace in
    between lines: one of its one-character items matches "\n" (asked of the regex engine)
    and not only whitespace, or it repeats a group's text (which may hold line breaks)."""
    for op, av in body:
        if op in _ONE_CHAR:
            one = _compiler.compile(_parser.SubPattern(state, [(op, av)]), flags)
            if one.fullmatch("\n") and not _spaces_only(op, av):
                return True
        elif op is _c.GROUPREF or any(
            _crosses_lines(seq, state, f) for seq, f in _children(op, av, flags)
        ):
            return True
    return False


def _cut(seq: Any, state: Any, flags: int, tail: bool) -> tuple[list[Any], bool]:
    """`seq` up to its first item that may scan any number of lines ahead, and whether there
    was one: a repeat of something crossing lines (`_crosses_lines`) with more to match after
    it (at the pattern's end it only takes the lines it matches), or a construct holding one.
    Every match attempt that reaches such an item has matched the part before it."""
    out: list[Any] = []
    items = list(seq)
    for i, (op, av) in enumerate(items):
        last = tail and (i == len(items) - 1 or _to_line_end(items, i, flags))
        cut, far = _cut_item(op, av, state, flags, last)
        if far:
            if cut is not None:
                out.append(cut)
            return out, True
        out.append((op, av))
    return out, False


def _to_line_end(items: Sequence[Any], i: int, flags: int) -> bool:
    """Whether items[i] is a lazy repeat that ends the pattern at the first line end after it
    ("//.*?$", ".+?\\n"): it stops there (the text always ends with one), looking no further."""
    if i != len(items) - 2 or items[i][0] is not _c.MIN_REPEAT:
        return False
    op, av = items[i + 1]
    return (op is _c.LITERAL and av == 10) or (
        op is _c.AT and av is _c.AT_END and bool(flags & re.MULTILINE)
    )


def _cut_item(op: Any, av: Any, state: Any, flags: int, last: bool) -> tuple[Any, bool]:
    """One item of `_cut`: the item cut before its first part that may scan far (None: cut
    before the item itself), and whether it has one."""
    sub = partial(_parser.SubPattern, state)
    if op in _REPEATS:
        far = _cut(av[2], state, flags, False)[1] or (
            not last and av[1] > 1 and _crosses_lines(av[2], state, flags)
        )
        return None, far
    if op is _c.SUBPATTERN:
        cut, far = _cut(av[3], state, (flags | av[1]) & ~av[2], last)
        return (op, (av[0], av[1], av[2], sub(cut))), far
    if op is _c.ATOMIC_GROUP:
        cut, far = _cut(av, state, flags, last)
        return (op, sub(cut)), far
    if op is _c.BRANCH:
        cuts = [_cut(alt, state, flags, last) for alt in av[1]]
        return (op, (av[0], [sub(c) for c, _ in cuts])), any(f for _, f in cuts)
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        # Reaching the item inside means what comes before it matched, negated or not.
        cut, far = _cut(av[1], state, flags, False)
        return (_c.ASSERT, (av[0], sub(cut))), far
    if op is _c.GROUPREF_EXISTS:
        return None, any(_cut(b, state, flags, last)[1] for b in av[1:] if b is not None)
    return None, False


@lru_cache(maxsize=4096)
def _far_cut(pattern: re.Pattern[str]) -> tuple[Any, int] | bool | None:
    """Where a rule may scan any number of lines ahead of the position it is tried at: None
    nowhere, True anywhere (or the pattern cannot be read), else where the parsed rule up to
    the first item that may (see `_cut`), returned with its flags, matches."""
    if _parser is None:
        return True
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        cut, far = _cut(parsed, parsed.state, pattern.flags, True)
    except Exception:  # a private module's shape changed: far everywhere
        return True
    if not far:
        return None
    if not cut:
        return True
    return _parser.SubPattern(parsed.state, cut), pattern.flags


def _ungrouped(seq: Any, state: Any) -> Any:
    """A parsed pattern with its groups made non-capturing (to join patterns into one);
    ValueError where it refers to a group."""
    items: list[Any] = []
    for op, av in seq:
        if op is _c.SUBPATTERN:
            items.append((op, (None, av[1], av[2], _ungrouped(av[3], state))))
        elif op in _REPEATS:
            items.append((op, (av[0], av[1], _ungrouped(av[2], state))))
        elif op is _c.ATOMIC_GROUP:
            items.append((op, _ungrouped(av, state)))
        elif op is _c.BRANCH:
            items.append((op, (av[0], [_ungrouped(alt, state) for alt in av[1]])))
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            items.append((op, (av[0], _ungrouped(av[1], state))))
        elif op in (_c.GROUPREF, _c.GROUPREF_EXISTS):
            raise ValueError("a group reference")
        else:
            items.append((op, av))
    return _parser.SubPattern(state, items)


def _line_start_only(rules: Sequence[tuple[Any, Any, Any]]) -> bool:
    """Whether every part `_far_cut` keeps of the rules starts with a multi-line "^"."""
    patterns = [getattr(rule[0], "__self__", None) for rule in rules]
    cuts = [_far_cut(p) if isinstance(p, re.Pattern) else True for p in patterns]
    kept = [cut for cut in cuts if cut is not None]
    return bool(kept) and all(
        isinstance(cut, tuple)
        and bool(cut[1] & re.MULTILINE)
        and len(cut[0]) > 0
        and cut[0][0] == (_c.AT, _c.AT_BEGINNING)
        for cut in kept
    )


def far_guards(rules: Sequence[tuple[Any, Any, Any]]) -> Guards:
    """A state's guard: a match that succeeds where one of its rules may look any number of
    lines ahead (its rules' `_far_cut` parts joined into one pattern: one call a token)."""
    cuts: list[tuple[Any, int]] = []
    for rexmatch, _action, _new_state in rules:
        pattern = getattr(rexmatch, "__self__", None)
        if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
            return ALWAYS
        cut = _far_cut(pattern)
        if cut is True:
            return ALWAYS
        if isinstance(cut, tuple):
            cuts.append(cut)
    if not cuts:
        return None
    try:
        state = _parser.State()
        alts = [
            _parser.SubPattern(
                state, [(_c.SUBPATTERN, (None, flags & _SCOPED, 0, _ungrouped(tree, state)))]
            )
            for tree, flags in cuts
        ]
        joined = _compiler.compile(_parser.SubPattern(state, [(_c.BRANCH, (None, alts))]), 0)
        match: Callable[[str, int], object] = joined.match
        return match
    except Exception:  # a group reference (or the parser's shape): one pattern at a time
        one_by_one = [_compiler.compile(tree, flags).match for tree, flags in cuts]
        return lambda text, pos: any(m(text, pos) for m in one_by_one)


class _FusedStates(dict[str, "_Fused | None"]):
    """One lexer class's states, each with its rules fused (`_fused`) or None, on first use."""

    def __init__(self, tokendefs: Mapping[str, Sequence[tuple[Any, Any, Any]]]) -> None:
        super().__init__()
        self.tokendefs = tokendefs
        self.guards: dict[str, Guards] = {}
        # States whose guard can match only at a line start ("^…" rules): asked only there.
        self.at_line_start: set[str] = set()

    def guards_of(self, state: str) -> Guards:
        """The state's `far_guards`, on first use."""
        if state not in self.guards:
            self.guards[state] = far_guards(self.tokendefs[state])
            if _line_start_only(self.tokendefs[state]):
                self.at_line_start.add(state)
        return self.guards[state]

    def __missing__(self, state: str) -> _Fused | None:
        fused = self[state] = _fused(self.tokendefs[state])
        return fused


# Per lexer class (a class's rules never change). Cleared with the other lexer caches
# (highlight.clear_caches), so a benchmark's cold start fuses them again.
_FUSED: dict[type, _FusedStates] = {}
# A backreference, a named-group reference or a conditional on a group: their group numbers
# or names would change inside the fused pattern.
_GROUP_REFERENCE = re.compile(r"\\[1-9]|\\g<|\(\?P=|\(\?\(")
# A pattern's own global flags ("(?i)…"), allowed only at the start of a whole pattern: inside
# the fused one they become the rule's scoped flags.
_GLOBAL_FLAGS = re.compile(r"\A(?:\(\?[aiLmsux]+\))+")
_FLAG_LETTERS = ((re.ASCII, "a"), (re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def _scoped(pattern: re.Pattern[str]) -> str | None:
    """The rule's pattern with its flags (the lexer's and its own) scoped to it, or None
    where they cannot be (verbose patterns: `x` changes how the text itself reads)."""
    if pattern.flags & re.VERBOSE:
        return None
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if pattern.flags & flag)
    return f"(?{letters}:{_GLOBAL_FLAGS.sub('', pattern.pattern)})"


# Characters a rule's first character is told apart by (`_first_chars`): ASCII, where nearly
# all of code's tokens start; a token starting with any other character (or the end of the
# text) is matched by the state's whole fused pattern.
_ASCII = tuple(chr(c) for c in range(128))
_ASCII_SET = frozenset(_ASCII)
# What the regex engine said of one-character items (by item and flags), until clear_fused.
_ONE_CHAR_SETS: dict[tuple[Any, str, int], frozenset[str]] = {}


def _one_char(op: Any, av: Any, state: Any, flags: int) -> frozenset[str]:
    """The ASCII characters one one-character item matches. Literals, ranges and negations
    are read directly (a class of thousands of ranges, as an identifier's, costs nothing
    then); categories, case-insensitive items and anything else are asked of the regex
    engine (`_engine_chars`)."""
    if flags & re.IGNORECASE:
        return _engine_chars(op, av, state, flags)
    if op is _c.LITERAL:
        return frozenset(chr(av)) & _ASCII_SET
    if op is _c.NOT_LITERAL:
        return _ASCII_SET - {chr(av)}
    if op is _c.ANY:
        return _ASCII_SET if flags & re.DOTALL else _ASCII_SET - {"\n"}
    if op is not _c.IN:
        return _engine_chars(op, av, state, flags)
    chars: set[str] = set()
    negate = False
    for sub, arg in av:
        if sub is _c.NEGATE:
            negate = True
        elif sub is _c.LITERAL:
            if arg < 128:
                chars.add(chr(arg))
        elif sub is _c.RANGE:
            chars.update(_ASCII[arg[0] : min(arg[1], 127) + 1])
        else:
            chars |= _engine_chars(_c.IN, [(sub, arg)], state, flags)
    return _ASCII_SET - chars if negate else frozenset(chars)


def _engine_chars(op: Any, av: Any, state: Any, flags: int) -> frozenset[str]:
    """The ASCII characters one one-character item matches, asked of the regex engine itself:
    the item compiled alone, with its flags, against every ASCII character."""
    key = (op, repr(av), flags)
    found = _ONE_CHAR_SETS.get(key)
    if found is None:
        one = _compiler.compile(_parser.SubPattern(state, [(op, av)]), flags).fullmatch
        found = _ONE_CHAR_SETS[key] = frozenset(c for c in _ASCII if one(c))
    return found


def _starts(seq: Any, state: Any, flags: int) -> tuple[frozenset[str] | None, bool]:
    """The ASCII characters a match of the parsed `seq` may start with (None: any), and
    whether it may match nothing at all. Items that match no text (anchors, lookahead and
    lookbehind) are passed over, which only widens the set; group references and anything
    unknown may start with anything."""
    chars: set[str] = set()
    for op, av in seq:
        if op in _ONE_CHAR:
            return frozenset(chars | _one_char(op, av, state, flags)), False
        if op is _c.AT or op in (_c.ASSERT, _c.ASSERT_NOT):
            continue
        if op is _c.SUBPATTERN:
            sub, empty = _starts(av[3], state, (flags | av[1]) & ~av[2])
        elif op is _c.ATOMIC_GROUP:
            sub, empty = _starts(av, state, flags)
        elif op in _REPEATS:
            sub, empty = _starts(av[2], state, flags)
            empty = empty or av[0] == 0
        elif op is _c.BRANCH:
            alts = [_starts(alt, state, flags) for alt in av[1]]
            if any(a is None for a, _ in alts):
                return None, True
            sub = frozenset().union(*(a for a, _ in alts if a is not None))
            empty = any(e for _, e in alts)
        else:
            return None, True
        if sub is None:
            return None, True
        chars |= sub
        if not empty:
            return frozenset(chars), False
    return frozenset(chars), True


def _first_chars(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """The ASCII characters a match of `pattern` may start with, or None where it may start
    with any (it can match empty text, or it cannot be read)."""
    if _parser is None:
        return None
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        chars, empty = _starts(parsed, parsed.state, pattern.flags)
    except Exception:  # a private module's shape changed: any character
        return None
    return None if empty else chars


def _no_match(_text: str, _pos: int) -> None:
    return None


Rule = tuple[Any, Any, Any]  # (match, action, new state), as RegexLexer keeps a rule
# A state's alternation (or a part of it) and its rules by the number of the group that
# matched (None for the rules' own groups).
Matcher = tuple[Callable[[str, int], re.Match[str] | None], tuple[Rule | None, ...]]


class _ByChar(dict[str, Matcher]):
    """A state's alternations by the character at the position a token is looked for at,
    each made on first use (see `_Fused`): of the rules that may start with an ASCII
    character (`_first_chars`), in their order; of all of them for any other character and
    for the end of the text ("")."""

    def __init__(
        self,
        whole: Matcher,
        parts: Sequence[str],
        patterns: Sequence[re.Pattern[str]],
        rules: Sequence[Rule],
    ) -> None:
        super().__init__()
        self.whole, self.parts, self.patterns, self.rules = whole, parts, patterns, rules
        # Each rule's first characters, on first use, and the alternations made so far by
        # the rules they hold (many characters start the same rules).
        self.firsts: list[frozenset[str] | None] = []
        self.subsets: dict[tuple[int, ...], Matcher] = {}

    def __missing__(self, char: str) -> Matcher:
        if len(char) != 1 or char not in _ASCII_SET:
            self[char] = self.whole
            return self.whole
        if not self.firsts:
            self.firsts.extend(_first_chars(p) for p in self.patterns)
        wanted = tuple(i for i, f in enumerate(self.firsts) if f is None or char in f)
        matcher = self.subsets.get(wanted)
        if matcher is None:
            matcher = self.subsets[wanted] = self._subset(wanted)
        self[char] = matcher
        return matcher

    def _subset(self, wanted: tuple[int, ...]) -> Matcher:
        if not wanted:
            return _no_match, ()
        if len(wanted) == len(self.parts):
            return self.whole
        parts = [self.parts[i] for i in wanted]
        rules = _by_group([self.patterns[i] for i in wanted], [self.rules[i] for i in wanted])
        return re.compile("|".join(parts)).match, rules


@dataclass(frozen=True, slots=True)
class _Fused:
    """One state's rules as one compiled alternation, each rule inside its own group, and
    the rule (regex, action, new state) by the number of the group that matched.

    `by_char` holds, by the text's character at the position, the alternation of only the
    rules that may start with it, in their order: the first of them to match is the first
    of all the rules to match, since the others cannot match there. The regex engine then
    enters a few of a state's dozens of rules at each token instead of each one before the
    one that matches (it passes over an alternative by its first character only when that
    is a bare literal or class, never a group, and every rule here is in its own group)."""

    match: Callable[[str, int], re.Match[str] | None]
    rules: tuple[Rule | None, ...]  # by group number
    by_char: _ByChar


def _by_group(
    patterns: Sequence[re.Pattern[str]], rules: Sequence[Rule]
) -> tuple[Rule | None, ...]:
    """Rules by the number of their group in the alternation of their patterns, each in a
    group of its own (None at the numbers of the patterns' own groups)."""
    out: list[Rule | None] = [None]
    for pattern, rule in zip(patterns, rules, strict=True):
        out += [rule] + [None] * pattern.groups
    return tuple(out)


def _fused(rules: Sequence[Rule]) -> _Fused | None:
    """The state's rules as one regex: `(r1)|(r2)|…` matched at a position tries r1, then r2,
    … and takes the first alternative that matches, as Pygments' loop tries the rules in
    order and takes the first match, so the match (its end and text) is the same; one call
    into the regex engine replaces one Python call per rule tried, which is most of the time
    lexing takes. The outer group of the winning rule is the last to close, so `lastindex`
    names it; each rule keeps its own flags, scoped to it. None (the rules are tried one by
    one, as Pygments does) where a rule refers to its own groups by number or name, or its
    pattern does not fuse."""
    patterns: list[re.Pattern[str]] = []
    for rexmatch, _action, _new_state in rules:
        pattern = getattr(rexmatch, "__self__", None)
        if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
            return None
        if _GROUP_REFERENCE.search(pattern.pattern):
            return None
        patterns.append(pattern)
    scoped = [_scoped(p) for p in patterns]
    if not rules or None in scoped:
        return None
    parts = tuple(f"({body})" for body in scoped)
    by_group = _by_group(patterns, rules)
    try:
        compiled = re.compile("|".join(parts))
    except re.error:
        return None
    if compiled.groups != len(by_group) - 1:
        return None
    whole = (compiled.match, by_group)
    return _Fused(compiled.match, by_group, _ByChar(whole, parts, patterns, rules))


def clear_fused() -> None:
    """Forget the fused rules and the rule analyses they are built from (benchmarks measure a
    cold start)."""
    _FUSED.clear()
    _ONE_CHAR_SETS.clear()
    _far_cut.cache_clear()


def fused_states(lexer: RegexLexer) -> _FusedStates:
    """The lexer's states with their fused rules (see `_fused`)."""
    table = _FUSED.get(type(lexer))
    if table is None:
        table = _FUSED[type(lexer)] = _FusedStates(getattr(lexer, "_tokens"))  # noqa: B009
    return table


def _one_by_one(
    rules: Sequence[tuple[Any, Any, Any]], text: str, pos: int
) -> tuple[re.Match[str] | None, tuple[Any, Any, Any] | None]:
    """The first of the state's rules that matches at `pos`, tried as Pygments does."""
    for rule in rules:
        m = rule[0](text, pos)
        if m:
            return m, rule
    return None, None


def _regex_run(  # noqa: C901 (Pygments' loop, step for step, reads best as one)
    lexer: RegexLexer,
    text: str,
    pos: int,
    stack: State,
    starts: Sequence[int],
    stop: Callable[[int, State], bool],
) -> tuple[list[Pieces], dict[int, State], int | None, list[int]]:
    """Pygments' `RegexLexer.get_tokens_unprocessed` loop (2.x, the same steps), from `pos`
    in state `stack`, noting the stack at every line start it reaches between tokens, and
    the positions where a rule that may look any number of lines ahead was tried.

    Each state's rules are tried as one fused regex where they fuse (`_fused`: the same
    first matching rule, found in one call; of only the rules that may start with the
    character at the position, `_Fused.by_char`), else one by one as Pygments does.

    `stop(line, stack)` is asked at each such line start after `pos` and ends the run there.
    Returns the tokens as pieces per line (as `_split` cuts them, made here: a token tuple
    per token, kept until the side is split, was the most of what the collector counted), the
    noted stacks by line index, the line it stopped at (None: the end of the text), and those
    positions. Raises ValueError where the tokens do not end at a line's end.
    """
    tokendefs: Any = getattr(lexer, "_tokens")  # noqa: B009 (set by RegexLexerMeta, untyped)
    table = fused_states(lexer)
    statestack = list(stack)

    def enter(state: str) -> tuple[Any, _Fused | None, _ByChar | None, Guards, bool]:
        # What the loop reads of the state on top of the stack, held in locals until it changes.
        fused = table[state]
        by_char = None if fused is None else fused.by_char
        return (
            tokendefs[state],
            fused,
            by_char,
            table.guards_of(state),
            state in table.at_line_start,
        )

    statetokens, fused, by_char, guards, anchored = enter(statestack[-1])
    far: list[int] = []
    lines: list[Pieces] = []  # each line lexed to its end
    line: list[str] = []  # the pieces of the line the last token is on
    push = line.extend
    classes: dict[_TokenType, str] = {}

    def add(ttype: _TokenType, value: str) -> None:
        # One token's text as pieces of the line it is on and of the lines it runs onto.
        cls = classes.get(ttype)
        if cls is None:
            cls = classes[ttype] = css_class(ttype)
        for n, piece in enumerate(value.split("\n")):
            if n:
                lines.append(tuple(line))
                line.clear()
            if piece:
                push((cls, piece))

    states: dict[int, State] = {}
    end, last = len(text), pos
    k = bisect_right(starts, pos)
    at: int | None = None
    while True:
        if (
            guards is not None
            and (not anchored or pos == 0 or text[pos - 1] == "\n")
            and guards(text, pos)
        ):
            far.append(pos)
        if by_char is not None:
            char = text[pos : pos + 1]
            match, rules = by_char[char]
            m = match(text, pos)
            rule = None if m is None else rules[m.lastindex or 0]
        else:
            m, rule = _one_by_one(statetokens, text, pos)
        if m is not None and rule is not None:
            rexmatch, action, new_state = rule
            if type(action) is _TokenType:
                value = m.group()
                pos += len(value)  # the match starts at pos: its end
                cls = classes.get(action)
                if cls is not None and "\n" not in value:
                    if value:
                        push((cls, value))
                else:
                    add(action, value)
            else:
                if action is not None:
                    # A callback reads the rule's own groups: its own match (the same one).
                    own = m if fused is None else rexmatch(text, pos)
                    for _, t, v in action(lexer, own):
                        add(t, v)
                pos = m.end()
            if new_state is not None:
                _transition(statestack, new_state)
                statetokens, fused, by_char, guards, anchored = enter(statestack[-1])
        else:
            if pos >= end:
                break
            if text[pos] == "\n":
                statestack = ["root"]
                statetokens, fused, by_char, guards, anchored = enter("root")
                add(Whitespace, "\n")
            else:
                add(Error, text[pos])
            pos += 1
        # A line starts where the last token ended with a line break (every line but the
        # first follows one). Noted once, on arrival: an empty match (`default(...)`) may move
        # the state at the same offset, and lexing from the first stack replays it.
        if pos > last and text[pos - 1] == "\n" and pos < end:
            last = pos
            while starts[k] < pos:
                k += 1
            state = tuple(statestack)
            states[k] = state
            if stop(k, state):
                at = k
                break
    if line:
        raise ValueError("tokens do not cover the lines")
    return lines, states, at, far


def _lines_of(positions: Sequence[int], starts: Sequence[int]) -> set[int]:
    return {bisect_right(starts, p) - 1 for p in positions}


def _split(tokens: Sequence[tuple[_TokenType, str]], count: int) -> list[Pieces]:
    """Tokens of `count` whole lines (each ending in "\\n") as pieces per line."""
    out: list[Pieces] = []
    line: list[str] = []
    classes: dict[_TokenType, str] = {}
    for ttype, value in tokens:
        cls = classes.get(ttype)
        if cls is None:
            cls = classes[ttype] = css_class(ttype)
        if "\n" not in value:
            if value:
                line += (cls, value)
            continue
        parts = value.split("\n")
        for k, piece in enumerate(parts):
            if k:
                out.append(tuple(line))
                line = []
            if piece:
                line += (cls, piece)
    if line or len(out) != count:
        raise ValueError("tokens do not cover the lines")
    return out


def lex_key(lexer: Lexer, lines: Sequence[str]) -> str:
    """A `LexCache` key: the lexer's class and the text's hash."""
    text = "\n".join(lines).encode("utf-8", errors="surrogatepass")
    kind = type(lexer)
    return f"{kind.__module__}.{kind.__qualname__}:{hashlib.sha256(text).hexdigest()}"


def lex_side(lexer: Lexer, lines: Sequence[str], *, cache: LexCache | None = None) -> Lexed:
    """Lex a whole side (a joined text of `lines`, each ended by "\\n"); raises what the lexer
    raises, or ValueError if its tokens do not add up to the text."""
    key = lex_key(lexer, lines) if cache is not None else ""
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    LEX_STATS["sides"] += 1
    LEX_STATS["lines"] += len(lines)
    text = "\n".join(lines) + "\n" if lines else ""
    starts = _line_starts(lines)
    if _readable(lexer):
        assert isinstance(lexer, RegexLexer)
        run = _regex_run(lexer, text, 0, ("root",), starts, lambda _k, _s: False)
        pieces, noted, _, far = run
        if len(pieces) != len(lines):
            raise ValueError("tokens do not cover the lines")
        noted[0] = ("root",)
        states = tuple(noted.get(i) for i in range(len(lines)))
        far_lines = frozenset(_lines_of(far, starts))
    else:
        tokens = [(t, v) for _, t, v in lexer.get_tokens_unprocessed(text)]
        pieces = _split(tokens, len(lines))
        states = (None,) * len(lines)
        far_lines = frozenset()
    lexed = Lexed(tuple(pieces), states, far_lines)
    if cache is not None:
        cache.set(key, lexed)
    return lexed


def _runs(
    lines: Sequence[str], ref_lines: Sequence[str], same: Mapping[int, int]
) -> tuple[list[int], list[int], list[int]]:
    """Per line: its line in the reference (-1: none), how many lines of its run of shared
    lines come before it and how many after it."""
    n = len(lines)
    ref = [-1] * n
    for t, r in same.items():
        if 0 <= t < n and 0 <= r < len(ref_lines) and lines[t] == ref_lines[r]:
            ref[t] = r
    before, after = [0] * n, [0] * n
    for t in range(1, n):
        if ref[t] >= 0 and ref[t - 1] >= 0 and ref[t] == ref[t - 1] + 1:
            before[t] = before[t - 1] + 1
    for t in range(n - 2, -1, -1):
        if ref[t] >= 0 and ref[t + 1] >= 0 and ref[t + 1] == ref[t] + 1:
            after[t] = after[t + 1] + 1
    return ref, before, after


def _copy_until(
    t: int, n: int, ref_of: list[int], after: list[int], ref: Lexed, ref_count: int
) -> int | None:
    """Where copying from line t ends: n when the shared run reaches the end of both texts
    (then what any rule looks ahead at is the same), else the last line start, at most
    `MARGIN` lines before the run ends and no later than its first line where a rule looked
    far ahead (`Lexed.far`), whose state the reference noted (the lexer restarts there).
    None: no such line."""
    end = t + after[t]  # last line of the run
    if end == n - 1 and ref_of[end] == ref_count - 1:
        return n
    limit = end - MARGIN + 1
    if ref.far:
        limit = min(limit, next((u for u in range(t, limit + 1) if ref_of[u] in ref.far), limit))
    for u in range(limit, t, -1):
        if ref.states[ref_of[u]] is not None:
            return u
    return None


def lex_against(  # noqa: C901 (copying and lexing alternate in one loop)
    lexer: Lexer,
    lines: Sequence[str],
    ref: Lexed,
    ref_lines: Sequence[str],
    same: Mapping[int, int],
) -> Lexed | None:
    """Lex `lines` given the reference side `ref` (of `ref_lines`, the same lexer) and `same`
    (line -> reference line, for lines the diff says are equal): changed stretches through
    the lexer, the rest copied. None where the lexer's state cannot be read."""
    if not _readable(lexer) or not lines:
        return None
    assert isinstance(lexer, RegexLexer)
    n = len(lines)
    ref_of, before, after = _runs(lines, ref_lines, same)

    def can_copy(t: int) -> bool:
        r = ref_of[t]
        # At the very start nothing lies behind to look back at; elsewhere MARGIN lines do.
        if not (r >= 0 and after[t] >= MARGIN and (before[t] >= MARGIN or t == r == 0)):
            return False
        # A line where a rule looked far ahead is copied only with all that follows it.
        return r not in ref.far or (t + after[t] == n - 1 and ref_of[n - 1] == len(ref_lines) - 1)

    text = "\n".join(lines) + "\n"
    starts = _line_starts(lines)
    out: list[Pieces] = []
    states: list[State | None] = [None] * n
    far: set[int] = set()
    t = 0
    stack: State = ("root",)
    states[0] = stack
    while t < n:
        if can_copy(t) and ref.states[ref_of[t]] == stack:
            copied = _copy_until(t, n, ref_of, after, ref, len(ref_lines))
            if copied is not None:
                for u in range(t, copied):
                    out.append(ref.lines[ref_of[u]])
                    states[u] = ref.states[ref_of[u]]
                    if ref_of[u] in ref.far:
                        far.add(u)
                if copied >= n:
                    break
                t = copied
                noted_state = ref.states[ref_of[t]]
                assert noted_state is not None  # _copy_until stops only at noted lines
                stack = noted_state
        LEX_STATS["runs"] += 1

        def stop(k: int, state: State, start: int = t) -> bool:
            return k > start and can_copy(k) and ref.states[ref_of[k]] == state

        pieces, noted, at, far_at = _regex_run(lexer, text, starts[t], stack, starts, stop)
        far |= _lines_of(far_at, starts)
        end = n if at is None else at
        LEX_STATS["lines"] += end - t
        if len(pieces) != end - t:
            raise ValueError("tokens do not cover the lines")
        out.extend(pieces)
        for k, state in noted.items():
            states[k] = state
        if at is None:
            break
        t, stack = at, noted[at]
    if len(out) != n:
        raise ValueError("lines lost while lexing against the reference")
    return Lexed(tuple(out), tuple(states), frozenset(far))
