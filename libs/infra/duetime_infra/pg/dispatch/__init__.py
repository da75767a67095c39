"""Dispatch: claiming due runs, the outbox the relay drains, admission by quota, redispatch."""
