"""An attempt from start to report, in three parts the ``executor`` wires: the ``starter`` holds
a dispatch until its time and asks for its attempt (``starts``), the ``runner`` calls its target
under the lease the ``heartbeats`` renew, the ``reporter`` says how it ended. An attempt is one
``lifecycle.Attempt``; when its call may begin, must be given up, or goes unreported is the
``lease`` rule. The ``scheduler_client`` batches the worker's calls to the schedulers'
WorkerService; the ``server_clock`` is the database's time as this worker sees it. Imports
``targets`` and ``herd``; nothing in the worker but ``__main__`` imports it."""
