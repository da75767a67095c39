"""Calling a run's target: over HTTP (``http``) or by launching a container or process
(``container``), each ending in an ``outcome``, each telling the target its
``target_deadline``. The two kinds do not import each other; both import ``herd`` (the slots
they wait in)."""
