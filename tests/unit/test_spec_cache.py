"""The claimer's cache of decoded job definitions."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from duetime_core.jobspec import Every, HttpMethod, HttpTarget, JobSpec
from duetime_infra.codec.spec_json import spec_to_json
from duetime_infra.pg.dispatch.spec_cache import SpecCache


def document(name: str) -> str:
    spec = JobSpec(
        display_name=name,
        schedule=Every(timedelta(minutes=1), None, datetime(2026, 1, 1, tzinfo=UTC)),
        target=HttpTarget(HttpMethod.POST, "https://x.test/"),
    )
    return json.dumps(spec_to_json(spec))


def test_a_version_is_decoded_once_and_the_oldest_entry_goes_first() -> None:
    cache = SpecCache(capacity=2)
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    first = cache.get(a, 1, document("a1"))
    assert first.display_name == "a1"
    # The same version is not decoded again (the document is not even read).
    assert cache.get(a, 1, "not json") is first
    # A new version is a new definition.
    assert cache.get(a, 2, document("a2")).display_name == "a2"
    cache.get(b, 1, document("b1"))  # capacity 2: evicts (a, 1), the least recently used
    assert cache.get(a, 2, "not json").display_name == "a2"
    cache.get(c, 1, document("c1"))  # evicts (b, 1)
    assert cache.get(b, 1, document("b1 again")).display_name == "b1 again"
