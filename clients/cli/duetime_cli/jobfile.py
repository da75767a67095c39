"""Job files: a job as JSON or YAML text (``duetime_client.jobtext``: names and value forms
are the contract's, durations also as the CLI prints them), read from a file or stdin; what is
wrong with one fails like the server's INVALID_ARGUMENT, naming the file and the field."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from duetime.jobs.v1 import job_pb2
from duetime_cli.exits import ExitCode
from duetime_cli.failures import Failure
from duetime_client import jobtext
from duetime_client.status import Violation


def _invalid(path: Path, error: jobtext.JobTextError) -> Failure:
    return Failure.local(
        ExitCode.INVALID,
        "INVALID_ARGUMENT",
        f"{path} is not a valid job",
        [Violation(error.field, error.description)],
    )


def read_mapping(path: Path) -> dict[str, Any]:
    """The job's fields from the file: JSON for ``.json``, otherwise YAML; ``-`` is stdin. A
    response saved from ``jobs get -o yaml`` is unwrapped, so it can be given back to
    ``jobs update``."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except OSError as error:
        raise Failure.local(
            ExitCode.USAGE, "INVALID_ARGUMENT", f"cannot read {path}: {error.strerror}"
        ) from None
    except UnicodeDecodeError as error:
        raise _invalid(path, jobtext.JobTextError("job", f"is not UTF-8 text: {error}")) from None
    try:
        return jobtext.read_mapping(text, as_json=path.suffix == ".json")
    except jobtext.JobTextError as error:
        raise _invalid(path, error) from None


def parse_job(data: dict[str, Any], path: Path) -> job_pb2.Job:
    try:
        return jobtext.parse_job(data)
    except jobtext.JobTextError as error:
        raise _invalid(path, error) from None


def load_job(path: Path) -> job_pb2.Job:
    return parse_job(read_mapping(path), path)
