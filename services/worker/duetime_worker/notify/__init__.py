"""Dead-letter notifications: the ``consumer`` of ``duetime.deadletter`` and the ``notifier``
that posts to the teams' webhooks. Imports ``intake`` (offsets) and ``targets.http``."""
