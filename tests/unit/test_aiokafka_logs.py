"""aiokafka's start-up noise: a consumer group's coordinator not ready yet is DEBUG during the
start-up grace; any other lookup failure, or one past the grace, keeps its ERROR."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator

import pytest
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.errors import (
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    KafkaConnectionError,
)

from duetime_infra.kafka.aiokafka_logs import quiet_aiokafka

LOGGER = "aiokafka.consumer.group_coordinator"
# What aiokafka logs when a lookup fails (GroupCoordinator.ensure_coordinator_known).
LOOKUP_FAILED = "Group Coordinator Request failed: %s"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def seen() -> Iterator[list[logging.LogRecord]]:
    """What reaches a handler on the root logger; aiokafka's loggers restored afterwards."""
    loggers = [logging.getLogger("aiokafka"), logging.getLogger(LOGGER)]
    saved = [(logger.level, list(logger.filters)) for logger in loggers]
    handler = Records()
    logging.getLogger().addHandler(handler)
    try:
        yield handler.records
    finally:
        logging.getLogger().removeHandler(handler)
        for logger, (level, filters) in zip(loggers, saved, strict=True):
            logger.setLevel(level)
            logger.filters[:] = filters


def test_the_message_is_aiokafkas() -> None:
    source = inspect.getsource(GroupCoordinator.ensure_coordinator_known)
    assert f'log.error("{LOOKUP_FAILED}", err)' in source


def test_a_coordinator_not_ready_at_start_up_is_debug(seen: list[logging.LogRecord]) -> None:
    quiet_aiokafka()
    logging.getLogger(LOGGER).error(LOOKUP_FAILED, CoordinatorNotAvailableError())
    assert seen == []

    logging.getLogger("aiokafka").setLevel(logging.DEBUG)
    logging.getLogger(LOGGER).error(LOOKUP_FAILED, CoordinatorNotAvailableError())
    assert [r.levelname for r in seen] == ["DEBUG"]


def test_other_lookup_failures_stay_errors(seen: list[logging.LogRecord]) -> None:
    quiet_aiokafka()
    logging.getLogger(LOGGER).error(LOOKUP_FAILED, GroupAuthorizationFailedError())
    logging.getLogger(LOGGER).error(LOOKUP_FAILED, KafkaConnectionError())
    logging.getLogger(LOGGER).error("Unexpected error in coordinator routine")
    assert [r.levelname for r in seen] == ["ERROR"] * 3


def test_a_coordinator_not_ready_past_the_grace_is_an_error(
    seen: list[logging.LogRecord],
) -> None:
    quiet_aiokafka(startup_grace=0)
    logging.getLogger(LOGGER).error(LOOKUP_FAILED, CoordinatorNotAvailableError())
    assert [(r.levelname, r.getMessage()) for r in seen] == [
        ("ERROR", LOOKUP_FAILED % CoordinatorNotAvailableError())
    ]
