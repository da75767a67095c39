"""`python -m duetime_worker`: the worker service, which consumes dispatched runs and
executes their targets under heartbeated leases.

Only the entry point exists so far: it checks the database schema like every service, then says
plainly that the service's work is not built yet rather than pretending to run.
"""

from __future__ import annotations

import sys

from duetime_infra.config import EnvReader, env_dsn
from duetime_infra.startup import require_schema, run_service


async def _start() -> None:
    EnvReader().finish()
    version = await require_schema(env_dsn())
    print(f"duetime_worker: schema version {version} supported; not implemented yet")
    sys.exit(2)


def main() -> None:
    run_service("duetime_worker", _start)


if __name__ == "__main__":
    main()
