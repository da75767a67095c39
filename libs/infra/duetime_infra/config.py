"""Reading settings from the environment: every bad variable reported at once.

Each service builds its frozen ``Settings`` once in ``main()`` with an ``EnvReader`` and passes
it down; no other module reads ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta

DEFAULT_PG_DSN = "postgresql://duetime:duetime@127.0.0.1:55432/duetime"


class ConfigError(Exception):
    """One or more environment variables are invalid; the message lists them all."""


class EnvReader:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._env = os.environ if environ is None else environ
        self._errors: list[str] = []

    def text(self, name: str, default: str) -> str:
        return self._env.get(name, default)

    def integer(self, name: str, default: int, *, low: int, high: int) -> int:
        raw = self._env.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            self._errors.append(f"{name}={raw!r}: not an integer")
            return default
        if not low <= value <= high:
            self._errors.append(f"{name}={value}: must be between {low} and {high}")
        return value

    def seconds(self, name: str, default: float, *, low: float, high: float) -> timedelta:
        raw = self._env.get(name)
        if raw is None:
            return timedelta(seconds=default)
        try:
            value = float(raw)
        except ValueError:
            self._errors.append(f"{name}={raw!r}: not a number of seconds")
            return timedelta(seconds=default)
        if not low <= value <= high:
            self._errors.append(f"{name}={value}: must be between {low} and {high} seconds")
        return timedelta(seconds=value)

    def address(self, name: str, default: str) -> str:
        raw = self._env.get(name, default)
        if not _is_address(raw):
            self._errors.append(f"{name}={raw!r}: expected host:port")
        return raw

    def addresses(self, name: str, default: str) -> tuple[str, ...]:
        """A comma-separated list of host:port addresses, at least one."""
        raw = self._env.get(name, default)
        items = tuple(item.strip() for item in raw.split(",") if item.strip())
        if not items or not all(map(_is_address, items)):
            self._errors.append(f"{name}={raw!r}: expected host:port[,host:port...]")
        return items

    def optional_address(self, name: str) -> str:
        """A host:port that may be left out: unset, empty or ``off`` is "" (disabled)."""
        raw = self._env.get(name, "").strip()
        if raw.lower() in ("", "off"):
            return ""
        return self.address(name, raw)

    def problem(self, message: str) -> None:
        """Records a bad setting found by a check of the caller's own (reported with the rest)."""
        self._errors.append(message)

    def finish(self) -> None:
        if self._errors:
            raise ConfigError("invalid configuration:\n  " + "\n  ".join(self._errors))


def env_dsn(environ: Mapping[str, str] | None = None) -> str:
    return (os.environ if environ is None else environ).get("DUETIME_PG_DSN", DEFAULT_PG_DSN)


def _is_address(text: str) -> bool:
    host, sep, port = text.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 <= int(port) <= 65535)
