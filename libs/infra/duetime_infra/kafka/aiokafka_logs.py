"""aiokafka's own logging, turned down for services that report Kafka trouble themselves."""

from __future__ import annotations

import logging


def _not_a_reconnect(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(("Unable connect to", "Unable to update metadata"))


def quiet_aiokafka() -> None:
    """While a broker is away, aiokafka logs every retried request (WARNING) and every failed
    connection or metadata attempt (ERROR, about ten a second); the services report each failed
    batch or fetch themselves. Other aiokafka errors still show."""
    aiokafka_log = logging.getLogger("aiokafka")
    aiokafka_log.setLevel(logging.ERROR)
    aiokafka_log.addFilter(_not_a_reconnect)
