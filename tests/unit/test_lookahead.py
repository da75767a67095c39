from datetime import timedelta

from duetime_core.lookahead import herd_lookahead

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
