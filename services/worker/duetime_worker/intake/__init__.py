"""Runs coming in: the ``consumer`` of the dispatch topics and the Kafka ``offsets`` it commits
only once each message is done. Imports ``herd`` (the priority weights); ``notify`` shares its
offset tracking."""
