"""The worker contract's nominal times as the codec reads them: a hint, read when given, and
an instant out of the Timestamp's range a violation naming its field (INVALID_ARGUMENT), never
an error past the codec."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.errors import FieldViolation
from duetime_infra.codec.timeconv import TIMESTAMP_MAX_SECONDS, datetime_to_timestamp
from duetime_infra.codec.worker_codec import read_batch_report, read_beat_ref, read_start

RUN = str(uuid.uuid4())
NOMINAL = datetime(2026, 12, 7, 5, 0, tzinfo=UTC)
PAST_THE_RANGE = Timestamp(seconds=TIMESTAMP_MAX_SECONDS + 1)
BAD_NANOS = Timestamp(seconds=0, nanos=-1)


def _fields(violations: list[FieldViolation]) -> list[str]:
    return [v.field for v in violations]


def test_a_start_reads_its_nominal_time_and_names_a_bad_one() -> None:
    violations: list[FieldViolation] = []
    given = pb.StartAttemptRequest(
        run_id=RUN, delivery_id="d", worker_id="w", nominal_time=datetime_to_timestamp(NOMINAL)
    )
    assert read_start(violations, "", given).nominal_time == NOMINAL
    assert read_start(violations, "", pb.StartAttemptRequest(run_id=RUN)).nominal_time is None
    bad = pb.StartAttemptRequest(
        run_id=RUN, delivery_id="d", worker_id="w", nominal_time=PAST_THE_RANGE
    )
    assert read_start(violations, "starts[2].", bad).nominal_time is None
    assert _fields(violations) == ["delivery_id", "worker_id", "starts[2].nominal_time"]


def test_a_beat_reads_each_attempts_nominal_time_and_names_a_bad_one() -> None:
    violations: list[FieldViolation] = []
    ref = pb.AttemptRef(run_id=RUN, attempt=1, nominal_time=datetime_to_timestamp(NOMINAL))
    assert read_beat_ref(violations, 0, ref).nominal_time == NOMINAL
    assert read_beat_ref(violations, 1, pb.AttemptRef(run_id=RUN, attempt=1)).nominal_time is None
    assert violations == []
    bad = pb.AttemptRef(run_id=RUN, attempt=1, nominal_time=BAD_NANOS)
    assert read_beat_ref(violations, 3, bad).nominal_time is None
    assert _fields(violations) == ["attempts[3].nominal_time"]


def test_a_report_reads_its_nominal_time_and_names_a_bad_one() -> None:
    violations: list[FieldViolation] = []
    report = pb.CompleteAttemptRequest(
        run_id=RUN,
        result=pb.ATTEMPT_RESULT_SUCCEEDED,
        worker_id="w",
        nominal_time=datetime_to_timestamp(NOMINAL),
    )
    read = read_batch_report(violations, 0, pb.AttemptReport(report=report, attempt=1))
    assert read is not None
    assert read.nominal_time == NOMINAL
    report.nominal_time.CopyFrom(PAST_THE_RANGE)
    read = read_batch_report(violations, 4, pb.AttemptReport(report=report, attempt=1))
    assert read is not None
    assert read.nominal_time is None
    assert _fields(violations) == ["reports[4].report.nominal_time"]
