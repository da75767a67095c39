"""Between the protobuf contract and the domain: decoding with full validation, encoding for
responses (secrets redacted), and the JSON document a job's spec is stored as.
"""

from duetime_infra.codec.job_codec import decode_job_spec, encode_job_spec, read_jitter_window
from duetime_infra.codec.schedule_codec import encode_schedule, read_schedule
from duetime_infra.codec.spec_json import SPEC_JSON_VERSION, spec_from_json, spec_to_json
from duetime_infra.codec.target_codec import REDACTED, encode_target_clear
from duetime_infra.codec.timeconv import (
    datetime_to_timestamp,
    duration_to_timedelta,
    timedelta_to_duration,
    timestamp_to_datetime,
)
from duetime_infra.codec.violations import Violations

__all__ = [
    "REDACTED",
    "SPEC_JSON_VERSION",
    "Violations",
    "datetime_to_timestamp",
    "decode_job_spec",
    "duration_to_timedelta",
    "encode_job_spec",
    "encode_schedule",
    "encode_target_clear",
    "read_jitter_window",
    "read_schedule",
    "spec_from_json",
    "spec_to_json",
    "timedelta_to_duration",
    "timestamp_to_datetime",
]
