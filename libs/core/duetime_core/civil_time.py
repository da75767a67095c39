"""Where one-offs used to resolve their local time; the rule is ``schedule.dst.resolve_local``,
the same module cron uses. Kept only for the codec's import until it names the new home."""

from duetime_core.schedule.dst import resolve_local

__all__ = ["resolve_local"]
