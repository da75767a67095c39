"""Where run history is archived: an S3-compatible bucket, read from ``DUETIME_ARCHIVE_*``.

Every service that reads or writes the archive (the scheduler's archiver, the API) reads the
same variables with ``read_archive``; an unset bucket means no archive. Credentials come from
the two key variables, or a file (``DUETIME_ARCHIVE_CREDENTIALS_FILE``: JSON with
``access_key_id`` and ``secret_access_key``), or else from the S3 client's own chain (the
``AWS_*`` variables, a pod's web identity); they are never logged nor shown in a repr.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlsplit

from duetime_infra.config import EnvReader

BUCKET = "DUETIME_ARCHIVE_BUCKET"
CREDENTIALS_FILE = "DUETIME_ARCHIVE_CREDENTIALS_FILE"
ACCESS_KEY_ID = "DUETIME_ARCHIVE_ACCESS_KEY_ID"
SECRET_ACCESS_KEY = "DUETIME_ARCHIVE_SECRET_ACCESS_KEY"


@dataclass(frozen=True)
class ArchiveSettings:
    bucket: str
    # Keys start with it ("" for the bucket's root); no leading or trailing slash.
    prefix: str
    # "" for AWS itself; else the URL of an S3-compatible endpoint (scheme, host, port).
    endpoint_url: str
    region: str
    # How long a finished week's history stays in PostgreSQL before it is archived.
    hot_retention: timedelta
    access_key_id: str = field(default="", repr=False)
    secret_access_key: str = field(default="", repr=False)

    def key(self, relative: str) -> str:
        """``bucket/prefix/relative``: a path as pyarrow's S3 filesystem names objects."""
        return "/".join(p for p in (self.bucket, self.prefix, relative) if p)


def read_archive(env: EnvReader) -> ArchiveSettings | None:
    """The archive's settings (None: ``DUETIME_ARCHIVE_BUCKET`` unset, no archive); problems
    are recorded on ``env`` with the caller's others."""
    bucket = env.text(BUCKET, "").strip()
    if not bucket:
        return None
    if not _bucket_name(bucket):
        env.problem(f"{BUCKET}={bucket!r}: not a bucket name (3-63 of a-z 0-9 . -)")
    prefix = env.text("DUETIME_ARCHIVE_PREFIX", "duetime/runs").strip("/")
    endpoint = env.text("DUETIME_ARCHIVE_ENDPOINT_URL", "").strip()
    if endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in "/":
            env.problem(
                f"DUETIME_ARCHIVE_ENDPOINT_URL={endpoint!r}: expected http(s)://host[:port]"
            )
    days = env.integer("DUETIME_ARCHIVE_HOT_RETENTION_DAYS", 7, low=1, high=3650)
    key_id, secret = _credentials(env)
    return ArchiveSettings(
        bucket=bucket,
        prefix=prefix,
        endpoint_url=endpoint,
        region=env.text("DUETIME_ARCHIVE_REGION", "us-east-1").strip(),
        hot_retention=timedelta(days=days),
        access_key_id=key_id,
        secret_access_key=secret,
    )


def _bucket_name(name: str) -> bool:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
    return 3 <= len(name) <= 63 and set(name) <= allowed and name[0].isalnum()


def _credentials(env: EnvReader) -> tuple[str, str]:
    """The key pair from the variables or the file; ("", "") for the client's own chain."""
    key_id, secret = env.text(ACCESS_KEY_ID, ""), env.text(SECRET_ACCESS_KEY, "")
    path = env.text(CREDENTIALS_FILE, "")
    if path:
        if key_id or secret:
            env.problem(f"{CREDENTIALS_FILE}: set it or the two key variables, not both")
        try:
            with open(path, encoding="utf-8") as file:
                document = json.load(file)
            key_id, secret = document["access_key_id"], document["secret_access_key"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            # The error names the file and what is wrong with it, never its content.
            reason = error.strerror if isinstance(error, OSError) else type(error).__name__
            env.problem(
                f"{CREDENTIALS_FILE}={path!r}: not readable as JSON with access_key_id and "
                f"secret_access_key ({reason})"
            )
            return "", ""
        if not isinstance(key_id, str) or not isinstance(secret, str):
            env.problem(f"{CREDENTIALS_FILE}={path!r}: the keys must be strings")
            return "", ""
    if bool(key_id) != bool(secret):
        env.problem(f"{ACCESS_KEY_ID} and {SECRET_ACCESS_KEY}: set both or neither")
    return key_id, secret
