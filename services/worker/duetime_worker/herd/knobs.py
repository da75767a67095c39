"""Every knob that shapes how the worker meets a herd, each with what it trades. The modules
that use them say what they do; the settings (``config``) take their defaults from here. The
garbage collector's threshold is every service's, so it lives with their start-up
(``GC_FIRST_GENERATION`` in ``duetime_infra.startup``); the pause at a herd's instant is here.
"""

from __future__ import annotations

# --- places: how many runs hold what at once (defaults of the settings) ---------------------

# Execution slots (DUETIME_WORKER_CONCURRENCY): a herd started on time on one worker, against
# memory and sockets (an HTTP call in flight is a coroutine and a connection).
DEFAULT_CONCURRENCY = 2000
# Starts asked for at once (DUETIME_WORKER_START_CONCURRENCY): a few start batches in flight,
# against how long a small team's run waits behind another team's flood.
DEFAULT_START_CONCURRENCY = 256
# Messages taken and not yet answered (DUETIME_WORKER_MAX_PENDING; the early starts default to
# it): a worker's share of a large herd held and started ahead, against memory.
DEFAULT_MAX_PENDING = 25_000
# Local processes or containers at once: throughput of container targets against the machine.
DEFAULT_LAUNCHER_CONCURRENCY = 16
# HTTP connections to one host at once (DUETIME_HTTP_CONNECTIONS_PER_HOST; 0: the total only):
# reused keep-alive connections, cheaper and sooner, against calls waiting for one.
DEFAULT_CONNECTIONS_PER_HOST = 256

# --- early starts: a herd's starts before its instant ----------------------------------------

# How long before a run's time its attempt is asked for (the scheduler allows 30 s): starts
# spread over the stretch before a herd's instant, against attempts held (and leased) longer.
EARLY_AHEAD = 20.0
# An attempt started ahead beats this long before its call, and calls once answered (a job
# paused meanwhile is cancelled): time for a herd's beats to be answered (they renew every
# attempt's short early lease) before its instant, inside the scheduler's 4 s window
# (``duetime_pre_call_from``) with room for the error of the server clock's estimate.
PRE_CALL_BEAT = 2.5

# --- held back while the calls due go out ----------------------------------------------------

# Longest a full heartbeat waits while the worker is busy with a herd: CPU left to the calls,
# against leases renewed later (the beat schedule never lets one come within two intervals).
FULL_BEAT_HOLD = 5.0
# A call about to begin gets a beat this long after the last: a herd's callers share a beat,
# against each call waiting up to this long for it.
URGENT_SPACING = 0.1
# Longest the success of an attempt started ahead waits for the call backlog to clear: reports
# sent together in fuller batches after the calls, against runs counted running for longer.
REPORT_HOLD = 15.0
# And at most this share of the lease the attempt has left: the hold never risks its lease.
REPORT_HOLD_LEASE_SHARE = 0.25
# Longest the garbage collector is paused while a herd's calls go out: no collection stalls a
# call due, against garbage in cycles (and memory) waiting for the next collection.
PAUSE_LONGEST = 5.0

# --- batches of calls to the scheduler -------------------------------------------------------

# Entries in a report batch (and the largest answer the channel takes): fewer transactions a
# run for the scheduler and PostgreSQL, against larger messages.
MAX_BATCH = 500
# Entries in a start batch: answered sooner (a batch is answered when all of it started), so
# calls overlap the scheduler's later starts, against more transactions.
START_BATCH = 100
# How long an open batch waits for company: fuller batches, against latency a call.
LINGER = 0.005
# A report waits longer for company: nothing waits on its answer, and fewer transactions a run
# leave more of the machine to the calls still to begin.
REPORT_LINGER = 0.05
# A start asked ahead waits up to an eighth of its time ahead, at most this long: a steady few
# hundred runs a second go in batches, not a transaction each. Not once every start permit is
# held: no company can come, and the permits would wait out the linger (``starts._slack``).
EARLY_START_LINGER = 0.5
# Batches in flight at once (each kind): the scheduler's batches overlapped, against its load.
MAX_IN_FLIGHT = 4
