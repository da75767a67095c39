"""A query's record made a typed row: a ``NamedTuple`` whose fields name the columns it keeps.

A row that leaves the module whose query read it goes as such a typed row (or as a domain
record), not as an ``asyncpg.Record`` read by name elsewhere, so mypy checks what is read of
it. The typed row is declared beside its query, with the columns its readers use.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import asyncpg

RowT = TypeVar("RowT", bound=tuple[Any, ...])


def typed_row(cls: type[RowT], record: asyncpg.Record) -> RowT:
    """``record``'s columns named by the fields of ``cls`` (a ``NamedTuple``), in one
    constructor call; its other columns are left out, and one it lacks is a KeyError."""
    named: Any = cls  # a NamedTuple's _fields and _make are not on tuple's type
    return cast(RowT, named._make(map(record.__getitem__, named._fields)))
