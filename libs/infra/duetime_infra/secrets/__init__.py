"""Secrets at rest: the keyring (``keyring``), sealing and opening values (``sealing``), and
re-sealing every stored secret under the current key (``rotate``); the operator's commands
are ``duetime-ops secrets``."""
