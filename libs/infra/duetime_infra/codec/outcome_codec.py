"""An attempt's end on the worker contract (``duetime.worker.v1``): its result and how far its
call got, as numbers and as the domain's, both ways: the scheduler reads them
(``worker_codec``), the worker writes them."""

from __future__ import annotations

from duetime.worker.v1 import worker_service_pb2 as pb
from duetime_core.attempts import CallProgress
from duetime_core.records import AttemptOutcome

RESULTS: dict[int, AttemptOutcome] = {
    pb.ATTEMPT_RESULT_SUCCEEDED: AttemptOutcome.SUCCEEDED,
    pb.ATTEMPT_RESULT_FAILED: AttemptOutcome.FAILED,
    pb.ATTEMPT_RESULT_TIMED_OUT: AttemptOutcome.TIMED_OUT,
    pb.ATTEMPT_RESULT_CANCELLED: AttemptOutcome.CANCELLED,
    pb.ATTEMPT_RESULT_HANDED_BACK: AttemptOutcome.HANDED_BACK,
}
# A worker never reports LEASE_EXPIRED: the scheduler's own word for an attempt it closed.
RESULT_NUMBERS: dict[AttemptOutcome, pb.AttemptResult.ValueType] = {
    AttemptOutcome.SUCCEEDED: pb.ATTEMPT_RESULT_SUCCEEDED,
    AttemptOutcome.FAILED: pb.ATTEMPT_RESULT_FAILED,
    AttemptOutcome.TIMED_OUT: pb.ATTEMPT_RESULT_TIMED_OUT,
    AttemptOutcome.CANCELLED: pb.ATTEMPT_RESULT_CANCELLED,
    AttemptOutcome.HANDED_BACK: pb.ATTEMPT_RESULT_HANDED_BACK,
}

CALLS: dict[int, CallProgress] = {
    pb.CALL_PROGRESS_NOT_BEGUN: CallProgress.NOT_BEGUN,
    pb.CALL_PROGRESS_BEGUN: CallProgress.BEGUN,
    pb.CALL_PROGRESS_ANSWERED: CallProgress.ANSWERED,
}
# None: not said.
CALL_NUMBERS: dict[CallProgress | None, pb.CallProgress.ValueType] = {
    None: pb.CALL_PROGRESS_UNSPECIFIED,
    CallProgress.NOT_BEGUN: pb.CALL_PROGRESS_NOT_BEGUN,
    CallProgress.BEGUN: pb.CALL_PROGRESS_BEGUN,
    CallProgress.ANSWERED: pb.CALL_PROGRESS_ANSWERED,
}
