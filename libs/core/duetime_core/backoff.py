"""Retry delays: exponential backoff with "equal jitter", for a run's attempts (from its
RetryPolicy) and for the services' own retry loops (``DoublingBackoff``).

After the n-th failed attempt of a run's budget the cap is
``min(max_backoff, initial_backoff * multiplier ** (n - 1))``, and the delay is drawn uniformly
from ``[cap / 2, cap]``. The lower half bound keeps retries from stampeding at zero after a
shared outage; the cap grows with the attempt and never exceeds ``max_backoff``.

Pure: the random draw is a parameter, so tests and callers choose their source.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from duetime_core.jobspec import RetryPolicy

_MICRO = timedelta(microseconds=1)


def backoff_cap(policy: RetryPolicy, failed_attempt: int) -> timedelta:
    """The upper bound of the delay after ``failed_attempt`` (1-based) failed attempts."""
    if failed_attempt < 1:
        raise ValueError(f"failed_attempt must be at least 1, got {failed_attempt}")
    ceiling = policy.max_backoff // _MICRO
    try:
        grown = (policy.initial_backoff // _MICRO) * policy.multiplier ** (failed_attempt - 1)
    except OverflowError:  # a huge attempt number: the ceiling applies long before
        return policy.max_backoff
    if grown >= ceiling:
        return policy.max_backoff
    return timedelta(microseconds=int(grown))


def backoff_bounds(policy: RetryPolicy, failed_attempt: int) -> tuple[timedelta, timedelta]:
    """``(low, high)``: every delay ``backoff_delay`` can return for this attempt, inclusive."""
    cap = backoff_cap(policy, failed_attempt)
    return timedelta(microseconds=(cap // _MICRO + 1) // 2), cap


def backoff_delay(policy: RetryPolicy, failed_attempt: int, rand: float) -> timedelta:
    """The delay before the next attempt, from a uniform draw ``rand`` in ``[0, 1)``."""
    if not 0.0 <= rand < 1.0:
        raise ValueError(f"rand must be in [0, 1), got {rand}")
    low, high = backoff_bounds(policy, failed_attempt)
    span = (high - low) // _MICRO
    return low + timedelta(microseconds=min(span, int(span * rand)))


class DoublingBackoff:
    """Delays in seconds for a service's retry loop (a broker, a lock, a lease): ``first``,
    then doubling up to ``cap``; ``reset`` after a success starts again from ``first``.

    With ``rand`` (a uniform draw in ``[0, 1)``, e.g. ``random.random``) each delay is drawn
    from ``[delay / 2, delay]``, the equal jitter above, so that peers failing together do not
    retry together. Without it the delays are exact.
    """

    def __init__(self, first: float, cap: float, rand: Callable[[], float] | None = None) -> None:
        if not 0 < first <= cap:
            raise ValueError(f"need 0 < first <= cap, got first={first}, cap={cap}")
        self._first = first
        self._cap = cap
        self._rand = rand
        self._delay = first

    def next(self) -> float:
        """The delay before the next try; the one after it is twice as long (up to ``cap``)."""
        delay, self._delay = self._delay, min(self._delay * 2, self._cap)
        if self._rand is None:
            return delay
        return delay * (0.5 + self._rand() / 2)

    def reset(self) -> None:
        self._delay = self._first
