"""Secrets at rest: the keyring as operators write it, and sealing with AES-GCM."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from duetime_core.errors import FailedPrecondition
from duetime_core.jobspec import ContainerTarget, HttpMethod, HttpTarget, Sealed, secret_size
from duetime_infra.config import ConfigError, EnvReader
from duetime_infra.secrets.keyring import (
    KEYS_FILE_VARIABLE,
    KEYS_VARIABLE,
    new_keyring,
    parse_keyring,
    read_keyring,
)
from duetime_infra.secrets.sealing import SecretBox, needs_sealing

JOB = uuid.UUID(int=1)
OTHER_JOB = uuid.UUID(int=2)


def test_keyring_json_round_trip_and_rotation_steps() -> None:
    ring = new_keyring("a")
    assert parse_keyring(ring.to_json()).keys == ring.keys
    rotated = ring.with_new_key("b")
    assert rotated.current == "b"
    assert set(rotated.keys) == {"a", "b"}
    assert set(rotated.without("a").keys) == {"b"}
    with pytest.raises(ValueError, match="current key cannot be removed"):
        rotated.without("b")
    with pytest.raises(ValueError, match="already in the keyring"):
        rotated.with_new_key("a")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        ('{"current": "a"}', "expected"),
        ('{"current": 1, "keys": {}}', "must name a key id"),
        ('{"current": "a", "keys": {"a": "%%%"}}', "not valid base64"),
        ('{"current": "a", "keys": {"a": "AAAA"}}', "32 bytes, got 3"),
        ('{"current": "b", "keys": {"a": "' + "A" * 43 + '="}}', "not in the keyring"),
        ('{"current": "a b", "keys": {"a b": "' + "A" * 43 + '="}}', "key id"),
    ],
)
def test_bad_keyrings_say_what_is_wrong_without_a_key(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        parse_keyring(text)
    assert "A" * 20 not in str(caught.value)


def test_the_keyring_setting_is_required_once_and_reported_with_the_rest() -> None:
    env = EnvReader({})
    read_keyring(env)
    with pytest.raises(ConfigError, match=f"{KEYS_FILE_VARIABLE} or {KEYS_VARIABLE}"):
        env.finish()
    both = EnvReader({KEYS_VARIABLE: new_keyring().to_json(), KEYS_FILE_VARIABLE: "/x"})
    read_keyring(both)
    with pytest.raises(ConfigError, match="exactly one"):
        both.finish()
    missing = EnvReader({KEYS_FILE_VARIABLE: "/nonexistent/keyring.json", "DUETIME_N": "x"})
    read_keyring(missing)
    missing.integer("DUETIME_N", 1, low=0, high=2)
    with pytest.raises(ConfigError) as caught:
        missing.finish()
    assert "cannot be read" in str(caught.value)
    assert "DUETIME_N" in str(caught.value)


def test_the_keyring_file_is_read(tmp_path: Path) -> None:
    ring = new_keyring("f")
    path = tmp_path / "keyring.json"
    path.write_text(ring.to_json())
    env = EnvReader({KEYS_FILE_VARIABLE: str(path)})
    assert read_keyring(env).keys == ring.keys
    env.finish()


def test_sealed_values_open_only_for_their_job_and_name() -> None:
    box = SecretBox(new_keyring())
    sealed = box.seal(JOB, "header", "Authorization", "Bearer s3cret")
    assert sealed.size == len(b"Bearer s3cret") == secret_size("Bearer s3cret")
    assert b"s3cret" not in sealed.data
    # Header names are case-insensitive: a case-only rename keeps the value.
    assert box.open(JOB, "header", "authorization", sealed) == "Bearer s3cret"
    for job, where, name in [
        (OTHER_JOB, "header", "Authorization"),
        (JOB, "header", "X-Other"),
        (JOB, "env", "Authorization"),
    ]:
        with pytest.raises(FailedPrecondition, match="does not authenticate"):
            box.open(job, where, name, sealed)
    tampered = Sealed(sealed.key_id, sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(FailedPrecondition, match="does not authenticate"):
        box.open(JOB, "header", "Authorization", tampered)
    # Two seals of one value differ (a fresh nonce each).
    assert box.seal(JOB, "header", "Authorization", "Bearer s3cret").data != sealed.data


def test_a_value_sealed_under_a_key_no_longer_in_the_ring_is_unreadable() -> None:
    old = new_keyring("old")
    sealed = SecretBox(old).seal(JOB, "env", "TOKEN", "v")
    newer = old.with_new_key("new")
    assert SecretBox(newer).open(JOB, "env", "TOKEN", sealed) == "v"
    with pytest.raises(FailedPrecondition, match="not in the keyring") as caught:
        SecretBox(newer.without("old")).open(JOB, "env", "TOKEN", sealed)
    assert caught.value.reason == "SECRET_UNREADABLE"


def test_targets_seal_keep_reseal_and_open() -> None:
    old = new_keyring("old")
    target = HttpTarget(HttpMethod.POST, "https://x.test/", {"A": "1", "B": "2"})
    sealed = SecretBox(old).seal_target(JOB, target)
    assert isinstance(sealed, HttpTarget)
    assert all(isinstance(v, Sealed) for v in sealed.headers.values())
    box = SecretBox(old.with_new_key("new"))
    # Already sealed values are kept as they are; a clear one is sealed with the current key.
    mixed = dataclasses.replace(sealed, headers={**sealed.headers, "C": "3"})
    kept = box.seal_target(JOB, mixed)
    assert isinstance(kept, HttpTarget)
    assert kept.headers["A"] == sealed.headers["A"]
    assert isinstance(kept.headers["C"], Sealed)
    assert kept.headers["C"].key_id == "new"
    assert needs_sealing(kept, "new")
    resealed = box.seal_target(JOB, kept, reseal=True)
    assert not needs_sealing(resealed, "new")
    assert box.open_target(JOB, resealed) == HttpTarget(
        HttpMethod.POST, "https://x.test/", {"A": "1", "B": "2", "C": "3"}
    )
    env = ContainerTarget(image="i", env={"TOKEN": "t"})
    assert box.open_target(JOB, box.seal_target(JOB, env)) == env
    assert box.seal_target(JOB, ContainerTarget(image="i")) == ContainerTarget(image="i")
