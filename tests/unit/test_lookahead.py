from datetime import timedelta

from duetime_core.lookahead import SteadyFlow, herd_lookahead

S = timedelta(seconds=1)


def reach(counts: dict[int, int], rate: float = 1000) -> float:
    return herd_lookahead(counts.items(), base=10 * S, horizon=60 * S, rate=rate).total_seconds()


def test_steady_load_below_the_rate_keeps_the_base_look_ahead() -> None:
    assert reach({}) == 10
    # What is due within the base look-ahead is claimed already: only the rest is counted.
    assert reach(dict.fromkeys(range(11, 61), 900)) == 10


def test_a_herd_is_claimed_as_far_ahead_as_its_size_needs() -> None:
    # 30,000 due in 40 s at 1,000 a second: 30 s of claiming, so from 40 s ahead.
    assert reach({40: 30_000}) == 40
    # 20,000 due in 40 s need 20 s: not yet (it grows once the herd is 30 s away).
    assert reach({40: 20_000}) == 10
    assert reach({30: 20_000}) == 30
    # Small teams' runs before the herd count towards it.
    assert reach({5: 5_000, 32: 17_000}) == 32


def test_the_horizon_caps_it_and_what_lies_beyond_is_left_for_later() -> None:
    assert reach({50: 100_000}) == 50
    assert reach({90: 100_000}) == 10
    assert herd_lookahead([(5, 10**6)], base=10 * S, horizon=0 * S, rate=1) == 10 * S


def test_steady_load_above_the_rate_keeps_the_base_look_ahead_once_measured() -> None:
    # 1,600 a second of 10 s jobs, claimed to the base look-ahead: the next 10 s are due.
    due = dict.fromkeys(range(11, 21), 1_600)
    # Unmeasured, the rate says it could not be claimed in time: the look-ahead grows.
    assert reach(due) == 20
    # The scheduler claims 1,600 a second on time: counted on, the look-ahead stays.
    steady = herd_lookahead(due.items(), base=10 * S, horizon=60 * S, rate=1000, steady=1_600)
    assert steady == 10 * S


def test_a_herd_on_top_of_a_steady_flow_is_planned_on_what_the_flow_leaves() -> None:
    # 1,600 a second steady (counted on as 2,000), and 10,000 due in 30 s: 1,600 x 20 s +
    # 10,000 = 42,000 by then, 21 s at 2,000 a second, more than the 20 s left: grown.
    due = dict.fromkeys(range(11, 61), 1_600)
    due[30] += 10_000
    grown = herd_lookahead(due.items(), base=10 * S, horizon=60 * S, rate=1000, steady=1_600)
    assert grown >= 30 * S
    del due[30]
    flat = herd_lookahead(due.items(), base=10 * S, horizon=60 * S, rate=1000, steady=1_600)
    assert flat == 10 * S


def test_the_steady_flow_is_the_median_second_claimed_ahead_so_a_herd_does_not_count() -> None:
    flow = SteadyFlow(past=50)
    assert flow.per_second(1_000, 9) == 0
    # One claim pass: the next ten seconds' runs, 1,500 each, and a herd's second among them.
    flow.add(dict.fromkeys(range(1_001, 1_011), 1_500))
    flow.add({1_005: 50_000})
    assert flow.per_second(1_000, 9) == 1_500
    # Runs claimed further ahead for a herd do not count until they come that close.
    flow.add({1_040: 60_000})
    assert flow.per_second(1_000, 9) == 1_500
    # Seconds not yet claimed count as none.
    assert flow.per_second(1_006, 9) == 0
    assert flow.per_second(1_000, 0) == 0


def test_a_herd_due_over_several_seconds_ahead_is_no_flow_once_the_past_is_seen() -> None:
    flow = SteadyFlow(past=50)
    flow.add(dict.fromkeys(range(1_000, 1_060), 800))  # a minute of 800 a second
    # 9,200 a second due over 5 of the next 9 seconds: the seconds ahead alone say 9,200.
    flow.add(dict.fromkeys(range(1_061, 1_066), 9_200))
    assert flow.per_second(1_060, 9) == 800
    # A scheduler that has not yet seen its past takes the seconds ahead alone.
    young = SteadyFlow(past=50)
    young.add(dict.fromkeys(range(1_051, 1_060), 800))
    young.add(dict.fromkeys(range(1_061, 1_066), 9_200))
    assert young.per_second(1_060, 9) == 9_200
