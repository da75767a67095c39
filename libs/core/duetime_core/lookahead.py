"""How far ahead a scheduler claims: its look-ahead, grown by what is due.

A run must be claimed, published and started ahead before its instant. In steady state the
fixed look-ahead (``DUETIME_CLAIM_LOOKAHEAD``, 10 s) is plenty; a herd of N runs due at one
instant needs ``N / rate`` seconds of claiming on top of it, where ``rate`` is what the
scheduler counts on claiming a second (``DUETIME_CLAIM_RATE``). So the claim reaches as far as
the latest instant y (within the horizon, one minute) whose jobs due by it could not all be
claimed in time if the claim began later:

    look-ahead = max(base, max{ y <= horizon : due_by(y) / rate >= y - base })

where ``due_by(y)`` counts the jobs not yet claimed whose next run is due within y seconds.
Steady load below ``rate`` never grows it (jobs due within y - base number about
rate_steady x (y - base)); a herd grows it exactly as much as its size needs. Pure: the store
counts, the claimer asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta


def herd_lookahead(
    due_by_second: Iterable[tuple[int, int]],
    *,
    base: timedelta,
    horizon: timedelta,
    rate: float,
) -> timedelta:
    """The look-ahead for jobs due in whole seconds from now: ``due_by_second`` gives, for
    some second counts y (ascending or not), how many jobs are due in ``(y - 1, y]`` seconds.
    """
    counts = sorted(due_by_second)
    base_s = base.total_seconds()
    limit = horizon.total_seconds()
    reach = base_s
    due = 0
    for second, count in counts:
        if second > limit:
            break
        due += count
        if due / rate >= second - base_s:
            reach = max(reach, float(second))
    return timedelta(seconds=min(max(reach, base_s), max(limit, base_s)))
