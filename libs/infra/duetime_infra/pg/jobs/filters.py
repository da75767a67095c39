"""ListJobs' and ListRuns' filters (``duetime_core.filtering``) as SQL: each filterable field
once, with its kind and the expression it reads, and a checked filter turned into a WHERE
fragment whose values are all bind parameters.

A named query marks where a filter goes with ``AND /* filter */ TRUE``; ``with_filter`` puts
the fragment there, its parameters numbered after the query's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from duetime_core.errors import InvalidArgument
from duetime_core.filtering import (
    All,
    AnyOf,
    Checked,
    FieldRule,
    FilterFields,
    Kind,
    Negated,
    Node,
    Op,
    parse_filter,
)
from duetime_core.jobspec import JobState
from duetime_core.labels import valid_label_key
from duetime_core.records import RunReason, RunState

_MARK = "AND /* filter */ TRUE"

# The host of an HTTP target's URL, lower case (NULL for other targets): a POSIX pattern.
_URL_HOST = (
    "lower(substring(spec->'target'->>'url' "
    "from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\\[[^]]*\\]|[^:/?#]*)'))"
)
_SCHEDULE_KINDS = {
    "AT": ["at_instant", "at_local"],
    "DELAY": ["after_delay"],
    "INTERVAL": ["every"],
    "CRON": ["cron"],
}
_SHOWN_STATE = "duetime_shown_state(r.state, r.run_id, r.nominal_time)"


@dataclass
class Sql:
    """A fragment under construction: its parameters, numbered from ``first``."""

    first: int
    params: list[Any] = field(default_factory=list)

    def bind(self, value: Any) -> str:
        self.params.append(value)
        return f"${self.first + len(self.params) - 1}"


Column = Callable[[Checked, Sql], str]


def _compare(expression: str) -> Column:
    """``expression op $value``; a contains is case-insensitive; != is true of NULL."""

    def sql(c: Checked, s: Sql) -> str:
        match c.op:
            case Op.HAS:
                return f"strpos(lower({expression}), lower({s.bind(c.value)})) > 0"
            case Op.NE:
                return f"{expression} IS DISTINCT FROM {s.bind(c.value)}"
            case _:
                assert c.op is not None
                return f"{expression} {c.op.value} {s.bind(c.value)}"

    return sql


def _host(c: Checked, s: Sql) -> str:
    """The host read lower case, as DNS names compare."""
    return _compare(_URL_HOST)(Checked(c.field, c.key, c.op, str(c.value).lower()), s)


def _labels(c: Checked, s: Sql) -> str:
    key = s.bind(c.key)
    if c.op is Op.HAS:
        return f"jsonb_exists(spec->'labels', {key})"
    value = s.bind(c.value)
    if c.op is Op.NE:
        return f"(spec->'labels'->>{key}) IS DISTINCT FROM {value}"
    return f"(spec->'labels'->>{key}) = {value}"


def _literal(word: str) -> str:
    """A word of a field's fixed set (checked against it: upper-case letters and _) as a SQL
    literal: written into the statement, so a partial index on it (dead letters) can serve
    even a generic plan."""
    if not word.replace("_", "").isalpha() or not word.isupper():
        raise AssertionError(f"not a checked word: {word!r}")
    return f"'{word}'"


def _schedule(c: Checked, s: Sql) -> str:
    kinds = ", ".join(f"'{kind}'" for kind in _SCHEDULE_KINDS[str(c.value)])
    negation = "NOT " if c.op is Op.NE else ""
    return f"{negation}(spec->'schedule'->>'kind') IN ({kinds})"


def _run_state(c: Checked, s: Sql) -> str:
    state = _literal(str(c.value))
    if c.op is Op.NE:
        return f"{_SHOWN_STATE} <> {state}"
    if c.value not in ("QUEUED", "RUNNING"):
        return f"r.state = {state}"
    # A run started ahead is stored RUNNING and shown QUEUED.
    stored = "r.state IN ('QUEUED', 'RUNNING')" if c.value == "QUEUED" else "r.state = 'RUNNING'"
    return f"{stored} AND {_SHOWN_STATE} = {state}"


def _origin(c: Checked, s: Sql) -> str:
    match = "r.origin = 'SCHEDULE'" if c.value == "SCHEDULE" else f"r.origin LIKE '{c.value}:%'"
    return f"NOT ({match})" if c.op is Op.NE else match


def _reason(c: Checked, s: Sql) -> str:
    reason = RunReason[str(c.value)].value
    return f"r.reason {'<>' if c.op is Op.NE else '='} {_literal(reason)}"


def _job_id(c: Checked, s: Sql) -> str:
    try:
        job_id = uuid.UUID(str(c.value))
    except ValueError:
        raise InvalidArgument.field("filter", f'job_id: "{c.value}" is not a job id') from None
    if c.op is Op.NE:
        return f"r.job_id <> {s.bind(job_id)}"
    return f"r.job_id = {s.bind(job_id)}"


@dataclass(frozen=True)
class Resource:
    fields: FilterFields
    columns: Mapping[str, Column]

    def where(self, text: str, first: int, field: str = "filter") -> tuple[str, list[Any]]:
        """The filter's WHERE fragment (``TRUE`` for none) and its parameters, numbered from
        ``$first``; InvalidArgument naming ``field`` for a bad one."""
        tree = self.fields.check(parse_filter(text, field), field)
        if tree is None:
            return "TRUE", []
        sql = Sql(first)
        return self._node(tree, sql), sql.params

    def _node(self, node: Node, sql: Sql) -> str:
        match node:
            case All(parts):
                return "(" + " AND ".join(self._node(p, sql) for p in parts) + ")"
            case AnyOf(parts):
                return "(" + " OR ".join(self._node(p, sql) for p in parts) + ")"
            case Negated(part):
                # NULL (a missing label, a run not started) counts as false, so NOT of it is true.
                return f"(NOT coalesce({self._node(part, sql)}, false))"
            case Checked():
                return f"({self.columns[node.field](node, sql)})"
            case _:
                raise AssertionError(f"an unchecked filter: {node!r}")


def _words(names: Any) -> frozenset[str]:
    return frozenset(n for n in names if n)


JOBS = Resource(
    FilterFields(
        {
            "display_name": FieldRule(Kind.TEXT),
            "state": FieldRule(
                Kind.WORD, _words(s.value for s in JobState if s.value != "DELETED")
            ),
            "labels": FieldRule(Kind.KEYED, key_check=valid_label_key),
            "schedule": FieldRule(Kind.WORD, frozenset(_SCHEDULE_KINDS)),
            "target.host": FieldRule(Kind.TEXT),
        },
        search="display_name",
    ),
    {
        "display_name": _compare("(spec->>'display_name')"),
        "state": _compare("state"),
        "labels": _labels,
        "schedule": _schedule,
        "target.host": _host,
    },
)

RUNS = Resource(
    FilterFields(
        {
            "state": FieldRule(Kind.WORD, _words(s.value for s in RunState)),
            "origin": FieldRule(Kind.WORD, frozenset({"SCHEDULE", "TRIGGER", "BACKFILL"})),
            "reason": FieldRule(Kind.WORD, _words(r.name for r in RunReason if r.value)),
            "nominal_time": FieldRule(Kind.TIME),
            "start_time": FieldRule(Kind.TIME),
            "job_id": FieldRule(Kind.EXACT),
        }
    ),
    {
        "state": _run_state,
        "origin": _origin,
        "reason": _reason,
        "nominal_time": _compare("r.nominal_time"),
        "start_time": _compare("r.first_start_time"),
        "job_id": _job_id,
    },
)


def with_filter(query: str, fragment: str) -> str:
    """``query`` (a named query with the filter mark) with ``fragment`` in its place."""
    if query.count(_MARK) != 1:
        raise ValueError("the query has no single filter mark")
    return query.replace(_MARK, f"AND {fragment}")
