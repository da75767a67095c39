"""Properties of next_fire_time that must hold from any start, in any zone.

The strongest check is a brute-force oracle: walk every UTC minute of a window, read the zone's
wall clock, and apply the DST rules (CronSchedule's comment in job.proto) literally (cronsim, an
independent implementation, decides whether a wall-clock minute matches). The fast search must
produce exactly the same instants. Starts are drawn uniformly over 2020-2035 and, half the time,
within two days of a DST transition, where the rules actually bite.

Calendars are checked against the same oracle: the claims of a job with excluded calendars run
exactly the oracle's occurrences whose local date in each calendar's own zone matches no rule
(the rules checked here literally), and record every other one SKIPPED (CALENDAR) under the
first calendar, in the job's order, that matches.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import uuid
from datetime import UTC, date, datetime, timedelta

from cronsim import CronSim
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from duetime_core.backfill import BackfillRange, occurrences_in
from duetime_core.calendars import CalendarRules, DateRange, Weekday, YearlyDate
from duetime_core.claim_plan import PlannedRun, plan_claim
from duetime_core.jobspec import HttpMethod, HttpTarget, JobSpec, MisfirePolicy, MisfireSettings
from duetime_core.planning import Occurrence
from duetime_core.records import RunReason, RunState
from duetime_core.schedule import (
    Cron,
    FoldPolicy,
    GapPolicy,
    Interval,
    fire_times,
    is_fixed_time,
    load_zone,
    next_fire_time,
)
from duetime_core.schedule.cron_match import compile_cron
from duetime_core.schedule.dst import transitions_between
from testkit.properties import examples

TRICKY_ZONES = [
    "America/New_York",
    "Europe/London",
    "Europe/Dublin",  # "negative" DST in tzdata
    "Australia/Sydney",
    "Australia/Lord_Howe",  # 30-minute shift
    "Pacific/Chatham",  # +12:45 / +13:45
    "America/St_Johns",  # -03:30
    "America/Santiago",  # changes at midnight
    "Asia/Beirut",  # changes at midnight
    "Africa/Cairo",  # changes at midnight
    "America/Havana",  # changes at midnight
    "Africa/Casablanca",  # Ramadan suspensions
    "Antarctica/Troll",  # 2-hour shift
    "Asia/Kolkata",  # no DST
    "UTC",
]

# Five-field expressions cronsim also understands (it has no W or '?').
ORACLE_EXPRESSIONS = [
    "0 * * * *",
    "*/15 * * * *",
    "30 * * * *",
    "* 2 * * *",
    "*/7 1-3 * * *",
    "30 */2 * * *",
    "30 2 * * *",
    "30 1 * * *",
    "0 0 * * *",
    "15 2 * * *",
    "45 1 * * *",
    "0,30 0-3 * * *",
    "30 23 * * *",
    "0 9 * * 1-5",
    "10,40 0,1,2 * * SUN",
    "0 0,12 1,15 * MON",
    "0 0 L * *",
    "0 6 * * 5L",
    "0 8 * * 0#1",
    "0 1 LW * *",
]

# Everything the parser accepts, for the properties that need no oracle.
ALL_EXPRESSIONS = [
    *ORACLE_EXPRESSIONS,
    "0 9 15W * *",
    "0 9 1W * *",
    "*/20 * * * * *",
    "30 30 1 * * *",
    "0 12 ? * MON",
    "59 23 31 12 *",
]

FIRST_DAY = datetime(2020, 1, 1, tzinfo=UTC)
LAST_DAY = datetime(2035, 12, 31, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@functools.cache
def transitions_of(zone: str, year: int) -> list[datetime]:
    start = datetime(year, 1, 1, tzinfo=UTC)
    return [t.at for t in transitions_between(start, start.replace(year=year + 1), load_zone(zone))]


@st.composite
def starts(draw: st.DrawFn, zone: str) -> datetime:
    seconds = int((LAST_DAY - FIRST_DAY).total_seconds())
    uniform = FIRST_DAY + timedelta(seconds=draw(st.integers(0, seconds)))
    near = transitions_of(zone, draw(st.integers(2020, 2035)))
    if not near or draw(st.booleans()):
        return uniform + timedelta(microseconds=draw(st.sampled_from([0, 0, 1, 500_000])))
    offset = timedelta(seconds=draw(st.integers(-2 * 86400, 86400)))
    return draw(st.sampled_from(near)) + offset


@st.composite
def schedules(draw: st.DrawFn, expressions: list[str]) -> Cron:
    expression = draw(st.sampled_from(expressions))
    zone = draw(st.sampled_from(TRICKY_ZONES))
    if not is_fixed_time(expression):
        return Cron(expression, zone)
    gap = draw(st.sampled_from([None, GapPolicy.SHIFT, GapPolicy.SKIP]))
    fold = draw(st.sampled_from([None, FoldPolicy.FIRST, FoldPolicy.LAST, FoldPolicy.BOTH]))
    return Cron(expression, zone, gap=gap, fold=fold)


def oracle(cron: Cron, start: datetime, end: datetime) -> list[datetime]:
    """Occurrences in ``(start, end]``, minute by minute, by the rules as written."""
    zone = load_zone(cron.time_zone)
    fixed = is_fixed_time(cron.expression)
    first_ok = not fixed or cron.fold in (None, FoldPolicy.FIRST, FoldPolicy.BOTH)
    second_ok = not fixed or cron.fold in (FoldPolicy.LAST, FoldPolicy.BOTH)
    shift = fixed and cron.gap in (None, GapPolicy.SHIFT)

    def wall(instant: datetime) -> datetime:
        return instant.astimezone(zone).replace(tzinfo=None)

    matches: set[datetime] = set()
    for local in CronSim(cron.expression, wall(start) - timedelta(days=2)):
        if local > wall(end) + timedelta(days=2):
            break
        matches.add(local)

    found = []
    instant = start.replace(second=0, microsecond=0)
    while instant <= end:
        local = wall(instant)
        offset = instant.astimezone(zone).utcoffset()
        previous = (instant - MINUTE).astimezone(zone).utcoffset()
        assert offset is not None
        assert previous is not None
        hit = False
        if local in matches:
            readings = {
                local.replace(tzinfo=zone, fold=0).utcoffset(),
                local.replace(tzinfo=zone, fold=1).utcoffset(),
            }
            if len(readings) == 1:
                hit = True
            else:
                on_first_pass = offset == max(readings)  # type: ignore[type-var]
                hit = first_ok if on_first_pass else second_ok
        if shift and offset > previous:
            # The clocks jumped forward at this very minute; fixed times they skipped run now.
            skipped = local - (offset - previous)
            hit = hit or any(
                skipped + k * MINUTE in matches for k in range((local - skipped) // MINUTE)
            )
        if hit and instant > start:
            found.append(instant)
        instant += MINUTE
    return found


def search(cron: Cron, start: datetime, end: datetime) -> list[datetime]:
    found: list[datetime] = []
    moment = next_fire_time(cron, start)
    while moment is not None and moment <= end:
        assert moment > (found[-1] if found else start), "not strictly after the start"
        found.append(moment)
        moment = next_fire_time(cron, moment)
    return found


@settings(max_examples=examples(250), deadline=None)
@given(data=st.data(), cron=schedules(ORACLE_EXPRESSIONS))
def test_matches_brute_force_oracle(data: st.DataObject, cron: Cron) -> None:
    start = data.draw(starts(cron.time_zone))
    end = start + timedelta(days=3)
    assert search(cron, start, end) == oracle(cron, start, end)


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ALL_EXPRESSIONS))
def test_strictly_after_and_increasing(data: st.DataObject, cron: Cron) -> None:
    start = data.draw(starts(cron.time_zone))
    found = fire_times(cron, start, 6)
    assert len(found) == 6
    assert all(t.tzinfo is UTC for t in found)
    assert [start, *found] == sorted({start, *found})


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ALL_EXPRESSIONS), fraction=st.floats(0, 1, exclude_max=True))
def test_same_answer_from_any_start_before_it(
    data: st.DataObject, cron: Cron, fraction: float
) -> None:
    start = data.draw(starts(cron.time_zone))
    found = next_fire_time(cron, start)
    assert found is not None
    later_start = start + (found - start) * fraction
    assume(later_start < found)
    assert next_fire_time(cron, later_start) == found
    # Just before the answer, too: the tightest start that must still find it.
    assert next_fire_time(cron, found - timedelta(microseconds=1)) == found


@settings(max_examples=examples(150), deadline=None)
@given(
    data=st.data(),
    zone=st.sampled_from(TRICKY_ZONES),
    hour=st.integers(0, 23),
    minute=st.sampled_from([0, 15, 30, 45]),
)
def test_fixed_daily_job_fires_once_per_local_day(
    data: st.DataObject, zone: str, hour: int, minute: int
) -> None:
    start = data.draw(starts(zone))
    tz = load_zone(zone)
    found = fire_times(Cron(f"{minute} {hour} * * *", zone), start, 8)
    days = [t.astimezone(tz).date() for t in found]
    assert all((b - a).days == 1 for a, b in itertools.pairwise(days))


@settings(max_examples=examples(150), deadline=None)
@given(
    data=st.data(),
    zone=st.sampled_from(TRICKY_ZONES),
    hour=st.integers(0, 23),
    minute=st.sampled_from([0, 15, 30, 45]),
)
def test_skip_leaves_out_only_days_where_the_time_does_not_exist(
    data: st.DataObject, zone: str, hour: int, minute: int
) -> None:
    start = data.draw(starts(zone))
    tz = load_zone(zone)
    found = fire_times(Cron(f"{minute} {hour} * * *", zone, gap=GapPolicy.SKIP), start, 8)
    for earlier, later in itertools.pairwise(found):
        first_day = earlier.astimezone(tz).date()
        missing = (later.astimezone(tz).date() - first_day).days - 1
        assert missing in (0, 1)
        if missing:
            local = datetime.combine(first_day + timedelta(days=1), datetime.min.time())
            local = local.replace(hour=hour, minute=minute)
            as_read = local.replace(tzinfo=tz).astimezone(UTC).astimezone(tz).replace(tzinfo=None)
            assert as_read != local, f"{local} exists in {zone} but was skipped"


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ALL_EXPRESSIONS))
def test_every_fire_shows_a_matching_local_time_unless_shifted(
    data: st.DataObject, cron: Cron
) -> None:
    start = data.draw(starts(cron.time_zone))
    tz = load_zone(cron.time_zone)
    matcher = compile_cron(cron.expression)
    shifting = is_fixed_time(cron.expression) and cron.gap is not GapPolicy.SKIP
    for fire in fire_times(cron, start, 6):
        local = fire.astimezone(tz).replace(tzinfo=None)
        if matcher.first_at_or_after(local) == local:
            continue
        # Not a matching wall time: only a SHIFT at the end of a gap may do that.
        assert shifting
        assert (fire - timedelta(seconds=1)).astimezone(tz).utcoffset() != fire.astimezone(
            tz
        ).utcoffset()


@settings(max_examples=examples(300), deadline=None)
@given(
    expression=st.sampled_from(ORACLE_EXPRESSIONS),
    start=st.datetimes(datetime(2020, 1, 1), datetime(2035, 12, 31)),
)
def test_wall_clock_matching_agrees_with_cronsim(expression: str, start: datetime) -> None:
    start = start.replace(microsecond=0)
    assert compile_cron(expression).first_after(start) == next(CronSim(expression, start))


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ORACLE_EXPRESSIONS))
def test_an_end_time_cuts_the_oracle_at_it(data: st.DataObject, cron: Cron) -> None:
    """No occurrence after end_time, every one at or before it: the oracle's, cut there. The end
    is drawn anywhere in the window (half the time on one of its occurrences, which still runs),
    so across DST transitions too."""
    start = data.draw(starts(cron.time_zone))
    window = start + timedelta(days=3)
    expected = oracle(cron, start, window)
    on_an_occurrence: bool = data.draw(st.booleans())
    if expected and on_an_occurrence:
        end = data.draw(st.sampled_from(expected))
    else:
        end = start + timedelta(seconds=data.draw(st.integers(0, 3 * 86400)))
    ending = dataclasses.replace(cron, end_time=end)
    assert search(ending, start, window) == [t for t in expected if t <= end]
    assert next_fire_time(ending, max(end, start)) is None


@settings(max_examples=examples(200), deadline=None)
@given(
    every=st.timedeltas(timedelta(seconds=1), timedelta(days=2)),
    anchor=st.datetimes(datetime(2020, 1, 1), datetime(2035, 1, 1)),
    steps=st.integers(0, 50),
    extra=st.timedeltas(timedelta(0), timedelta(days=2)),
)
def test_an_interval_ends_at_its_last_step_within_end_time(
    every: timedelta, anchor: datetime, steps: int, extra: timedelta
) -> None:
    anchor = anchor.replace(tzinfo=UTC)
    end = anchor + steps * every + min(extra, every - timedelta(microseconds=1))
    ending = Interval(every, anchor, end_time=end)
    found = fire_times(ending, anchor - timedelta(microseconds=1), steps + 5)
    assert found == [anchor + k * every for k in range(steps + 1)]


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ORACLE_EXPRESSIONS))
def test_a_backfill_runs_the_oracles_occurrences_in_its_range(
    data: st.DataObject, cron: Cron
) -> None:
    """A backfill of ``[start, end)`` runs exactly the oracle's occurrences there, across DST
    transitions, each once and in order; the schedule's own end_time does not cut it (a
    backfill names its own range). The range's ends are drawn on occurrences half the time."""
    start = data.draw(starts(cron.time_zone))
    window = start + timedelta(days=3)
    around = oracle(cron, start - timedelta(days=1), window)
    on_starts: bool = data.draw(st.booleans())
    if around and on_starts:
        start = data.draw(st.sampled_from(around))
    end = start + timedelta(seconds=data.draw(st.integers(1, 2 * 86400)))
    on_ends: bool = data.draw(st.booleans())
    if around and on_ends:
        end = max(end, data.draw(st.sampled_from(around)) + timedelta(microseconds=1))
    expected = oracle(cron, start - timedelta(microseconds=1), end - timedelta(microseconds=1))
    ended = dataclasses.replace(cron, end_time=start)
    assert list(occurrences_in(ended, BackfillRange(start, end))) == expected


