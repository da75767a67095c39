"""Which fields a change set anew: secrets sent in clear count, kept ones do not, and
definitions re-sealed since (a key rotation) are compared by their secrets' names only."""

from __future__ import annotations

import dataclasses

from duetime_core.history import spec_changes
from duetime_core.jobspec import HttpMethod, HttpTarget, JobSpec, Sealed, SecretValue
from duetime_core.schedule import Cron


def spec(url: str = "https://x.test/", **headers: SecretValue) -> JobSpec:
    target = HttpTarget(HttpMethod.POST, url, headers=dict(headers))
    return JobSpec("nightly", Cron("0 3 * * *", "UTC"), target)


def test_a_secret_sent_again_is_a_change_and_one_kept_is_not() -> None:
    stored = spec(Authorization=Sealed("k1", b"x" * 40))
    assert spec_changes(stored, stored) == []
    assert spec_changes(stored, spec(Authorization="Bearer new")) == ["target"]
    renamed = dataclasses.replace(stored, display_name="renamed", labels={"env": "prod"})
    assert spec_changes(stored, renamed) == ["display_name", "labels"]


def test_resealed_definitions_compare_their_secrets_by_name() -> None:
    before = spec(Authorization=Sealed("k1", b"a" * 40))
    after = spec(Authorization=Sealed("k2", b"b" * 40))
    assert spec_changes(before, after) == ["target"]
    assert spec_changes(before, after, sealed_comparable=False) == []
    added = spec(Authorization=Sealed("k2", b"b" * 40), Extra=Sealed("k2", b"c" * 40))
    assert spec_changes(before, added, sealed_comparable=False) == ["target"]
    moved = spec("https://y.test/", Authorization=Sealed("k2", b"b" * 40))
    assert spec_changes(before, moved, sealed_comparable=False) == ["target"]
