"""ListRuns' filter (``duetime_core.filtering``, checked against the fields of
``duetime_infra.pg.jobs.filters.RUNS``) as an Arrow expression over the archive's columns, with
the SQL's meaning: a comparison with a missing value (a run never started) is false, ``!=``
is true of it, and NOT of anything unknown is true."""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from duetime_core.filtering import All, AnyOf, Checked, Negated, Node, Op, parse_filter
from duetime_core.records import RunReason
from duetime_infra.pg.jobs.filters import RUNS

# pyarrow.compute.Expression (pyarrow is untyped).
Expression: TypeAlias = Any

_TIME = pa.timestamp("us", tz="UTC")


def _compare(column: str, value: object, op: Op) -> Expression:
    field = pc.field(column)
    scalar = pa.scalar(value, _TIME) if isinstance(value, datetime) else value
    match op:
        case Op.EQ:
            return field == scalar
        case Op.NE:
            # IS DISTINCT FROM: a missing value differs from every value.
            return pc.is_null(field) | (field != scalar)
        case Op.LT:
            return field < scalar
        case Op.LE:
            return field <= scalar
        case Op.GT:
            return field > scalar
        case Op.GE:
            return field >= scalar
        case _:
            raise AssertionError(f"no {op} for {column}")


def _origin(c: Checked) -> Expression:
    field = pc.field("origin")
    match = field == "SCHEDULE" if c.value == "SCHEDULE" else pc.starts_with(field, f"{c.value}:")
    return ~match if c.op is Op.NE else match


def _reason(c: Checked) -> Expression:
    assert c.op is not None
    return _compare("reason", RunReason[str(c.value)].value, c.op)


def _job_id(c: Checked) -> Expression:
    assert c.op is not None
    # Checked by the store's filter already (RUNS.where), which runs first.
    return _compare("job_id", str(uuid.UUID(str(c.value))), c.op)


def _column(name: str) -> Callable[[Checked], Expression]:
    def expression(c: Checked) -> Expression:
        assert c.op is not None
        return _compare(name, c.value, c.op)

    return expression


# Archived runs are final, so the state readers see is the stored one.
_FIELDS: dict[str, Callable[[Checked], Expression]] = {
    "state": _column("state"),
    "origin": _origin,
    "reason": _reason,
    "nominal_time": _column("nominal_time"),
    "start_time": _column("first_start_time"),
    "job_id": _job_id,
}
assert set(_FIELDS) == set(RUNS.fields.rules), "every ListRuns filter field, archived too"


def run_filter(text: str) -> Expression | None:
    """The ListRuns filter ``text`` as an expression (None: no filter)."""
    tree = RUNS.fields.check(parse_filter(text, "filter"), "filter")
    return None if tree is None else _node(tree)


def _node(node: Node) -> Expression:
    match node:
        case All(parts):
            return functools.reduce(operator.and_, (_node(p) for p in parts))
        case AnyOf(parts):
            return functools.reduce(operator.or_, (_node(p) for p in parts))
        case Negated(part):
            return ~pc.coalesce(_node(part), pa.scalar(False))
        case Checked():
            return _FIELDS[node.field](node)
        case _:
            raise AssertionError(f"an unchecked filter: {node!r}")
