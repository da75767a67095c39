"""`python -m duetime_scheduler.archive`: one archiving pass (``duetime_infra.archive``).

The scheduler that owns partition 0 runs it as a child process about hourly
(``maintenance.ArchivePasses``): a week of ten million runs takes minutes and gigabytes, which
must not share the claim loop's event loop, GIL or memory. It can also be run by hand with the
scheduler's environment. Prints the pass's result as one line, ``DUETIME_ARCHIVE_RESULT=<json>``;
exits 1 if a week failed, 2 without an archive configured.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from duetime_infra.archive.archiver import archive_pass
from duetime_infra.logs import configure_logging
from duetime_infra.pg.pool import connect
from duetime_infra.tls import Link
from duetime_scheduler.config import Settings
from duetime_scheduler.maintenance import RESULT_MARKER

log = logging.getLogger("duetime_scheduler.archive")


async def run(settings: Settings) -> int:
    if settings.archive is None:
        log.error("no archive configured (DUETIME_ARCHIVE_BUCKET)", extra={"action": "archive"})
        return 2
    conn = await connect(settings.pg_dsn, settings.tls.context(Link.POSTGRES))
    try:
        # The pass's own statements (a week's export, a drop) have their own limits.
        await conn.execute("SET statement_timeout = 0")
        result = await archive_pass(conn, settings.archive)
    finally:
        await conn.close()
    print(RESULT_MARKER + result.to_json(), flush=True)
    return 1 if result.failures else 0


def main() -> None:
    configure_logging()
    # Below the scheduler it runs beside: its work is hours from due, the claim loop's is not.
    os.nice(10)
    sys.exit(asyncio.run(run(Settings.from_env())))


if __name__ == "__main__":
    main()
