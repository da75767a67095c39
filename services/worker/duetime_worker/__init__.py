"""The worker, in rooms: it takes run dispatches (``intake``), starts, runs and reports each
attempt through the scheduler (``attempt``), calls HTTP targets or launches containers and
processes (``targets``), delivers dead-letter notifications (``notify``), and shapes its load
in a herd (``herd``). ``config`` reads the settings and ``__main__`` wires the rooms together.
Imports between rooms go one way (the map in ``docs/architecture.md``; import-linter checks it)."""

import os

# grpcio's fork support re-arms its pollers in a forked child, which can crash the child
# before it execs (grpc/grpc#43055: "Check failure" from podman commands here). The worker
# forks for every podman command and local process and never uses gRPC in a child, so it is
# off unless the environment says otherwise; set before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from duetime_infra.logs import quiet_grpc_core

quiet_grpc_core()  # before anything imports grpc
