"""Example counts for property tests that follow the loaded hypothesis profile."""

from __future__ import annotations

from hypothesis import settings

# The default profile's max_examples, which the counts in the tests are written against.
FULL = 100


def examples(n: int) -> int:
    """``n`` under the default profile; scaled down as the loaded profile's default is."""
    return max(1, n * settings().max_examples // FULL)
