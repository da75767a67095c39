"""The CLI's tables fitted to a terminal's width: ids and states whole, headings on one line,
free text wrapped between words, the columns a table names dropped in its order, first named
first (the same read off a real terminal: tests/e2e/test_cli*.py)."""

from __future__ import annotations

import io

import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from rich.console import Console

from duetime.jobs.v1 import job_pb2, run_pb2
from duetime.jobs.v1.job_service_pb2 import BatchResult
from duetime_cli.tables import (
    ListTable,
    attempts_table,
    batch_table,
    jobs_table,
    run_detail,
    runs_table,
)
from testkit.terminal import screen_detail, screen_table

RUN_ID = "0f3c9a41-1f2b-4c3d-9e8f-7a6b5c4d3e2f"
JOB_ID = "1eb75594-3046-461b-ab91-ae9f9d14fc7b"
ERROR = "cannot connect: ConnectError: connection error: Connection refused (os error 111)"


def dead_lettered() -> run_pb2.Run:
    run = run_pb2.Run(
        name=f"teams/payments/jobs/{JOB_ID}/runs/{RUN_ID}",
        run_id=RUN_ID,
        job_id=JOB_ID,
        state=run_pb2.RUN_STATE_DEAD_LETTERED,
        origin=run_pb2.RUN_ORIGIN_TRIGGER,
        attempt=2,
        reason=run_pb2.RUN_REASON_ATTEMPTS_EXHAUSTED,
        reason_detail=ERROR,
    )
    run.nominal_time.FromJsonString("2026-12-01T22:50:02.101Z")
    run.start_lateness.FromJsonString("0.102s")
    for number in (1, 2):
        attempt = run.attempts.add(
            number=number, worker="w1", outcome=run_pb2.ATTEMPT_OUTCOME_FAILED, error=ERROR
        )
        attempt.start_time.FromJsonString("2026-12-01T22:50:02.201Z")
        attempt.end_time.FromJsonString("2026-12-01T22:50:02.301Z")
    return run


def job() -> job_pb2.Job:
    found = job_pb2.Job(job_id=JOB_ID, display_name="nightly invoices for the billing team")
    found.state = job_pb2.JOB_STATE_ACTIVE
    found.schedule.cron.expression = "0 2 * * *"
    found.schedule.cron.time_zone = "Asia/Kolkata"
    found.target.http.url = "https://billing.internal/run-invoices"
    found.next_run_time.FromJsonString("2026-12-01T20:30:00Z")
    return found


def shown(renderable: object, width: int) -> list[str]:
    """What a terminal ``width`` columns wide shows, a line it wraps joined again."""
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable, crop=False)
    return [line.rstrip() for line in console.export_text().splitlines()]


def check_list(table: ListTable, width: int, first: str) -> list[dict[str, str]]:
    """The table shown at ``width``: it fits, its headings are one line, and the columns it
    left out are the first of those it may drop."""
    lines = shown(table, width)
    assert max(map(len, lines)) <= width, lines
    heads, rows = screen_table(lines, first)
    dropped = [c for c in table.columns if c not in heads]
    assert set(dropped) == set(table.drop[: len(dropped)]), (width, heads)
    assert heads == [c for c in table.columns if c in heads]
    return rows


@pytest.mark.parametrize("width", range(80, 201, 4))
def test_lists_fit_the_width_dropping_columns_in_their_order(width: int) -> None:
    run = dead_lettered()
    (row,) = check_list(runs_table([run]), width, "RUN ID")
    assert (row["RUN ID"], row["STATE"]) == (RUN_ID, "DEAD_LETTERED")
    assert row.get("REASON", f"ATTEMPTS_EXHAUSTED: {ERROR}") == f"ATTEMPTS_EXHAUSTED: {ERROR}"

    (row,) = check_list(jobs_table([job()]), width, "JOB ID")
    assert (row["JOB ID"], row["STATE"]) == (JOB_ID, "ACTIVE")
    assert row["NAME"] == "nightly invoices for the billing team"

    for row in check_list(attempts_table(run), width, "ATTEMPT"):
        assert (row["OUTCOME"], row["ERROR"]) == ("FAILED", ERROR)


@pytest.mark.parametrize("width", range(80, 201, 4))
def test_the_columns_of_many_fit_the_width_in_their_order(width: int) -> None:
    """Labels in a list of jobs, a run's job across jobs, each item of a batch."""
    labelled = job()
    labelled.labels.update({"env": "prod", "tier": "gold"})
    (row,) = check_list(jobs_table([labelled]), width, "JOB ID")
    assert (row["JOB ID"], row["STATE"]) == (JOB_ID, "ACTIVE")
    assert row.get("LABELS", "env=prod, tier=gold") == "env=prod, tier=gold"

    table = runs_table([dead_lettered()], across_jobs=True)
    (row,) = check_list(table, width, "JOB ID" if "JOB ID" in shown(table, width)[0] else "RUN ID")
    assert (row["RUN ID"], row["STATE"], row.get("JOB ID", JOB_ID)) == (
        RUN_ID,
        "DEAD_LETTERED",
        JOB_ID,
    )

    refused = status_pb2.Status(code=code_pb2.FAILED_PRECONDITION, message=ERROR)
    refused.details.add().Pack(error_details_pb2.ErrorInfo(reason="RUN_NOT_DEAD_LETTERED"))
    name = f"teams/payments/jobs/{JOB_ID}/runs/{RUN_ID}"
    results = [
        BatchResult(name=name, status=status_pb2.Status()),
        BatchResult(name=name, status=refused),
    ]
    table = batch_table(results)
    rows = check_list(table, width, "JOB ID" if "JOB ID" in shown(table, width)[0] else "RUN ID")
    assert [(row["RUN ID"], row.get("JOB ID", JOB_ID), row["RESULT"]) for row in rows] == [
        (RUN_ID, JOB_ID, "OK"),
        (RUN_ID, JOB_ID, f"FAILED_PRECONDITION (RUN_NOT_DEAD_LETTERED): {ERROR}"),
    ]
    jobs = [BatchResult(name=f"teams/payments/jobs/{JOB_ID}", status=status_pb2.Status())]
    (row,) = check_list(batch_table(jobs), width, "JOB ID")
    assert row == {"JOB ID": JOB_ID, "RESULT": "OK"}


@pytest.mark.parametrize("width", [80, 120])
def test_a_detail_keeps_a_long_name_whole_and_wraps_text_between_words(width: int) -> None:
    lines = shown(run_detail(dead_lettered()), width)
    detail = screen_detail(lines, "Name")
    assert detail["Name"] == f"teams/payments/jobs/{JOB_ID}/runs/{RUN_ID}"
    assert detail["Reason"] == f"ATTEMPTS_EXHAUSTED: {ERROR}"
    assert [line for line in lines if len(line) > width] == (
        [line for line in lines if line.startswith("Name ")] if width == 80 else []
    )


def test_a_list_narrower_than_its_ids_shows_them_whole() -> None:
    lines = shown(runs_table([dead_lettered()]), 40)
    heads, rows = screen_table(lines, "RUN ID")
    assert heads == ["RUN ID", "STATE"]
    assert (rows[0]["RUN ID"], rows[0]["STATE"]) == (RUN_ID, "DEAD_LETTERED")
