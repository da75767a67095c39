"""`duetime-ops groups to-end GROUP [TOPIC ...]` (default: the dispatch topics): commits a
consumer group's offsets at its topics' current ends (duetime_infra.kafka.groups).

A new consumer group reads from the earliest offset (workers must not miss a dispatch), which
on a broker shared with tests or an earlier deployment means working through every message ever
kept. A group placed at the ends first sees only what is published from then on: the demo's
workers, a group created to replace one whose backlog was deliberately abandoned.

A group with live members is refused (Kafka takes offsets from outside a group only while it is
empty): moving a running fleet past dispatches it has not started would leave those runs to the
reconciler, late.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from duetime_infra.config import EnvReader
from duetime_infra.kafka.aiokafka_logs import quiet_aiokafka
from duetime_infra.kafka.groups import GroupInUse, group_to_end
from duetime_infra.kafka.topics import DEFAULT_KAFKA_BOOTSTRAP, DISPATCH_TOPICS
from duetime_infra.tls import Link, read_tls


def register(areas: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = areas.add_parser("groups", help="Kafka consumer groups")
    parser.set_defaults(run=_run)
    commands = parser.add_subparsers(dest="command", required=True)
    to_end = commands.add_parser("to-end", help="commit GROUP's offsets at the topics' ends")
    to_end.add_argument("group")
    to_end.add_argument("topics", nargs="*", default=sorted(DISPATCH_TOPICS.values()))


def _run(args: argparse.Namespace) -> None:
    quiet_aiokafka()  # a new group's coordinator, not ready yet, is not worth a line here
    bootstrap = os.environ.get("DUETIME_KAFKA_BOOTSTRAP", DEFAULT_KAFKA_BOOTSTRAP)
    env = EnvReader()
    tls = read_tls(env, serves=False, connects=[Link.KAFKA]).client(Link.KAFKA)
    env.finish()
    try:
        count = asyncio.run(group_to_end(bootstrap, args.group, args.topics, tls))
    except GroupInUse as error:
        print(f"groups: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"group {args.group}: {count} partitions at their ends")
