"""The keyring the tests' services seal secrets with: the stack's (``DUETIME_SECRET_KEYS_FILE``
from ``scripts/stack env``) or, when none is set, a throwaway one made for the test session
(conftest puts it in the environment, so service processes get it too)."""

from __future__ import annotations

import os

from duetime_infra.config import EnvReader
from duetime_infra.secrets.keyring import (
    KEYS_FILE_VARIABLE,
    KEYS_VARIABLE,
    Keyring,
    new_keyring,
    read_keyring,
)
from duetime_infra.secrets.sealing import SecretBox


def ensure_test_keyring() -> None:
    """A throwaway keyring in this process's environment, unless one is given already."""
    if not os.environ.get(KEYS_VARIABLE) and not os.environ.get(KEYS_FILE_VARIABLE):
        os.environ[KEYS_VARIABLE] = new_keyring("test-1").to_json()


def test_keyring() -> Keyring:
    env = EnvReader()
    keyring = read_keyring(env)
    env.finish()
    return keyring


def secret_box() -> SecretBox:
    return SecretBox(test_keyring())
