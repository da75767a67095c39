"""Every knob that shapes how the worker meets a herd, each with what it trades. The modules
that use them say what they do; the settings (``config``) take their defaults from here."""

from __future__ import annotations

# Longest a full heartbeat waits while the worker is busy with a herd: CPU left to the calls,
# against leases renewed later (the beat schedule never lets one come within two intervals).
FULL_BEAT_HOLD = 5.0
# Longest the success of an attempt started ahead waits for the call backlog to clear: reports
# sent together in fuller batches after the calls, against runs counted running for longer.
REPORT_HOLD = 15.0
# And at most this share of the lease the attempt has left: the hold never risks its lease.
REPORT_HOLD_LEASE_SHARE = 0.25
