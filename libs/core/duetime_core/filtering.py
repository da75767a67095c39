"""List filters in the syntax of Google's AIP-160: parsed into a small tree here, checked
against a resource's fields (``FilterFields``), and turned into SQL by the store.

The grammar is AIP-160's EBNF less function calls: ``AND`` joins sequences, restrictions side
by side are ANDed, ``OR`` binds tighter than both, ``NOT`` or ``-`` negates a term, and
parentheses group. A restriction is ``member comparator value`` (``labels.env = prod``) or a
bare value, which a resource may read as a search of its text. Values are words or quoted
strings; a time, with its colons, must be quoted. Every refusal names the token at fault.
"""

from __future__ import annotations

import enum
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

from lark import Lark, Token, Transformer, UnexpectedInput, UnexpectedToken, v_args

from duetime_core.errors import InvalidArgument

MAX_FILTER_LENGTH = 1000
MAX_DEPTH = 32

_GRAMMAR = r"""
?start: expression?
?expression: sequence (_AND sequence)*      -> both
?sequence: factor factor*                   -> both
?factor: term (_OR term)*                   -> either
?term: (_NOT | _MINUS) simple               -> negated
     | simple
?simple: restriction
       | "(" expression ")"
restriction: member (COMPARATOR value)?
member: value ("." value)*
value: WORD | STRING

_AND.2: "AND"
_OR.2: "OR"
_NOT.2: "NOT"
_MINUS: "-"
COMPARATOR: "<=" | "<" | ">=" | ">" | "!=" | "=" | ":"
STRING: /"(?:[^"\\]|\\.)*"/ | /'(?:[^'\\]|\\.)*'/
WORD: /[^\s.:()<>=!"'\-][^\s.:()<>=!"']*/

%ignore /\s+/
"""


class Op(enum.StrEnum):
    EQ = "="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    HAS = ":"


@dataclass(frozen=True)
class Restriction:
    """``path op value``; a bare value has an empty path and no op."""

    path: tuple[str, ...]
    op: Op | None
    value: str


@dataclass(frozen=True)
class Checked:
    """A restriction known good: its field (``labels`` for ``labels.env``), the key (for a
    keyed field), the comparison and the value, normalised (a word upper case, a time
    parsed)."""

    field: str
    key: str | None
    op: Op | None
    value: str | datetime


@dataclass(frozen=True)
class All:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Negated:
    part: Node


# A parsed filter holds Restrictions; a checked one, Checked restrictions.
Node = Restriction | Checked | All | AnyOf | Negated


def _unquote(text: str) -> str:
    if text[:1] in "\"'":
        body = text[1:-1]
        out, escaped = [], False
        for char in body:
            if escaped or char != "\\":
                out.append(char)
                escaped = False
            else:
                escaped = True
        return "".join(out)
    return text


@v_args(inline=True)
class _Tree(Transformer[Token, Node]):
    def value(self, token: Token) -> str:
        return _unquote(str(token))

    def member(self, *names: str) -> tuple[str, ...]:
        return tuple(names)

    def restriction(
        self, member: tuple[str, ...], op: Token | None = None, value: str | None = None
    ) -> Restriction:
        if op is None or value is None:
            if len(member) != 1:
                raise _Refused(f'"{".".join(member)}" needs a comparator and a value')
            return Restriction((), None, member[0])
        return Restriction(member, Op(str(op)), value)

    def both(self, *parts: Node) -> Node:
        return parts[0] if len(parts) == 1 else All(parts)

    def either(self, *parts: Node) -> Node:
        return parts[0] if len(parts) == 1 else AnyOf(parts)

    def negated(self, part: Node) -> Node:
        return Negated(part)


class _Refused(Exception):
    pass


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", maybe_placeholders=False)


def parse_filter(text: str, field: str = "filter") -> Node | None:
    """The filter's tree (None for an empty filter), or InvalidArgument naming ``field`` and
    the token at fault."""
    if len(text) > MAX_FILTER_LENGTH:
        raise InvalidArgument.field(field, f"at most {MAX_FILTER_LENGTH} characters")
    problem = _text_problem(text)
    if problem is not None:
        raise InvalidArgument.field(field, problem)
    if not text.strip():
        return None
    try:
        tree = _parser().parse(text)
        return _Tree().transform(tree)
    except UnexpectedInput as error:
        raise InvalidArgument.field(field, _where(text, error)) from None
    except _Refused as error:
        raise InvalidArgument.field(field, str(error)) from None
    except Exception as error:  # a transformer's own failure, wrapped by lark
        cause = error.__context__
        if isinstance(cause, _Refused):
            raise InvalidArgument.field(field, str(cause)) from None
        raise


def _text_problem(text: str) -> str | None:
    """What no filter may hold: control characters other than whitespace (PostgreSQL refuses
    NUL in text), or parentheses nested deeper than ``MAX_DEPTH`` (the tree is walked
    recursively)."""
    if any(unicodedata.category(c) == "Cc" and not c.isspace() for c in text):
        return "must not contain control characters (NUL, ...)"
    depth = deepest = 0
    quote = ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_DEPTH:
        return f"parentheses nested deeper than {MAX_DEPTH}"
    return None


