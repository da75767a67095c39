"""Secrets at rest: the keyring (``keyring``), sealing and opening values (``sealing``), and
the operator's command (``python -m duetime_infra.secrets``, ``rotate``)."""
