"""Retry backoff: exponential with equal jitter, bounded, the cap growing with the attempt."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime_core.backoff import DoublingBackoff, backoff_bounds, backoff_cap, backoff_delay
from duetime_core.jobspec import RetryPolicy

S = timedelta(seconds=1)
DEFAULT = RetryPolicy()  # 1 s initial, x2, 5 min max

policies = st.builds(
    lambda initial_ms, extra_ms, multiplier: RetryPolicy(
        max_attempts=5,
        initial_backoff=timedelta(milliseconds=initial_ms),
        max_backoff=timedelta(milliseconds=initial_ms + extra_ms),
        multiplier=multiplier,
    ),
    st.integers(1, 3_600_000),
    st.integers(0, 24 * 3_600_000),
    st.floats(1.0, 10.0),
)
draws = st.floats(0.0, 1.0, exclude_max=True)


def test_default_policy_doubles_from_one_second_up_to_five_minutes() -> None:
    highs = [backoff_bounds(DEFAULT, n)[1] for n in range(1, 12)]
    assert highs[:5] == [1 * S, 2 * S, 4 * S, 8 * S, 16 * S]
    assert highs[8] == 256 * S
    assert highs[9] == highs[10] == 300 * S  # 512 s capped at max_backoff
    assert backoff_bounds(DEFAULT, 1) == (S / 2, S)
    assert backoff_bounds(DEFAULT, 3) == (2 * S, 4 * S)


def test_the_draw_spans_the_bounds() -> None:
    low, high = backoff_bounds(DEFAULT, 4)
    assert backoff_delay(DEFAULT, 4, 0.0) == low == 4 * S
    assert backoff_delay(DEFAULT, 4, 0.5) == 6 * S
    assert high - backoff_delay(DEFAULT, 4, 0.999999) < timedelta(milliseconds=1)


def test_multiplier_one_is_a_constant_cap() -> None:
    flat = RetryPolicy(initial_backoff=10 * S, max_backoff=60 * S, multiplier=1.0)
    assert {backoff_bounds(flat, n) for n in range(1, 50)} == {(5 * S, 10 * S)}


def test_huge_attempt_numbers_do_not_overflow() -> None:
    steep = RetryPolicy(multiplier=10.0, max_backoff=timedelta(hours=24))
    assert backoff_cap(steep, 10_000) == timedelta(hours=24)
    assert backoff_delay(steep, 10_000, 0.25) == timedelta(hours=15)


@pytest.mark.parametrize(("attempt", "rand"), [(0, 0.5), (-1, 0.5), (1, 1.0), (1, -0.1)])
def test_bad_input_is_refused(attempt: int, rand: float) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (either argument)
        backoff_delay(DEFAULT, attempt, rand)


@given(policies, st.integers(1, 200), draws)
def test_delay_is_within_bounds_and_never_exceeds_max_backoff(
    policy: RetryPolicy, attempt: int, rand: float
) -> None:
    low, high = backoff_bounds(policy, attempt)
    delay = backoff_delay(policy, attempt, rand)
    assert low <= delay <= high <= policy.max_backoff
    assert low >= policy.initial_backoff / 2 - timedelta(microseconds=1)
    assert high - low <= low + timedelta(microseconds=1)  # equal jitter: never below cap / 2


@given(policies, st.integers(1, 200))
def test_cap_grows_with_the_attempt(policy: RetryPolicy, attempt: int) -> None:
    assert backoff_cap(policy, attempt) <= backoff_cap(policy, attempt + 1)
    ceiling_us = policy.max_backoff / timedelta(microseconds=1)
    try:
        grown_us = policy.initial_backoff / timedelta(microseconds=1)
        grown_us *= policy.multiplier ** (attempt - 1)
    except OverflowError:
        grown_us = ceiling_us
    expected_us = min(ceiling_us, grown_us)
    assert abs(backoff_cap(policy, attempt) / timedelta(microseconds=1) - expected_us) <= 1


@given(policies, st.integers(1, 50), draws, draws)
def test_delay_is_monotonic_in_the_draw(
    policy: RetryPolicy, attempt: int, a: float, b: float
) -> None:
    lo, hi = sorted((a, b))
    assert backoff_delay(policy, attempt, lo) <= backoff_delay(policy, attempt, hi)


def test_a_retry_loop_doubles_its_delay_up_to_the_cap_and_starts_over_after_a_reset() -> None:
    delays = DoublingBackoff(0.1, 1.0)
    assert [delays.next() for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    delays.reset()
    assert delays.next() == 0.1


@given(draws=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=40))
def test_a_jittered_retry_loop_waits_between_half_and_all_of_each_delay(
    draws: list[float],
) -> None:
    exact = DoublingBackoff(0.2, 5.0)
    jittered = DoublingBackoff(0.2, 5.0, iter(draws).__next__)
    for _ in draws:
        delay = exact.next()
        assert delay / 2 <= jittered.next() <= delay


@pytest.mark.parametrize(("first", "cap"), [(0, 1), (-1, 1), (2, 1)])
def test_a_retry_loop_needs_a_positive_first_delay_within_its_cap(first: float, cap: float) -> None:
    with pytest.raises(ValueError, match="first <= cap"):
        DoublingBackoff(first, cap)
