"""bench/herd --profile: profiles a service process from start to exit with cProfile.

Put on PYTHONPATH (only by the bench) with ``DUETIME_BENCH_PROFILE=<file>.prof``; the
statistics go to ``<file>-<pid>.prof`` (two workers share one setting) when the process exits
(a service stops cleanly on SIGTERM). cProfile sees only the main thread, which is where a
service's event loop runs.
"""

from __future__ import annotations

import atexit
import cProfile
import os

_setting = os.environ.get("DUETIME_BENCH_PROFILE")
if _setting:
    _path = f"{_setting.removesuffix('.prof')}-{os.getpid()}.prof"
    _profile = cProfile.Profile()

    def _dump() -> None:
        _profile.disable()
        _profile.dump_stats(_path)

    atexit.register(_dump)
    _profile.enable()
