"""Dead-letter notifications: the ``consumer`` of ``duetime.deadletter``, which reads each event
once into an ``event.DeadLetter`` (``wire``), and the ``notifier`` that posts it to the teams'
webhooks. Imports ``intake`` (offsets) and ``targets.http``."""
