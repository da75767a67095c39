"""Every service's garbage-collector settings: larger young generation, start-up objects frozen."""

from __future__ import annotations

import gc

from duetime_infra.startup import GC_FIRST_GENERATION, tune_collector


def test_start_up_objects_are_frozen_and_young_collections_are_rarer() -> None:
    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == (GC_FIRST_GENERATION, before[1], before[2])
        assert gc.get_freeze_count() > 10_000  # the loaded modules' objects
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