JOB = uuid.UUID("00000000-0000-0000-0000-000000000340")
WINDOW = timedelta(days=3)


@st.composite
def calendars(draw: st.DrawFn, around: datetime) -> CalendarRules:
    """Rules in a zone of the battery, their dates drawn within days of ``around`` (so that they
    bite), February 29 among the yearly ones now and then."""
    zone = draw(st.sampled_from(TRICKY_ZONES))
    near = around.astimezone(load_zone(zone)).date()
    day = st.integers(-2, 4).map(lambda k: near + timedelta(days=k))
    first = draw(day)
    yearly_day = draw(day)
    return CalendarRules(
        zone,
        weekdays=frozenset(draw(st.sets(st.sampled_from(list(Weekday)), max_size=2))),
        dates=frozenset(draw(st.sets(day, max_size=2))),
        ranges=(DateRange(first, first + timedelta(days=draw(st.integers(0, 2)))),)
        if draw(st.booleans())
        else (),
        yearly=frozenset(
            {YearlyDate(yearly_day.month, yearly_day.day)} if draw(st.booleans()) else set()
        )
        | ({YearlyDate(2, 29)} if draw(st.booleans()) else set()),
    )


def matches(rules: CalendarRules, instant: datetime) -> bool:
    """The rules as written, on the calendar's wall-clock date at ``instant``."""
    local: date = instant.astimezone(load_zone(rules.time_zone)).date()
    return (
        local.isoweekday() in {int(w) for w in rules.weekdays}
        or local in rules.dates
        or any(r.first <= local <= r.last for r in rules.ranges)
        or (local.month, local.day) in {(y.month, y.day) for y in rules.yearly}
    )


