"""Which images container targets may run: the operators' allow-list of image name patterns.

A reference must name its registry (``registry.example.com/team/task:1``, ``localhost/x:1``):
a short name (``busybox``) would be resolved by the runtime's search list, so the registry it
comes from would not be the one the pattern was written for. Patterns are ``fnmatch`` style
over the whole reference, ``*`` matching across ``/``, ``:`` and ``@``: ``registry.example.com/
team-a/*`` allows every repository, tag and digest under ``team-a``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

# The characters of a reference ([registry[:port]/]path[:tag][@digest]); the runtime checks the
# rest of its grammar.
_REFERENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+\-\[\]]*")


def registry_of(image: str) -> str | None:
    """The registry host a reference names, or None for a short name: the first path component
    is a registry when it has a dot or a port, or is ``localhost`` (Docker's rule)."""
    first, slash, _ = image.partition("/")
    if not slash:
        return None
    if "." in first or ":" in first or first == "localhost":
        return first
    return None


@dataclass(frozen=True)
class ImagePolicy:
    patterns: tuple[str, ...]

    @classmethod
    def parse(cls, items: Sequence[str]) -> ImagePolicy:
        bad = [p for p in items if any(c.isspace() or not c.isprintable() for c in p)]
        if bad:
            raise ValueError(f"patterns must not contain whitespace: {bad!r}")
        return cls(tuple(items))

    def refusal(self, image: str) -> str | None:
        """Why ``image`` may not run here, or None when it may."""
        shown = repr(image[:200])
        if not _REFERENCE.fullmatch(image):
            return f"image {shown} is not a valid image reference"
        if registry_of(image) is None:
            return (
                f"image {shown} must name its registry "
                "(e.g. registry.example.com/team/task:1): short names are not resolved"
            )
        if not any(fnmatch.fnmatchcase(image, pattern) for pattern in self.patterns):
            return f"image {shown} is not permitted on this worker"
        return None
