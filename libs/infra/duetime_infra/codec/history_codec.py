"""A job's versions to their messages (``JobVersion``), secrets redacted."""

from __future__ import annotations

from duetime.jobs.v1 import job_service_pb2
from duetime_core.history import VersionRecord
from duetime_infra.codec.job_codec import encode_job_spec
from duetime_infra.codec.records_codec import encode_principal, job_name
from duetime_infra.codec.timeconv import datetime_to_timestamp


def encode_version(
    team_id: str, version: VersionRecord, changed: list[str]
) -> job_service_pb2.JobVersion:
    """A version with the fields it ``changed`` (recorded, or found by comparing)."""
    name = job_name(team_id, version.job_id)
    out = job_service_pb2.JobVersion(
        name=f"{name}/versions/{version.version}",
        version=version.version,
        changed_fields=changed,
    )
    datetime_to_timestamp(version.create_time, out.create_time)
    change = version.change
    if change is not None:
        out.change = job_service_pb2.JobChange.Value(f"JOB_CHANGE_{change.kind.value}")
        out.note = change.note
        if change.by is not None:
            encode_principal(change.by, out.principal)
    out.job.name, out.job.job_id = name, str(version.job_id)
    encode_job_spec(version.spec, out.job)
    return out
