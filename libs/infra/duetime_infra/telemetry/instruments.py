"""The metrics Duetime exports, and the calls that record them where each fact is known.

Every recording function is cheap and never touches a database: callers pass what their
transaction already read, after it committed (a rolled-back transaction changed nothing, so it
counts nothing, except as a fencing refusal). Until ``bind`` is given a MeterProvider (metrics
off, most tests) the instruments are OpenTelemetry's no-op ones.

Names are OpenTelemetry's, with units; the Prometheus endpoint turns ``duetime.runs.finished``
(unit ``{run}``) into ``duetime_runs_finished_total`` and ``duetime.run.start.lateness`` (unit
``s``) into ``duetime_run_start_lateness_seconds``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta

from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, NoOpMeter, Observation

METER_NAME = "duetime"

# Seconds: a healthy fleet starts runs within milliseconds of their time, the promise is 5 s,
# and an outage or a misfire catch-up shows up in minutes to an hour.
LATENESS_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)

# Why a scheduler stopped owning partitions, from ``OwnershipChange.reason``; anything else is
# the reason its etcd lease was lost (expired, refresh failed or timed out).
_PARTITION_LOSS_CAUSES = frozenset({"released", "key_vanished", "stopping"})
LEASE_LOST = "lease_lost"


Key = tuple[tuple[str, str], ...]


class _Tally:
    """A counter summed in-process and read by the exporter when it collects: an add is a dict
    update, not a (much dearer) SDK call, on paths that run thousands of times a second. Adds
    come from the service's event-loop thread; a scrape, on its own thread, reads a copy."""

    def __init__(self, meter: Meter, name: str, *, unit: str, description: str) -> None:
        self._totals: dict[Key, int] = {}
        meter.create_observable_counter(
            name, callbacks=[self._observe], unit=unit, description=description
        )

    def add(self, amount: int, attributes: Key) -> None:
        self._totals[attributes] = self._totals.get(attributes, 0) + amount

    def _observe(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(total, dict(key)) for key, total in self._totals.copy().items()]


class Instruments:
    def __init__(self, meter: Meter) -> None:
        self.start_lateness = meter.create_histogram(
            "duetime.run.start.lateness",
            unit="s",
            description=(
                "When a run's first attempt started, by the database clock, minus the run's "
                "effective time (reference=effective), nominal time (reference=nominal) or "
                "eligible time (reference=eligible: the effective time, or when its team's "
                "quota let it go; the 5 s promise is measured from it)"
            ),
            explicit_bucket_boundaries_advisory=LATENESS_BUCKETS,
        )
        self.quota_delay = meter.create_histogram(
            "duetime.run.quota.delay",
            unit="s",
            description=(
                "How long a run's own team quota held it back (eligible minus effective time), "
                "by the limit (rate, concurrency); lateness that is the team's, not the "
                "platform's"
            ),
            explicit_bucket_boundaries_advisory=LATENESS_BUCKETS,
        )
        self.runs_held = _Tally(
            meter,
            "duetime.runs.held",
            unit="{run}",
            description=(
                "Runs held back before dispatch, by reason: QUOTA (the team's rate or "
                "concurrency limit) or FAIR_SHARE (the dispatch credit was taken; they wait "
                "their turn among teams)"
            ),
        )
        self.runs_finished = _Tally(
            meter,
            "duetime.runs.finished",
            unit="{run}",
            description="Runs that reached a final state, by state and reason (a range: one)",
        )
        self.attempts_closed = _Tally(
            meter,
            "duetime.attempts.closed",
            unit="{attempt}",
            description="Attempts closed, by outcome and by whom (worker report or reaper)",
        )
        self.attempt_lease_expiries = _Tally(
            meter,
            "duetime.attempt.lease.expiries",
            unit="{attempt}",
            description=(
                "Attempts the reaper closed because their lease expired (LEASE_EXPIRED) or "
                "their deadline passed (TIMED_OUT)"
            ),
        )
        self.partitions_owned = meter.create_gauge(
            "duetime.partitions.owned",
            unit="{partition}",
            description="Partitions this scheduler owns",
        )
        self.partitions_lost = _Tally(
            meter,
            "duetime.partitions.lost",
            unit="{partition}",
            description=(
                "Partitions this scheduler stopped owning, by cause: lease_lost (its etcd lease "
                "expired or could not be renewed), key_vanished, released, stopping"
            ),
        )
        self.fencing_refusals = _Tally(
            meter,
            "duetime.fencing.refusals",
            unit="{refusal}",
            description=(
                "Writes refused by fencing: scheduler transactions rolled back because a newer "
                "partition owner's token is stored (check=token) or the lease was not safely "
                "held at commit (check=lease); reports of an attempt that is not the run's open "
                "one (operation=complete, check=attempt); heartbeats of an attempt the reaper "
                "already closed (operation=heartbeat, check=attempt)"
            ),
        )
        self.outbox_depth = meter.create_gauge(
            "duetime.outbox.depth",
            unit="{row}",
            description="Outbox rows waiting to be published (estimated above 100,000)",
        )
        self.outbox_oldest_age = meter.create_gauge(
            "duetime.outbox.oldest.age",
            unit="s",
            description="How long the oldest outbox row has waited (0 when the outbox is empty)",
        )
        self.consumer_lag = meter.create_gauge(
            "duetime.consumer.lag",
            unit="{message}",
            description="Messages on the worker's assigned partitions not yet fetched, by topic",
        )
        self.worker_pending = meter.create_gauge(
            "duetime.worker.pending",
            unit="{message}",
            description=(
                "Messages a worker took and has not started yet (held until their effective "
                "time, waiting for an execution slot, or being started), by topic"
            ),
        )
        self.archive_failures = _Tally(
            meter,
            "duetime.archive.failures",
            unit="{week}",
            description=(
                "Weeks of run history an archiving pass could not archive, kept in PostgreSQL, "
                "by reason: store (the object store failed), unverified (what was read back is "
                "not what the partitions hold), lock (the drop's locks were not granted in "
                "time), error, crashed (the pass's process ended without a result). Alert on "
                "any increase"
            ),
        )
        self.archive_weeks = _Tally(
            meter,
            "duetime.archive.weeks",
            unit="{week}",
            description=(
                "Weeks an archiving pass handled, by outcome: archived (written, verified, "
                "dropped), in_flight and changed (left for the next pass), failed"
            ),
        )
        self.archive_runs = _Tally(
            meter,
            "duetime.archive.runs",
            unit="{run}",
            description="Runs archived (and dropped from PostgreSQL)",
        )
        self.signing_key_fetches = _Tally(
            meter,
            "duetime.signing.key.fetches",
            unit="{fetch}",
            description=(
                "Teams' signing keys asked for by workers (GetSigningKeys), by outcome: served, "
                "refused (the worker named no run of the team it holds: PERMISSION_DENIED)"
            ),
        )
        self.archive_pending = meter.create_gauge(
            "duetime.archive.pending",
            unit="{week}",
            description=(
                "Weeks past the archive's hot retention still in PostgreSQL after the last "
                "pass (a week with runs in flight waits; more than one or two: see the "
                "failures)"
            ),
        )


