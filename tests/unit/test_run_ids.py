"""Run ids: UUIDv7, ordered by the time they are made, so history's primary keys append."""

from __future__ import annotations

import uuid

from duetime_core.runkey import new_run_id


def test_run_ids_are_uuid7_in_the_order_made() -> None:
    ids = [new_run_id() for _ in range(1000)]
    assert {i.version for i in ids} == {7}
    assert all(isinstance(i, uuid.UUID) for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
