"""aiokafka's own logging, turned down for services that report Kafka trouble themselves."""

from __future__ import annotations

import logging
import time

from aiokafka.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
)

# How long after start-up a consumer group's coordinator may still be getting ready: Kafka
# elects it and loads the group's offsets when the group is first used, or after the broker
# started (the offsets topic is created then, on a new broker).
STARTUP_GRACE_SECONDS = 60.0

# What a coordinator lookup answers meanwhile; aiokafka asks again until it is ready.
_NOT_READY = (CoordinatorNotAvailableError, CoordinatorLoadInProgressError, NotCoordinatorError)
_LOOKUP_FAILED = "Group Coordinator Request failed: %s"


def _not_a_reconnect(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(("Unable connect to", "Unable to update metadata"))


class _StartUpLookups(logging.Filter):
    """Demotes to DEBUG a coordinator lookup answered "not ready" during the start-up grace;
    one failing for longer, or failing otherwise, keeps its level."""

    def __init__(self, grace: float) -> None:
        super().__init__()
        self._until = time.monotonic() + grace

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _LOOKUP_FAILED or time.monotonic() >= self._until:
            return True
        if not (isinstance(record.args, tuple) and isinstance(record.args[0], _NOT_READY)):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def quiet_aiokafka(startup_grace: float = STARTUP_GRACE_SECONDS) -> None:
    """While a broker is away, aiokafka logs every retried request (WARNING) and every failed
    connection or metadata attempt (ERROR, about ten a second); the services report each failed
    batch or fetch themselves. A consumer group's coordinator that is not ready yet in the first
    ``startup_grace`` seconds is expected (DEBUG). Other aiokafka errors still show."""
    aiokafka_log = logging.getLogger("aiokafka")
    aiokafka_log.setLevel(logging.ERROR)
    # A logger's filters see only the records logged on it, not its children's.
    aiokafka_log.addFilter(_not_a_reconnect)
    logging.getLogger("aiokafka.consumer.group_coordinator").addFilter(
        _StartUpLookups(startup_grace)
    )