_current = Instruments(NoOpMeter(METER_NAME))


def bind(provider: MeterProvider | None) -> Instruments:
    """Records from now on into ``provider`` (``None``: nowhere)."""
    global _current
    meter = NoOpMeter(METER_NAME) if provider is None else provider.get_meter(METER_NAME)
    _current = Instruments(meter)
    return _current


def attempt_started(
    priority: str,
    effective_lateness: timedelta,
    nominal_lateness: timedelta,
    eligible_lateness: timedelta | None = None,
) -> None:
    """A run's first attempt started; ``eligible_lateness`` defaults to the effective one (a
    run its quota never held)."""
    lateness = _current.start_lateness
    if eligible_lateness is None:
        eligible_lateness = effective_lateness
    for reference, late in (
        ("effective", effective_lateness),
        ("nominal", nominal_lateness),
        ("eligible", eligible_lateness),
    ):
        lateness.record(
            max(late.total_seconds(), 0.0), {"priority": priority, "reference": reference}
        )


def quota_delayed(limit: str, delay: timedelta) -> None:
    """A run its team's quota held back was let go ``delay`` after its effective time."""
    _current.quota_delay.record(max(delay.total_seconds(), 0.0), {"limit": limit.lower()})


def runs_held(reason: str, count: int = 1) -> None:
    if count:
        _current.runs_held.add(count, (("reason", reason),))


def runs_finished(state: str, reason: str, count: int = 1) -> None:
    if count:
        _current.runs_finished.add(count, (("state", state), ("reason", reason)))


def attempt_closed(outcome: str, by: str) -> None:
    _current.attempts_closed.add(1, (("outcome", outcome), ("closed_by", by)))


def attempt_lease_expired(outcome: str) -> None:
    """An attempt the reaper closed: counted as closed and as a lease expiry."""
    attempt_closed(outcome, "reaper")
    _current.attempt_lease_expiries.add(1, (("outcome", outcome),))


def fencing_refused(operation: str, check: str, count: int = 1) -> None:
    if count:
        _current.fencing_refusals.add(count, (("operation", operation), ("check", check)))


def partitions_changed(scheduler_id: str, owned: int, lost: int, reason: str) -> None:
    _current.partitions_owned.set(owned, {"scheduler_id": scheduler_id})
    if lost:
        cause = reason if reason in _PARTITION_LOSS_CAUSES else LEASE_LOST
        _current.partitions_lost.add(lost, (("scheduler_id", scheduler_id), ("cause", cause)))


def outbox_sampled(depth: int, oldest_age: timedelta | None) -> None:
    _current.outbox_depth.set(depth)
    _current.outbox_oldest_age.set(0.0 if oldest_age is None else oldest_age.total_seconds())


def consumer_lag_sampled(lag_by_topic: Mapping[str, int]) -> None:
    for topic, lag in lag_by_topic.items():
        _current.consumer_lag.set(lag, {"topic": topic})


def worker_pending_sampled(pending_by_topic: Mapping[str, int]) -> None:
    for topic, pending in pending_by_topic.items():
        _current.worker_pending.set(pending, {"topic": topic})


def archive_week(outcome: str, reason: str, runs: int) -> None:
    """A week an archiving pass handled; ``reason`` for a failure ("" otherwise)."""
    _current.archive_weeks.add(1, (("outcome", outcome),))
    if reason:
        _current.archive_failures.add(1, (("reason", reason),))
    if runs:
        _current.archive_runs.add(runs, ())


def archive_pending(weeks: int) -> None:
    _current.archive_pending.set(weeks)


def signing_keys_fetched(outcome: str) -> None:
    """A worker's GetSigningKeys answered: ``served`` or ``refused``."""
    _current.signing_key_fetches.add(1, (("outcome", outcome),))