def _where(text: str, error: UnexpectedInput) -> str:
    if isinstance(error, UnexpectedToken) and error.token.type == "$END":
        return "ends too early: a comparison or a closing parenthesis is missing"
    column = error.column if isinstance(error.column, int) and error.column > 0 else len(text)
    rest = text[column - 1 :].split()
    token = rest[0] if rest else ""
    if not token:
        return "ends too early: a comparison or a closing parenthesis is missing"
    return f'unexpected "{token}" at column {column}'


class Kind(enum.Enum):
    TEXT = "text"  # =, !=, : (contains, case-insensitive)
    WORD = "word"  # = and != against a fixed set of names
    TIME = "time"  # every order comparison, an RFC 3339 instant
    KEYED = "keyed"  # ``name.KEY``: =, != and ``:*`` (has the key)
    EXACT = "exact"  # = and != against any value


_OPS = {
    Kind.TEXT: frozenset({Op.EQ, Op.NE, Op.HAS}),
    Kind.WORD: frozenset({Op.EQ, Op.NE}),
    Kind.TIME: frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE}),
    Kind.KEYED: frozenset({Op.EQ, Op.NE, Op.HAS}),
    Kind.EXACT: frozenset({Op.EQ, Op.NE}),
}


@dataclass(frozen=True)
class FieldRule:
    kind: Kind
    # For WORD fields: the names accepted (upper case).
    words: frozenset[str] = frozenset()
    # For KEYED fields: which keys are acceptable, and what a good one looks like.
    key_check: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class FilterFields:
    """The fields a resource can be filtered by; ``search`` names the text field a bare value
    searches (None: a bare value is refused)."""

    rules: Mapping[str, FieldRule]
    search: str | None = None

    def check(self, tree: Node | None, field: str = "filter") -> Node | None:
        """The tree with every restriction checked (InvalidArgument naming the first bad
        one)."""
        return None if tree is None else self._walk(tree, field)

    def _walk(self, tree: Node, field: str) -> Node:
        match tree:
            case All(parts):
                return All(tuple(self._walk(p, field) for p in parts))
            case AnyOf(parts):
                return AnyOf(tuple(self._walk(p, field) for p in parts))
            case Negated(part):
                return Negated(self._walk(part, field))
            case Restriction():
                return self._restriction(tree, field)
            case Checked():
                return tree

    def _restriction(self, r: Restriction, field: str) -> Checked:
        if not r.path:
            if self.search is None:
                raise InvalidArgument.field(
                    field, f'"{r.value}": name a field ({self._names()}) and compare it'
                )
            return Checked(self.search, None, Op.HAS, r.value)
        name, key = ".".join(r.path), None
        rule = self.rules.get(name)
        if rule is None and len(r.path) == 2:
            name, key = r.path
            rule = self.rules.get(name)
        if rule is None or (key is not None) != (rule.kind is Kind.KEYED):
            raise InvalidArgument.field(
                field, f'unknown field "{".".join(r.path)}"; fields: {self._names()}'
            )
        assert r.op is not None
        if r.op not in _OPS[rule.kind]:
            allowed = " ".join(sorted(o.value for o in _OPS[rule.kind]))
            raise InvalidArgument.field(
                field, f'"{name}" cannot be compared with "{r.op.value}"; use one of {allowed}'
            )
        if key is not None and rule.key_check is not None and not rule.key_check(key):
            raise InvalidArgument.field(field, f'"{name}.{key}": not a valid key')
        return Checked(name, key, r.op, self._value(name, rule, r, field))

    def _value(self, name: str, rule: FieldRule, r: Restriction, field: str) -> str | datetime:
        if rule.kind is Kind.WORD:
            word = r.value.upper()
            if word not in rule.words:
                raise InvalidArgument.field(
                    field, f'{name}: "{r.value}" is not one of {", ".join(sorted(rule.words))}'
                )
            return word
        if rule.kind is Kind.TIME:
            try:
                moment = datetime.fromisoformat(r.value.replace("Z", "+00:00"))
            except ValueError:
                moment = None
            if moment is None or moment.tzinfo is None:
                raise InvalidArgument.field(
                    field, f'{name}: "{r.value}" is not an RFC 3339 time with an offset, quoted'
                )
            try:
                return moment.astimezone(UTC)
            except OverflowError:
                raise InvalidArgument.field(
                    field, f'{name}: "{r.value}" is before year 1 or after 9999 in UTC'
                ) from None
        if rule.kind is Kind.KEYED and r.op is Op.HAS and r.value != "*":
            raise InvalidArgument.field(
                field, f'{name}.KEY:* asks for the key; "{r.value}" is not *'
            )
        return r.value

    def _names(self) -> str:
        return ", ".join(
            f"{n}.KEY" if rule.kind is Kind.KEYED else n for n, rule in self.rules.items()
        )
