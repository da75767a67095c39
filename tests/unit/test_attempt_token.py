"""The fencing token in ``duetime-attempt`` metadata, as the scheduler reads it."""

from __future__ import annotations

import pytest

from duetime_core.errors import FieldViolation
from duetime_infra.codec.attempt_token import ATTEMPT_METADATA_KEY, read_attempt_token


def read(*metadata: tuple[str, str | bytes]) -> tuple[int, list[str]]:
    violations: list[FieldViolation] = []
    number = read_attempt_token(violations, metadata)
    return number, [v.field for v in violations]


def test_one_attempt_number_is_read_as_text_or_bytes() -> None:
    assert read((ATTEMPT_METADATA_KEY, "7")) == (7, [])
    assert read(("authorization", "x"), (ATTEMPT_METADATA_KEY, b"2147483647")) == (2**31 - 1, [])


@pytest.mark.parametrize(
    "metadata",
    [
        (),
        ((ATTEMPT_METADATA_KEY, "0"),),
        ((ATTEMPT_METADATA_KEY, "-1"),),
        ((ATTEMPT_METADATA_KEY, "2147483648"),),
        ((ATTEMPT_METADATA_KEY, "1e3"),),
        ((ATTEMPT_METADATA_KEY, "٣"),),
        ((ATTEMPT_METADATA_KEY, "1"), (ATTEMPT_METADATA_KEY, "1")),
    ],
)
def test_anything_else_is_a_violation_naming_the_key(
    metadata: tuple[tuple[str, str], ...],
) -> None:
    assert read(*metadata)[1] == [ATTEMPT_METADATA_KEY]


def test_the_key_is_the_wire_name_the_worker_contract_documents() -> None:
    # A client in another language sends the name worker_service.proto documents; the one
    # literal outside the definition, so a rename of the constant cannot pass unnoticed.
    assert ATTEMPT_METADATA_KEY == "duetime-attempt"