def claimed(
    cron: Cron,
    named: list[tuple[str, CalendarRules]],
    start: datetime,
    misfire: MisfireSettings | None = None,
) -> list[PlannedRun]:
    """Every claim of the job from ``start`` on: by default the clock at ``start`` and the
    look-ahead reaching the window's end (nothing misfires); with ``misfire``, the clock at
    the window's end and no look-ahead (the fleet was down for the window)."""
    spec = JobSpec(
        display_name="",
        schedule=cron,
        target=HttpTarget(HttpMethod.POST, "https://x.test/"),
        excluded_calendars=tuple(name for name, _ in named),
        misfire=misfire or MisfireSettings(),
    )
    now, lookahead = (start, WINDOW) if misfire is None else (start + WINDOW, timedelta(0))
    first = next_fire_time(cron, start)
    pending = Occurrence(first, first) if first is not None else None
    runs: list[PlannedRun] = []
    while pending is not None and pending.nominal_time <= start + WINDOW:
        plan = plan_claim(JOB, spec, pending, now, lookahead, 0, named)
        runs += plan.runs
        pending = plan.next
    return runs


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ORACLE_EXPRESSIONS))
def test_claims_skip_exactly_the_oracles_occurrences_a_calendar_excludes(
    data: st.DataObject, cron: Cron
) -> None:
    start = data.draw(starts(cron.time_zone))
    count = data.draw(st.integers(1, 2))
    named = [(f"cal-{i}", data.draw(calendars(start))) for i in range(count)]
    expected = oracle(cron, start, start + WINDOW)

    def first_excluding(instant: datetime) -> str | None:
        return next((name for name, rules in named if matches(rules, instant)), None)

    runs = claimed(cron, named, start)
    queued = [r.nominal_time for r in runs if r.state is RunState.QUEUED]
    assert queued == [t for t in expected if first_excluding(t) is None]
    # Each CALENDAR record stands for the oracle's occurrences from its first to its last,
    # all excluded by the calendar it names; together, every excluded occurrence, once.
    covered: list[datetime] = []
    for record in (r for r in runs if r.reason is RunReason.CALENDAR):
        assert record.state is RunState.SKIPPED
        last = record.range_end_time or record.nominal_time
        stretch = [t for t in expected if record.nominal_time <= t <= last]
        assert len(stretch) == record.occurrence_count
        assert {first_excluding(t) for t in stretch} == {record.detail}
        covered += stretch
    assert sorted(covered) == [t for t in expected if first_excluding(t) is not None]


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), cron=schedules(ORACLE_EXPRESSIONS))
def test_late_claims_account_for_every_occurrence_once_around_excluded_days(
    data: st.DataObject, cron: Cron
) -> None:
    """Claimed late, under any misfire policy, every oracle occurrence is one record's: a run,
    a CALENDAR record (excluded by its calendar) or a MISSED record (excluded by none), each
    record's range holding exactly the occurrences it counts: a MISSED range never spans an
    excluded day."""
    start = data.draw(starts(cron.time_zone))
    named = [(f"cal-{i}", data.draw(calendars(start))) for i in range(data.draw(st.integers(1, 2)))]
    misfire = MisfireSettings(
        policy=data.draw(st.sampled_from(list(MisfirePolicy))),
        threshold=timedelta(minutes=data.draw(st.integers(1, 2 * 24 * 60))),
        max_catch_up_runs=data.draw(st.integers(1, 5)),
        max_catch_up_age=timedelta(hours=data.draw(st.integers(1, 72))),
    )
    expected = oracle(cron, start, start + WINDOW)

    def first_excluding(instant: datetime) -> str | None:
        return next((name for name, rules in named if matches(rules, instant)), None)

    covered: list[datetime] = []
    for record in claimed(cron, named, start, misfire):
        if record.reason is RunReason.DST_GAP:
            continue  # stands for instants that are no occurrence (the gap's ends)
        last = record.range_end_time or record.nominal_time
        stretch = [t for t in expected if record.nominal_time <= t <= last]
        assert len(stretch) == record.occurrence_count
        wanted = {record.detail} if record.reason is RunReason.CALENDAR else {None}
        assert {first_excluding(t) for t in stretch} == wanted
        covered += stretch
    assert sorted(covered) == expected
