"""An attempt from start to report: the ``executor`` holds a dispatch until its time, starts its
attempt, runs its target under the lease the ``heartbeats`` renew, and reports how it ended,
through the ``scheduler_client`` (the worker's calls to the schedulers' WorkerService, batched)
and the ``server_clock`` (the database's time as this worker sees it). Imports ``targets`` and
``herd``; nothing in the worker but ``__main__`` imports it."""
