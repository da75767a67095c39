"""Deterministic jitter: the same run always gets the same offset, on every machine."""

from __future__ import annotations

import hashlib
from datetime import timedelta

_MICROSECOND = timedelta(microseconds=1)
# Separates these digests from any other blake2b use of the same run key.
_PERSONALIZATION = b"duetime-jitter"


def jitter_offset(run_key: str, window: timedelta) -> timedelta:
    """An offset in ``[0, window)`` derived from the run key's canonical string.

    blake2b, not ``hash()``: Python salts ``hash`` per process, and every scheduler must
    agree on a run's effective time. A 64-bit digest reduced modulo the window in
    microseconds favours no offset by more than one part in 2**24 for windows up to a week.
    """
    if window < timedelta(0):
        raise ValueError("jitter window must not be negative")
    span = window // _MICROSECOND
    if span == 0:
        return timedelta(0)
    digest = hashlib.blake2b(
        run_key.encode("utf-8"), digest_size=8, person=_PERSONALIZATION
    ).digest()
    return (int.from_bytes(digest, "big") % span) * _MICROSECOND
