"""Runs coming in: the ``consumer`` of the dispatch topics, which reads each message once into a
``dispatch.Dispatch`` (``wire``), and the Kafka ``offsets`` it commits only once each message
is done. Imports ``herd`` (the priority weights, a run's turn); ``notify`` shares its offset
tracking."""
