"""The archive's settings (``DUETIME_ARCHIVE_*``): off without a bucket, every bad variable
reported with the service's others, credentials from the variables or a file and never in a
repr or an error; where a week's objects go."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from duetime_infra.archive.layout import object_key
from duetime_infra.archive.settings import ArchiveSettings, read_archive
from duetime_infra.config import ConfigError, EnvReader
from duetime_infra.secrets.keyring import new_keyring
from duetime_scheduler.config import Settings as SchedulerSettings

SECRET = "s3cr3t-never-shown"


def read(environ: dict[str, str]) -> ArchiveSettings | None:
    env = EnvReader(environ)
    settings = read_archive(env)
    env.finish()
    return settings


def test_no_bucket_no_archive() -> None:
    assert read({}) is None


def test_settings_with_their_defaults_and_the_keys_out_of_the_repr() -> None:
    settings = read(
        {
            "DUETIME_ARCHIVE_BUCKET": "history",
            "DUETIME_ARCHIVE_ACCESS_KEY_ID": "AKID",
            "DUETIME_ARCHIVE_SECRET_ACCESS_KEY": SECRET,
        }
    )
    assert settings is not None
    assert settings.prefix == "duetime/runs"
    assert settings.hot_retention == timedelta(days=7)
    assert settings.key("weeks/x") == "history/duetime/runs/weeks/x"
    assert SECRET not in repr(settings)
    assert "AKID" not in repr(settings)


def test_credentials_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"access_key_id": "AKID", "secret_access_key": SECRET}))
    settings = read(
        {"DUETIME_ARCHIVE_BUCKET": "history", "DUETIME_ARCHIVE_CREDENTIALS_FILE": str(path)}
    )
    assert settings is not None
    assert (settings.access_key_id, settings.secret_access_key) == ("AKID", SECRET)


def test_every_bad_variable_reported_at_once_with_the_schedulers_others(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text(f'{{"access_key_id": "AKID", "secret": "{SECRET}"')  # not JSON
    environ = {
        "DUETIME_PLAINTEXT": "etcd,postgres,grpc",
        "DUETIME_SECRET_KEYS": new_keyring().to_json(),
        "DUETIME_CLAIM_BATCH_SIZE": "0",
        "DUETIME_ARCHIVE_BUCKET": "Not_A_Bucket",
        "DUETIME_ARCHIVE_ENDPOINT_URL": "moto:5000",
        "DUETIME_ARCHIVE_HOT_RETENTION_DAYS": "0",
        "DUETIME_ARCHIVE_CREDENTIALS_FILE": str(path),
    }
    with pytest.raises(ConfigError) as error:
        SchedulerSettings.from_env(environ)
    text = str(error.value)
    for name in (
        "DUETIME_CLAIM_BATCH_SIZE",
        "DUETIME_ARCHIVE_BUCKET",
        "DUETIME_ARCHIVE_ENDPOINT_URL",
        "DUETIME_ARCHIVE_HOT_RETENTION_DAYS",
        "DUETIME_ARCHIVE_CREDENTIALS_FILE",
    ):
        assert name in text
    assert SECRET not in text


def test_half_a_key_pair_is_refused() -> None:
    with pytest.raises(ConfigError, match="set both or neither"):
        read({"DUETIME_ARCHIVE_BUCKET": "history", "DUETIME_ARCHIVE_ACCESS_KEY_ID": "AKID"})


def test_a_week_archived_again_gets_the_key_after_its_objects() -> None:
    week = datetime(2026, 11, 2, tzinfo=UTC)
    first = object_key(week)
    assert first == "weeks/2026-11-02/runs.parquet"
    second = object_key(week, first)
    assert second == "weeks/2026-11-02/runs.1.parquet"
    assert object_key(week, second) == "weeks/2026-11-02/runs.2.parquet"
    with pytest.raises(ValueError, match="not a week's object key"):
        object_key(week, "weeks/2026-11-02/manifest.json")
