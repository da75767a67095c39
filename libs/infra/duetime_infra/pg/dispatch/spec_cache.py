"""Decoded job definitions by (job id, version), shared by the claim and the attempt paths."""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict

from duetime_core.jobspec import JobSpec
from duetime_infra.codec.spec_json import spec_from_json


class SpecCache:
    """Decoded job definitions by (job id, version), most recently used kept.

    A recurring job is claimed every period with the same version, so its stored document need
    not be parsed and validated each time; versions are immutable, so an entry never goes stale.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self._capacity = capacity
        self._specs: OrderedDict[tuple[uuid.UUID, int], JobSpec] = OrderedDict()

    def get(self, job_id: uuid.UUID, version: int, document: str) -> JobSpec:
        key = (job_id, version)
        spec = self._specs.get(key)
        if spec is not None:
            self._specs.move_to_end(key)
            return spec
        spec = spec_from_json(json.loads(document))
        self._specs[key] = spec
        if len(self._specs) > self._capacity:
            self._specs.popitem(last=False)
        return spec
